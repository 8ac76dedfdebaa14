package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/examples/internal/exampletest"
	"github.com/goaccel/goaccel/internal/launch"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/trainer"
)

// TestUnderLaunchTwoProcesses runs the program as `goaccel launch --nproc_per_node 2` does (the
// launcher's library, 2 ranks of 1 XLA CPU device each, MPI between them) and as one process
// on 2 devices, at the same global batch (8 x 2) and without dropout: both see the same
// batches (2 replicas either way), so they evaluate to the same test accuracy after each
// epoch, and only rank 0 prints and writes the run directory.
func TestUnderLaunchTwoProcesses(t *testing.T) {
	testutil.NeedMPI(t)
	plugin := cpuPlugin(t)
	root := t.TempDir()
	epochs := 3
	if testing.Short() { // tier 1: 2 epochs, the same comparison after each; 3 in make test-all
		epochs = 2
	}
	args := func(dir string) []string {
		return []string{"--backend", plugin, "--batch_size", "8", "--epochs", strconv.Itoa(epochs), "--dropout", "0", "--workers", "1",
			"--output_dir", dir}
	}
	single := filepath.Join(root, "single")
	if out, err := exampletest.Child(t, append(args(single), "--devices", "2")...).CombinedOutput(); err != nil {
		t.Fatalf("one process: %v\n%s", err, out)
	}

	multi, logs := filepath.Join(root, "multi"), filepath.Join(root, "logs")
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	err := launch.Run(ctx, launch.Config{Program: os.Args[0], Args: args(multi), NprocPerNode: 2, LogDir: logs,
		Env: append(os.Environ(), "GOACCEL_EXAMPLE_CHILD=1", "GOACCEL_DEVICES=2", "GOACCEL_TIMEOUT=5m"), Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("goaccel launch --nproc_per_node 2: %v\n%s", err, out.String())
	}

	accuracies := func(dir string) []float64 {
		recs, err := trainer.ReadMetrics(filepath.Join(dir, trainer.MetricsFile))
		if err != nil {
			t.Fatal(err)
		}
		var acc []float64
		for _, r := range recs {
			if v, ok := r.Eval["accuracy"]; ok && r.Kind == trainer.KindEval {
				acc = append(acc, v)
			}
		}
		return acc
	}
	one, two := accuracies(single), accuracies(multi)
	if len(two) != epochs || len(one) != epochs {
		t.Fatalf("evaluations: %v with 1 process, %v with 2; want %d each\n%s", one, two, epochs, out.String())
	}
	for i := range one {
		if math.Abs(one[i]-two[i]) > 1e-9 {
			t.Errorf("epoch %d: test accuracy %.4f with 2 processes, %.4f with 1", i+1, two[i], one[i])
		}
	}
	if last := two[epochs-1]; last < 0.7 {
		t.Errorf("2 processes reached test accuracy %.4f after %d epochs, want >= 0.7", last, epochs)
	}
	rank1, err := os.ReadFile(filepath.Join(logs, "attempt_0", "rank_1", "stdout.log"))
	if err != nil {
		t.Fatal(err)
	}
	if s := strings.TrimSpace(string(rank1)); s != "" {
		t.Errorf("rank 1 printed to stdout; only rank 0 should:\n%s", s)
	}
	if !strings.Contains(out.String(), "processes 2") {
		t.Errorf("rank 0's plan does not say 2 processes:\n%s", out.String())
	}
	t.Logf("test accuracy per epoch: 1 process x 2 devices %v, 2 processes x 1 device %v", one, two)
}
