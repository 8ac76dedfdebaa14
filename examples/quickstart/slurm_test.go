package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// TestQuickstartSbatchLaunchTwoNodes: on a real Slurm cluster of two nodes on this machine (n1
// and n2, each a network namespace with its own slurmd: scripts/slurm_cluster.sh start DIR 2),
// an sbatch script of `--nodes 2 --ntasks-per-node 1` runs `srun goaccel launch
// --nproc_per_node 2 quickstart` once per node; each launcher takes --nnodes, --node_rank and
// the master (n1, resolved on the nodes) from Slurm's variables, and the job of 4 ranks prints
// the losses and accuracies of the one-process run of 4 devices.
func TestQuickstartSbatchLaunchTwoNodes(t *testing.T) {
	testutil.Long(t, "starts a Slurm cluster of 2 nodes and runs the quickstart twice (tier 1: internal/launch TestPETVariables, TestTwoNodesFormOneJob, TestPodsLaunchPET)")
	testutil.NeedMPI(t)
	cluster := testutil.NeedSlurmNodes(t, 2)
	dir := t.TempDir()
	bin := buildQuickstart(t, dir)
	goaccel := buildGoaccel(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	want := oneProcessOn(t, ctx, bin, 4)
	script := filepath.Join(dir, "launch.sbatch")
	body := fmt.Sprintf(`#!/bin/bash
#SBATCH --nodes=2 --ntasks-per-node=1 --output=%s/slurm-%%j.out
export %s=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "job $SLURM_JOB_ID on $SLURM_JOB_NODELIST"
srun %s launch --nproc_per_node 2 %s
`, dir, envvar.JobSecret.Name, goaccel, bin)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	// Each node's 2 ranks share its 2 XLA CPU devices: 4 devices in all, as the one process has.
	c := cluster.Command(bareEnv(envvar.Devices.KV("2"), envvar.Timeout.KV("2m")), "sbatch", "--wait", "--parsable", script)
	c.Dir = dir
	start := time.Now()
	out, err := c.CombinedOutput()
	took := time.Since(start)
	job := strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	logs, _ := os.ReadFile(filepath.Join(dir, "slurm-"+job+".out"))
	if err != nil {
		t.Fatalf("sbatch --wait: %v\n%s\n--- the job's output:\n%s", err, out, logs)
	}
	got := epochLine.FindAllString(string(logs), -1)
	if strings.Join(got, "\n") != strings.Join(want, "\n") || !strings.Contains(string(logs), "processes 4") ||
		!strings.Contains(string(logs), "on n[1-2]") {
		t.Errorf("sbatch --nodes 2, srun goaccel launch --nproc_per_node 2 printed\n%s\nwant, as one process of 4 devices:\n%s\n"+
			"--- the job's output:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), logs)
	}
	t.Logf("sbatch --nodes 2 --ntasks-per-node 1, srun goaccel launch --nproc_per_node 2 quickstart (%s, sbatch --wait to its end): "+
		"losses %s; one process of 4 devices: %s\n%s", took.Round(time.Millisecond), lossesOf(got), lossesOf(want), logs)
}
