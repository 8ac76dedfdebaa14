package envvar_test

import (
	"testing"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/home"
	"github.com/goaccel/goaccel/internal/mpi"
)

// TestExportedNamesAreTheTables: the packages that export a variable's name as a constant
// (for their godoc and their callers) export the table's. (hostmalloc, a package above this
// one, holds its own check: TestEnvIsTheTables.)
func TestExportedNamesAreTheTables(t *testing.T) {
	for got, want := range map[string]string{home.EnvVar: envvar.Home.Name, mpi.TimeoutEnv: envvar.Timeout.Name} {
		if got != want {
			t.Errorf("exported name %s, the table's %s", got, want)
		}
	}
}
