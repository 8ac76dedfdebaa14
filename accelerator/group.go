package accelerator

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/launch"
)

// joinGroup returns the process group that proc describes: collective.Solo for a single
// process, else the MPI group, which then is the group Exit leaves. MPI is loaded at run
// time (the library the launcher's environment points to); timeout bounds every collective:
// Config.Timeout or $GOACCEL_TIMEOUT, resolved by collectiveTimeout with the parser mpi.Init
// uses (mpi.TimeoutFromEnv), so both agree.
func joinGroup(proc processInfo, timeout time.Duration) (collective.Group, error) {
	if proc.worldSize == 1 {
		return collective.Solo{}, nil
	}
	// Started without a launcher's PMI (torch's env://, plain srun): meet the others first.
	member, err := rendezvous(proc, timeout)
	if err != nil {
		return nil, err
	}
	g, err := collective.Open(proc.rank, proc.worldSize, proc.source, timeout)
	if err != nil {
		if member != nil {
			_ = member.End(1)
		}
		return nil, err
	}
	if member != nil {
		g.OnEnd(member.End)
	}
	joinedMu.Lock()
	joined = g
	joinedMu.Unlock()
	return g, nil
}

var (
	joinedMu sync.Mutex
	joined   collective.Group = collective.Solo{} // the process group this process joined (at most one: MPI initializes once)
)

// Exit ends the program with code, through the process group this process joined. In a run
// over several processes it first leaves the group the way MPI launchers expect (MPI_Finalize
// and the C library's exit, which MPICH's mpiexec needs to see to take the exit for a clean
// one; Go's os.Exit and returning from main skip it), or aborts the whole job after a failed
// collective. With one process it is the C library's exit. End a program that may run under
// a launcher with it:
//
//	defer acc.Close() // not needed before Exit
//	...
//	accelerator.Exit(0)
func Exit(code int) {
	joinedMu.Lock()
	g := joined
	joinedMu.Unlock()
	g.Exit(code)
}

// rendezvous meets the job's other processes when no launcher's PMI will (launch.EnvPlace:
// torch's env:// variables, or a task of srun without --mpi), and sets the PMI variables the
// MPI library reads in this process; nil when a launcher's PMI is there.
func rendezvous(proc processInfo, timeout time.Duration) (*launch.Member, error) {
	place, ok, err := launch.EnvPlace(envvar.Environ())
	if err != nil {
		return nil, fmt.Errorf("accelerator: %w", err)
	}
	if !ok {
		return nil, nil
	}
	if place.Rank != proc.rank || place.WorldSize != proc.worldSize {
		return nil, fmt.Errorf("accelerator: %s say rank %d of %d but %s say rank %d of %d: unset one launcher's variables",
			place.Source, place.Rank, place.WorldSize, proc.source, proc.rank, proc.worldSize)
	}
	m, err := launch.Join(context.Background(), place, launch.JoinConfig{Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("accelerator: rank %d of %d could not meet the others (%s): %w", place.Rank, place.WorldSize,
			place.Source, err)
	}
	for v, val := range m.PMIEnv() {
		if err := v.Set(val); err != nil {
			_ = m.End(1)
			return nil, fmt.Errorf("accelerator: %w", err)
		}
	}
	return m, nil
}
