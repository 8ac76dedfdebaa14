package accelerator

import (
	"fmt"

	"github.com/goaccel/goaccel/internal/envvar"
)

// processInfo is this process's place in the process group, as the launcher described it.
type processInfo struct {
	rank, worldSize, localRank, localWorldSize int
	// source names where the values came from (for messages), e.g. "torchrun/goaccel launch
	// (RANK, WORLD_SIZE)"; empty for a single process started by hand.
	source string
}

// launcherEnv is one launcher's way of telling a process its place: torchrun and goaccel
// launch, Open MPI's mpirun, MPICH/Hydra's mpiexec (and goaccel launch's PMI), Slurm's srun.
type launcherEnv struct {
	name                             string
	rank, size, localRank, localSize envvar.Int
	// task, when set, must be too: Slurm's SLURM_STEP_ID, which a batch script (whose
	// SLURM_PROCID is 0 and SLURM_NTASKS the job's) and an salloc shell lack.
	task envvar.Int
}

var launcherEnvs = []launcherEnv{
	{"torchrun/goaccel launch", envvar.Rank, envvar.WorldSize, envvar.LocalRank, envvar.LocalWorldSize, envvar.Int{}},
	{"Open MPI", envvar.OMPIRank, envvar.OMPISize, envvar.OMPILocalRank, envvar.OMPILocalSize, envvar.Int{}},
	{"MPICH/Hydra", envvar.PMIRank, envvar.PMISize, envvar.MPILocalRankID, envvar.MPILocalNRanks, envvar.Int{}},
	{"Slurm", envvar.SlurmProcID, envvar.SlurmNTasks, envvar.SlurmLocalID, envvar.SlurmNTasksPerNode, envvar.SlurmStepID},
}

// readProcessEnv finds this process's rank and the number of processes in the environment of
// the first launcher (in launcherEnvs' order) whose rank and size variables are both set.
// Nothing set means a single process.
func readProcessEnv() (processInfo, error) {
	p := processInfo{rank: 0, worldSize: 1, localRank: 0, localWorldSize: 1}
	for _, l := range launcherEnvs {
		if l.task.Var != nil {
			if v, ok := l.task.Lookup(); !ok || v == "" {
				continue // a Slurm batch script or salloc shell: not a task of a step
			}
		}
		rv, rok := l.rank.Lookup()
		sv, sok := l.size.Lookup()
		if (rok && rv != "") != (sok && sv != "") {
			set, unset := l.rank.Name, l.size.Name
			if !rok || rv == "" {
				set, unset = l.size.Name, l.rank.Name
			}
			return p, fmt.Errorf("accelerator: $%s is set but $%s is not: %s sets both; unset $%s to run as a "+
				"single process, or start the program with a launcher (goaccel launch)", set, unset, l.name, set)
		}
		if !rok || !sok || rv == "" || sv == "" {
			continue
		}
		read := func(v envvar.Int, dst *int, min int) error {
			// The table's parser: Slurm's "2(x3)" (SLURM_NTASKS_PER_NODE) reads as 2.
			n, set, err := v.Int()
			if !set {
				return nil
			}
			if err != nil || n < min {
				return fmt.Errorf("accelerator: $%s=%q (set by %s) is not an integer >= %d", v.Name, v.Value(), l.name, min)
			}
			*dst = n
			return nil
		}
		for _, r := range []struct {
			v   envvar.Int
			dst *int
			min int
		}{{l.rank, &p.rank, 0}, {l.size, &p.worldSize, 1}, {l.localRank, &p.localRank, 0}, {l.localSize, &p.localWorldSize, 1}} {
			if err := read(r.v, r.dst, r.min); err != nil {
				return p, err
			}
		}
		if p.rank >= p.worldSize {
			return p, fmt.Errorf("accelerator: $%s=%d is not below $%s=%d (set by %s)", l.rank.Name, p.rank, l.size.Name, p.worldSize, l.name)
		}
		if p.localRank >= p.localWorldSize {
			p.localWorldSize = p.localRank + 1
		}
		p.source = fmt.Sprintf("%s ($%s, $%s)", l.name, l.rank.Name, l.size.Name)
		return p, nil
	}
	return p, nil
}
