package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/launch"
	"github.com/goaccel/goaccel/internal/testutil"
)

// epochLine is rank 0's line after each epoch, without the launcher's "[rank 0] " prefix.
var epochLine = regexp.MustCompile(`epoch \d+  loss \S+  test accuracy \S+ \(\d+ examples\)`)

// TestQuickstartSpawnsItsRanks: `quickstart --nproc 2` (spawn.Ranks at the top of main) runs
// the program as 2 ranks over MPI with nothing else typed, and prints the same losses and
// accuracies, epoch by epoch, as `goaccel launch --nproc_per_node 2 quickstart`.
func TestQuickstartSpawnsItsRanks(t *testing.T) {
	testutil.NeedMPI(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "quickstart")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env := append(envvar.Environ(), envvar.Devices.KV("2"), envvar.Timeout.KV("5m"))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	spawned := exec.CommandContext(ctx, bin, "--nproc", "2")
	spawned.Env = env
	out, err := spawned.CombinedOutput()
	if err != nil {
		t.Fatalf("quickstart --nproc 2: %v\n%s", err, out)
	}

	var launched bytes.Buffer
	err = launch.Run(ctx, launch.Config{Program: bin, NprocPerNode: 2, LogDir: filepath.Join(dir, "logs"), Env: env,
		Stdout: &launched, Stderr: &launched})
	if err != nil {
		t.Fatalf("goaccel launch --nproc_per_node 2 quickstart: %v\n%s", err, launched.String())
	}

	got, want := epochLine.FindAllString(string(out), -1), epochLine.FindAllString(launched.String(), -1)
	if len(got) != 5 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("quickstart --nproc 2 printed\n%s\nwant 5 epochs, as under goaccel launch:\n%s\n--- its output:\n%s",
			strings.Join(got, "\n"), strings.Join(want, "\n"), out)
	}
	for _, w := range []string{"processes 2", "node_rank 0 runs ranks 0-1 of 2"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("quickstart --nproc 2's output lacks %q:\n%s", w, out)
		}
	}
	t.Logf("quickstart --nproc 2:\n%s", out)
}
