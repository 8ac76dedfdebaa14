package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/internal/mpi"
	"github.com/goaccel/goaccel/internal/testutil"
)

// TestQuickstartUnderOpenMPI: the README's `mpirun -n 2 ./train` with Open MPI's mpirun, run
// inside the checkout, trains with no variable naming the MPI library: goaccel sees
// OMPI_COMM_WORLD_* and loads Open MPI's libmpi.so.40 from the system's places, not the MPICH
// that is found first otherwise (the Makefile's $GOACCEL_HOME=.deps), which would abort in
// MPI_Init ("unsupported PMI version PMIx"). Timings: docs/setup.md.
func TestQuickstartUnderOpenMPI(t *testing.T) {
	mpirun := testutil.NeedOpenMPI(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "quickstart")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mpirun, "--allow-run-as-root", "--oversubscribe", "-n", "2", bin)
	cmd.Dir = "." // the package's folder, inside the checkout
	if lib, err := mpi.Find(); err == nil && lib.ABI != mpi.ABIOpenMPI {
		t.Logf("outside mpirun the MPI found is %s (%s, from %s): Open MPI's must be chosen instead", lib.Path, lib.ABI, lib.Source)
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "GOACCEL_MPI_LIB" && k != "GOACCEL_MPI_ABI" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mpirun -n 2 quickstart: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "processes 2") || strings.Count(string(out), "test accuracy") != 5 {
		t.Errorf("want a plan line with 2 processes and 5 epochs' accuracy (printed once, by rank 0):\n%s", out)
	}
}
