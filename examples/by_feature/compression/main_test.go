package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/accelerator/acceltest"
	"github.com/goaccel/goaccel/examples/internal/exampletest"
	"github.com/goaccel/goaccel/internal/launch"
	"github.com/goaccel/goaccel/internal/testutil"
)

// TestMain: see exampletest.Main.
func TestMain(m *testing.M) { exampletest.Main(m, main) }

// TestUnderLaunch runs the program as `goaccel launch --nproc_per_node 2` does (2 ranks of 1
// XLA CPU device, MPI between them) for 3 steps: each update sends 2 bytes per gradient (the
// MLP's 162, padded to a multiple of the 2 processes), not float32's 4.
func TestUnderLaunch(t *testing.T) {
	testutil.NeedMPI(t)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err := launch.Run(ctx, launch.Config{Program: os.Args[0], Args: []string{"--steps", "3"}, NprocPerNode: 2,
		LogDir: filepath.Join(t.TempDir(), "logs"), Stdout: &out, Stderr: &out,
		Env: append(os.Environ(), "GOACCEL_EXAMPLE_CHILD=1", "GOACCEL_DEVICES=2", "GOACCEL_TIMEOUT=3m",
			"GOMLX_BACKEND=xla:"+acceltest.CPUPlugin(t))})
	if err != nil {
		t.Fatalf("goaccel launch --nproc_per_node 2: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "gradient bytes per update 324, processes 2") {
		t.Errorf("want 324 gradient bytes per update over 2 processes:\n%s", out.String())
	}
}
