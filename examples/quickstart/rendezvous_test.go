package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/testutil"
)

// launcherPrefixes are the variables of launchers (torchrun's, MPI's, Slurm's, torchrun's
// PET_*): a test that starts processes as one launcher would removes the others'.
var launcherPrefixes = []string{"RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "LOCAL_WORLD_SIZE=", "MASTER_ADDR=", "MASTER_PORT=",
	"GROUP_RANK=", "NODE_RANK=", "PMI", "SLURM_", "OMPI_", "PMIX_", "PET_", "GOACCEL_JOB_SECRET=", "TORCHELASTIC_"}

// bareEnv is this process's environment without any launcher's variables, with extra added.
func bareEnv(extra ...string) []string {
	var env []string
	for _, kv := range envvar.Environ() {
		keep := true
		for _, p := range launcherPrefixes {
			if strings.HasPrefix(kv, p) {
				keep = false
			}
		}
		if keep {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// buildQuickstart builds this example into dir.
func buildQuickstart(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "quickstart")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// buildGoaccel builds the goaccel command into dir.
func buildGoaccel(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "goaccel")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/goaccel").CombinedOutput(); err != nil {
		t.Fatalf("go build goaccel: %v\n%s", err, out)
	}
	return bin
}

// oneProcess runs bin as one process with 2 XLA CPU devices (the global batch of 2
// processes of 1 device) and returns its epoch lines.
func oneProcess(t *testing.T, ctx context.Context, bin string) []string {
	t.Helper()
	return oneProcessOn(t, ctx, bin, 2)
}

// oneProcessOn is oneProcess with devices XLA CPU devices.
func oneProcessOn(t *testing.T, ctx context.Context, bin string, devices int) []string {
	t.Helper()
	c := exec.CommandContext(ctx, bin)
	c.Env = bareEnv(envvar.Devices.KV(strconv.Itoa(devices)))
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("quickstart as one process: %v\n%s", err, out)
	}
	lines := epochLine.FindAllString(string(out), -1)
	if len(lines) != 5 {
		t.Fatalf("quickstart as one process printed %d epochs:\n%s", len(lines), out)
	}
	return lines
}

// lossesOf is the losses of epoch lines, for the report.
func lossesOf(lines []string) string {
	var ls []string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 3 {
			ls = append(ls, f[3])
		}
	}
	return strings.Join(ls, " ")
}

// runRanks starts n copies of bin, rank r with env(r), and waits for all: their outputs and errors.
func runRanks(ctx context.Context, bin string, n int, env func(r int) []string) ([]string, []error) {
	outs, errs := make([]string, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := exec.CommandContext(ctx, bin)
			c.Env = env(r)
			c.WaitDelay = 5 * time.Second
			out, err := c.CombinedOutput()
			outs[r], errs[r] = string(out), err
		}()
	}
	wg.Wait()
	return outs, errs
}

// TestQuickstartEnvRendezvous: the quickstart started twice with torch's env:// variables
// alone (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE: what
// Kubeflow's PyTorchJob or a shell loop over ssh give, no launcher and no PMI) joins one job
// of 2 processes, and its losses and accuracies equal the one-process run's at the same global
// batch; a rank that never comes is named on rank 0, which exits non-zero.
func TestQuickstartEnvRendezvous(t *testing.T) {
	testutil.Long(t, "builds the quickstart and runs it 3 times (tier 1: internal/launch TestEnvRendezvousMPI, TestJoinInProcess)")
	testutil.NeedMPI(t)
	bin := buildQuickstart(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	want := oneProcess(t, ctx, bin)

	port := testutil.FreePort(t)
	torchEnv := func(r int) []string {
		return bareEnv(envvar.Devices.KV("1"), envvar.Timeout.KV("2m"), envvar.MasterAddr.KV("127.0.0.1"),
			envvar.MasterPort.KV(strconv.Itoa(port)), envvar.Rank.KV(strconv.Itoa(r)), envvar.WorldSize.KV("2"),
			envvar.LocalRank.KV(strconv.Itoa(r)), envvar.LocalWorldSize.KV("2"))
	}
	start := time.Now()
	outs, errs := runRanks(ctx, bin, 2, torchEnv)
	took := time.Since(start)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v\n%s", r, err, outs[r])
		}
	}
	got := epochLine.FindAllString(outs[0], -1)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("2 processes by env:// printed\n%s\nwant, as one process:\n%s\n--- rank 0:\n%s", strings.Join(got, "\n"),
			strings.Join(want, "\n"), outs[0])
	}
	if !strings.Contains(outs[0], "processes 2") {
		t.Errorf("rank 0 does not say it runs with 2 processes:\n%s", outs[0])
	}
	t.Logf("env:// (2 processes, %s): losses %s; one process: %s\n--- rank 0:\n%s", took.Round(time.Millisecond),
		lossesOf(got), lossesOf(want), outs[0])

	// Rank 1 never comes: rank 0 names it when GOACCEL_TIMEOUT runs out, before training.
	lone := func(int) []string {
		return append(torchEnv(0), envvar.Timeout.KV("2s"))
	}
	outs, errs = runRanks(ctx, bin, 1, lone)
	if errs[0] == nil || !strings.Contains(outs[0], "rank 1 of 2 ($WORLD_SIZE=2) did not reach rank 0's rendezvous within 2s") ||
		strings.Contains(outs[0], "epoch 1") {
		t.Errorf("rank 0 alone: %v\n%s", errs[0], outs[0])
	}
	t.Logf("rank 0 alone, GOACCEL_TIMEOUT=2s: %v\n%s", errs[0], outs[0])

	// Variables that disagree, and a wrong job secret: every process ends, non-zero, naming it,
	// before any trains (runRanks returns once both processes ended: none is left behind).
	for _, bad := range []struct {
		name  string
		extra func(r int) []string
		want  []string
	}{
		{"WORLD_SIZE 2 and 3", func(r int) []string { return []string{envvar.WorldSize.KV(strconv.Itoa(2 + r))} },
			[]string{"rank 1 says $WORLD_SIZE=3 but rank 0 says $WORLD_SIZE=2", "rank 1 says $WORLD_SIZE=3 but rank 0 says $WORLD_SIZE=2"}},
		{"two secrets", func(r int) []string { return []string{envvar.JobSecret.KV(strings.Repeat(strconv.Itoa(r), 32))} },
			[]string{"rank 1 of 2 ($WORLD_SIZE=2) did not reach rank 0's rendezvous", "rank 0 refused rank 1: its job secret differs"}},
	} {
		port := testutil.FreePort(t)
		start := time.Now()
		outs, errs := runRanks(ctx, bin, 2, func(r int) []string {
			env := append(torchEnv(r), envvar.Timeout.KV("3s"), envvar.MasterPort.KV(strconv.Itoa(port)))
			return append(env, bad.extra(r)...)
		})
		for r := range 2 {
			if errs[r] == nil || !strings.Contains(outs[r], bad.want[r]) || strings.Contains(outs[r], "epoch 1") {
				t.Errorf("%s: rank %d: %v, want an error with %q\n%s", bad.name, r, errs[r], bad.want[r], outs[r])
			}
		}
		t.Logf("%s: both processes ended in %s:\n%s%s", bad.name, time.Since(start).Round(time.Millisecond), outs[0], outs[1])
	}
}
