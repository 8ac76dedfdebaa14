package accelerator

import (
	"fmt"
	"os"
	"strconv"
	"strings"
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
	rank, size, localRank, localSize string
}

var launcherEnvs = []launcherEnv{
	{"torchrun/goaccel launch", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
	{"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
	{"MPICH/Hydra", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
	{"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
}

// readProcessEnv finds this process's rank and the number of processes in the environment of
// the first launcher (in launcherEnvs' order) whose rank and size variables are both set.
// Nothing set means a single process.
func readProcessEnv() (processInfo, error) {
	p := processInfo{rank: 0, worldSize: 1, localRank: 0, localWorldSize: 1}
	for _, l := range launcherEnvs {
		rv, rok := os.LookupEnv(l.rank)
		sv, sok := os.LookupEnv(l.size)
		if (rok && rv != "") != (sok && sv != "") {
			set, unset := l.rank, l.size
			if !rok || rv == "" {
				set, unset = l.size, l.rank
			}
			return p, fmt.Errorf("accelerator: $%s is set but $%s is not: %s sets both; unset $%s to run as a "+
				"single process, or start the program with a launcher (goaccel launch)", set, unset, l.name, set)
		}
		if !rok || !sok || rv == "" || sv == "" {
			continue
		}
		read := func(name string, dst *int, min int) error {
			v, ok := os.LookupEnv(name)
			if !ok || v == "" {
				return nil
			}
			// Slurm writes SLURM_NTASKS_PER_NODE as "2" or "2(x3)": the count comes first.
			if i := strings.IndexByte(v, '('); i > 0 {
				v = v[:i]
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < min {
				return fmt.Errorf("accelerator: $%s=%q (set by %s) is not an integer >= %d", name, v, l.name, min)
			}
			*dst = n
			return nil
		}
		for _, r := range []struct {
			name string
			dst  *int
			min  int
		}{{l.rank, &p.rank, 0}, {l.size, &p.worldSize, 1}, {l.localRank, &p.localRank, 0}, {l.localSize, &p.localWorldSize, 1}} {
			if err := read(r.name, r.dst, r.min); err != nil {
				return p, err
			}
		}
		if p.rank >= p.worldSize {
			return p, fmt.Errorf("accelerator: $%s=%d is not below $%s=%d (set by %s)", l.rank, p.rank, l.size, p.worldSize, l.name)
		}
		if p.localRank >= p.localWorldSize {
			p.localWorldSize = p.localRank + 1
		}
		p.source = fmt.Sprintf("%s ($%s, $%s)", l.name, l.rank, l.size)
		return p, nil
	}
	return p, nil
}
