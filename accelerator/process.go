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
}

var launcherEnvs = []launcherEnv{
	{"torchrun/goaccel launch", envvar.Rank, envvar.WorldSize, envvar.LocalRank, envvar.LocalWorldSize},
	{"Open MPI", envvar.OMPIRank, envvar.OMPISize, envvar.OMPILocalRank, envvar.OMPILocalSize},
	{"MPICH/Hydra", envvar.PMIRank, envvar.PMISize, envvar.MPILocalRankID, envvar.MPILocalNRanks},
	{"Slurm", envvar.SlurmProcID, envvar.SlurmNTasks, envvar.SlurmLocalID, envvar.SlurmNTasksPerNode},
}

// readProcessEnv finds this process's rank and the number of processes in the environment of
// the first launcher (in launcherEnvs' order) whose rank and size variables are both set.
// Nothing set means a single process.
func readProcessEnv() (processInfo, error) {
	p := processInfo{rank: 0, worldSize: 1, localRank: 0, localWorldSize: 1}
	for _, l := range launcherEnvs {
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

// ProcessIndex is this process's rank among all processes (RANK, or the MPI launcher's
// equivalent), 0 for a single process.
func (a *Accelerator) ProcessIndex() int { return a.proc.rank }

// NumProcesses is the number of processes (WORLD_SIZE), 1 for a single process.
func (a *Accelerator) NumProcesses() int { return a.proc.worldSize }

// LocalProcessIndex is this process's rank on its machine (LOCAL_RANK).
func (a *Accelerator) LocalProcessIndex() int { return a.proc.localRank }

// NumLocalProcesses is the number of processes on this machine (LOCAL_WORLD_SIZE).
func (a *Accelerator) NumLocalProcesses() int { return a.proc.localWorldSize }

// IsMainProcess reports whether this is the process that writes checkpoints and prints.
func (a *Accelerator) IsMainProcess() bool { return a.proc.rank == 0 }

// IsLocalMainProcess reports whether this is the first process on its machine (for work
// done once per machine, such as downloading or unpacking data).
func (a *Accelerator) IsLocalMainProcess() bool { return a.proc.localRank == 0 }

// WaitForEveryone is a barrier across processes (torch.distributed.barrier, Accelerate's
// wait_for_everyone). With a single process it returns at once. A process that does not
// arrive within the collective timeout (Config.Timeout) makes it return an error that names
// the ranks that never arrived, instead of waiting forever.
func (a *Accelerator) WaitForEveryone() error {
	if err := a.grp.Barrier(a.timeout); err != nil {
		return fmt.Errorf("accelerator: WaitForEveryone: %w", err)
	}
	return nil
}

// MainProcessFirst runs fn on the main process first and then, after a barrier, on the
// others — for work such as preparing a dataset cache that the others then read.
func (a *Accelerator) MainProcessFirst(fn func() error) error {
	if a.IsMainProcess() {
		if err := fn(); err != nil {
			return err
		}
		return a.WaitForEveryone()
	}
	if err := a.WaitForEveryone(); err != nil {
		return err
	}
	return fn()
}

// Print writes its arguments, space separated, as one line on the main process only.
func (a *Accelerator) Print(args ...any) {
	if !a.IsMainProcess() {
		return
	}
	a.muOut.Lock()
	defer a.muOut.Unlock()
	fmt.Fprintln(a.out, args...)
}

// Printf is Print with a format; a newline is added when missing.
func (a *Accelerator) Printf(format string, args ...any) {
	if !a.IsMainProcess() {
		return
	}
	s := fmt.Sprintf(format, args...)
	if len(s) == 0 || s[len(s)-1] != '\n' {
		s += "\n"
	}
	a.muOut.Lock()
	defer a.muOut.Unlock()
	fmt.Fprint(a.out, s)
}

// plan prints a line of the run's plan unless the Accelerator is quiet.
func (a *Accelerator) plan(format string, args ...any) {
	if !a.cfg.Quiet {
		a.Printf(format, args...)
	}
}
