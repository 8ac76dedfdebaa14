package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/testutil"
)

// TestSbatchRequeueResumes: trainer.Fit as 2 tasks of an sbatch script (`sbatch --requeue`,
// `srun` without a PMI: the tasks meet from Slurm's variables) on a real Slurm cluster of this
// machine. After update 3, the job is requeued as a preemption does (scontrol requeue: its
// tasks are killed and the script starts again, SLURM_RESTART_COUNT=1); the second run resumes
// from the run folder's last checkpoint (update 2) and ends with the updates and the weights of
// the uninterrupted one-process run.
func TestSbatchRequeueResumes(t *testing.T) {
	testutil.Long(t, "starts a Slurm cluster and trains twice (tier 1: trainer TestRestartAfterKillEqualsUninterrupted, internal/launch TestEnvRendezvousMPI)")
	env := fitEnv(t)
	cluster := testutil.NeedSlurm(t)
	want := fitBaseline(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "fit.sbatch")
	// The restart count picks FIT_PAUSE's entry: the first run (0) pauses after update 3.
	body := fmt.Sprintf(`#!/bin/bash
#SBATCH --ntasks=2 --requeue --open-mode=append --output=%s/slurm-%%j.out
export %s=${%s:-0}
echo "run $%s of job $SLURM_JOB_ID on $SLURM_JOB_NODELIST"
srun %s %s %s
`, dir, envvar.TorchelasticRestartCount.Name, envvar.SlurmRestartCount.Name, envvar.TorchelasticRestartCount.Name,
		self, fitRankCommand, dir)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	jobEnv := append(append(os.Environ(), env...), asGoaccel+"=1", fitPauseVar+"=:0:3")
	out, err := cluster.Command(jobEnv, "sbatch", "--parsable", script).CombinedOutput()
	if err != nil {
		t.Fatalf("sbatch: %v\n%s", err, out)
	}
	job := strings.TrimSpace(string(out))
	logs := func() string { b, _ := os.ReadFile(filepath.Join(dir, "slurm-"+job+".out")); return string(b) }
	state := func() string {
		out, _ := cluster.Command(nil, "scontrol", "show", "job", job).CombinedOutput()
		for _, f := range strings.Fields(string(out)) {
			if v, ok := strings.CutPrefix(f, "JobState="); ok {
				return v
			}
		}
		return "?"
	}
	waitFor := func(what string, d time.Duration, done func() bool) {
		t.Helper()
		for deadline := time.Now().Add(d); !done(); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				show, _ := cluster.Command(nil, "scontrol", "show", "job", job).CombinedOutput()
				ctld, _ := os.ReadFile(filepath.Join(cluster.Dir, "log", "slurmctld.log"))
				_ = cluster.Command(nil, "scancel", job).Run()
				t.Fatalf("%s: not within %s (job %s is %s)\n%s\n--- scontrol show job %s:\n%s\n--- slurmctld.log:\n%s", what, d,
					job, state(), logs(), job, show, tailLines(string(ctld), 30))
			}
		}
	}
	paused := func() bool {
		for r := range 2 {
			if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("paused__0_3_%d", r))); err != nil {
				return false
			}
		}
		return true
	}
	waitFor("both tasks at update 3", 3*time.Minute, paused)
	if out, err := cluster.Command(nil, "scontrol", "requeue", job).CombinedOutput(); err != nil {
		t.Fatalf("scontrol requeue %s: %v\n%s", job, err, out)
	}
	requeued := time.Now()
	// A requeued job waits for Slurm's credential lifetime (120 s) before it may start again:
	// the test lets it start 2 s after it is pending. (At once fails now and then: slurmd refuses
	// a credential made in the second its job's old one was revoked, "Job credential revoked",
	// and the job ends failed.) The second run has begun when its script says so.
	var pending time.Time
	updated := false
	waitFor("the requeued job to start", time.Minute, func() bool {
		if pending.IsZero() && state() == "PENDING" {
			pending = time.Now()
		}
		if !updated && !pending.IsZero() && time.Since(pending) > 2*time.Second {
			updated = cluster.Command(nil, "scontrol", "update", "JobId="+job, "StartTime=now").Run() == nil
		}
		return strings.Contains(logs(), "run 1 of job "+job)
	})
	waitFor("the requeued job to end", 3*time.Minute, func() bool {
		s := state()
		return s == "COMPLETED" || s == "FAILED" || s == "CANCELLED"
	})
	if s := state(); s != "COMPLETED" {
		t.Fatalf("job %s ended %s\n%s", job, s, logs())
	}
	got := readFitRun(t, dir)
	compareFitRuns(t, got, want)
	t.Logf("sbatch --requeue, 2 tasks, requeued after update 3: resumed and completed %s after the requeue; losses by update: %v "+
		"(uninterrupted one-process run: %v)\n%s", time.Since(requeued).Round(time.Millisecond), got.loss, want.loss, logs())
}

// tailLines is the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
