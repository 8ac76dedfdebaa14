package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/testutil"
)

// TestQuickstartSrun: on a real Slurm cluster of this machine (scripts/slurm_cluster.sh,
// MpiDefault none), `srun -n 2 ./quickstart` (no PMI: the tasks meet from Slurm's variables)
// and `srun --mpi=pmi2 -n 2 ./quickstart` (Slurm's PMI-2) each run one job of 2 processes
// whose losses and accuracies equal the one-process run's.
func TestQuickstartSrun(t *testing.T) {
	testutil.Long(t, "starts a Slurm cluster and runs the quickstart 3 times (tier 1: internal/launch TestEnvRendezvousMPI, TestExpandHostList, TestEnvPlace)")
	testutil.NeedMPI(t)
	cluster := testutil.NeedSlurm(t)
	bin := buildQuickstart(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	want := oneProcess(t, ctx, bin)
	for _, args := range [][]string{{"-n", "2"}, {"--mpi=pmi2", "-n", "2"}} {
		c := exec.CommandContext(ctx, "srun", append(args, bin)...)
		c.Env = append(bareEnv(envvar.Devices.KV("1"), envvar.Timeout.KV("2m")), cluster.Env()...)
		c.Dir = t.TempDir()
		start := time.Now()
		out, err := c.CombinedOutput()
		took := time.Since(start)
		name := "srun " + strings.Join(args, " ") + " quickstart"
		if err != nil {
			t.Errorf("%s: %v\n%s", name, err, out)
			continue
		}
		got := epochLine.FindAllString(string(out), -1)
		if strings.Join(got, "\n") != strings.Join(want, "\n") || !strings.Contains(string(out), "processes 2") {
			t.Errorf("%s printed\n%s\nwant, as one process:\n%s\n--- its output:\n%s", name, strings.Join(got, "\n"),
				strings.Join(want, "\n"), out)
		}
		t.Logf("%s (%s): losses %s; one process: %s\n%s", name, took.Round(time.Millisecond), lossesOf(got), lossesOf(want), out)
	}
}
