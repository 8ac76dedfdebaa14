package accelerator

import "testing"

// TestSlurmBatchScriptIsNoRank: a program run in an sbatch script (SLURM_PROCID=0 and the
// job's SLURM_NTASKS, but no SLURM_STEP_ID: Slurm 22.05's batch environment) or an salloc
// shell runs as one process; a task of srun (SLURM_STEP_ID set) is its rank.
func TestSlurmBatchScriptIsNoRank(t *testing.T) {
	for _, k := range []string{"RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE"} {
		t.Setenv(k, "")
	}
	t.Setenv("SLURM_PROCID", "0")
	t.Setenv("SLURM_NTASKS", "2")
	t.Setenv("SLURM_STEP_ID", "")
	p, err := readProcessEnv()
	if err != nil || p.worldSize != 1 || p.source != "" {
		t.Errorf("sbatch script: readProcessEnv = %+v, %v; want one process", p, err)
	}
	t.Setenv("SLURM_STEP_ID", "0")
	t.Setenv("SLURM_PROCID", "1")
	t.Setenv("SLURM_LOCALID", "1")
	t.Setenv("SLURM_NTASKS_PER_NODE", "2")
	p, err = readProcessEnv()
	if err != nil || p.rank != 1 || p.worldSize != 2 || p.localRank != 1 || p.localWorldSize != 2 {
		t.Errorf("srun task: readProcessEnv = %+v, %v; want rank 1 of 2", p, err)
	}
}
