package accelerator

import (
	"sync"
	"time"

	"github.com/goaccel/goaccel/accelerator/internal/collective"
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
	g, err := collective.Open(proc.rank, proc.worldSize, proc.source, timeout)
	if err != nil {
		return nil, err
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
