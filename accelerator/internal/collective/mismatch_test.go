package collective

import (
	"strings"
	"testing"
)

// TestMismatchHint: when MPI sees a job of another size than the launcher's variables, the
// error says what to do for the launcher there: PMIx (srun --mpi=pmix, Open MPI), a task of
// srun, or none of them.
func TestMismatchHint(t *testing.T) {
	t.Setenv("PMIX_RANK", "")
	t.Setenv("SLURM_STEP_ID", "")
	if h := mismatchHint(); !strings.Contains(h, "the variables of torch's env:// alone") || !strings.Contains(h, "GOACCEL_MPI_LIB") {
		t.Errorf("no launcher: %s", h)
	}
	t.Setenv("SLURM_STEP_ID", "0")
	if h := mismatchHint(); !strings.Contains(h, "srun --mpi=pmi2") || !strings.Contains(h, "srun --mpi=none") {
		t.Errorf("srun: %s", h)
	}
	t.Setenv("PMIX_RANK", "1")
	if h := mismatchHint(); !strings.Contains(h, "PMIx") || !strings.Contains(h, "srun --mpi=pmi2") {
		t.Errorf("PMIx: %s", h)
	}
}
