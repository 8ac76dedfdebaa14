package testutil

import (
	"testing"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/mpi"
)

// NeedMPI is for a test that starts several processes: it returns the MPI library they will
// load, or skips the test with a line that starts with SKIPPING and says how to install MPI —
// except when the CI environment variable is set, where `make deps` installs it and its
// absence fails the test. MPI is found as programs find it (internal/mpi's Find): through
// $GOACCEL_MPI_LIB or goaccel's home folder ($GOACCEL_HOME, which the Makefile sets to the
// repository's .deps), then the system's places.
func NeedMPI(t testing.TB) mpi.Library {
	t.Helper()
	lib, err := mpi.Find()
	if err != nil {
		msg := "SKIPPING multi-process test: MPI not installed (run `make deps`, and the test with GOACCEL_HOME=$PWD/.deps): " + err.Error()
		if envvar.CI.Value() != "" {
			t.Fatal("CI is set but " + msg)
		}
		t.Skip(msg)
	}
	return lib
}
