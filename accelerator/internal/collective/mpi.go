package collective

import (
	"errors"
	"fmt"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/mpi"
)

// Open joins, through MPI loaded at run time, the group of size processes in which this one
// is rank, as source (the launcher's variables that said so) describes it: the library that
// the launcher's environment points to ($GOACCEL_MPI_LIB, the project's .deps/mpich,
// LD_LIBRARY_PATH, system folders). timeout bounds every collective.
func Open(rank, size int, source string, timeout time.Duration) (*MPI, error) {
	lib, err := mpi.Find()
	if err != nil {
		return nil, fmt.Errorf("accelerator: %d processes (from %s) talk through MPI, which was not found: %w", size, source, err)
	}
	comm, err := mpi.Init(lib)
	if err != nil {
		return nil, fmt.Errorf("accelerator: joining the %d processes (from %s): %w", size, source, err)
	}
	comm.SetTimeout(timeout)
	if comm.Rank() != rank || comm.Size() != size {
		_ = comm.Finalize()
		return nil, fmt.Errorf("accelerator: the variables of %s say this process is rank %d of %d, but MPI (%s) started as rank %d of %d: "+
			"it found no process manager of that job. %s", source, rank, size, lib.Path, comm.Rank(), comm.Size(), mismatchHint())
	}
	return &MPI{c: comm}, nil
}

// MPI is a Group over MPI.
type MPI struct {
	c *mpi.Comm
	// end, when set, is told that this process leaves the group (OnEnd): the env://
	// rendezvous's Member.End.
	end func(code int) error
}

// OnEnd has end called, once, when the process leaves the group (Close or Exit): after
// MPI_Finalize with 0 when it leaves cleanly (MPICH's finalize still uses the PMI), before
// it with the exit code (at least 1) when it fails or a collective failed.
func (g *MPI) OnEnd(end func(code int) error) { g.end = end }

// leave finalizes MPI and tells the OnEnd function: 0 after a clean MPI_Finalize, else code
// (0 becomes 1 after a failed collective) before MPI_Finalize, which mpi.Exit then skips or
// turns into MPI_Abort.
func (g *MPI) leave(code int) error {
	if g.end == nil {
		if code != 0 {
			return nil
		}
		return g.c.Finalize()
	}
	if code == 0 && g.c.Broken() == nil {
		if err := g.c.Finalize(); err != nil {
			_ = g.end(1)
			return err
		}
		return g.end(0)
	}
	if code == 0 {
		code = 1
	}
	return g.end(code)
}

// OnBuckets has fn called after each bucket of an all-reduce (the buckets it fused, their
// bytes, and when it ran), for the timeline.
func (g *MPI) OnBuckets(fn func(buckets string, bytes int64, start, end time.Time)) {
	g.c.OnBuckets(fn)
}

// Rank is this process's MPI rank.
func (g *MPI) Rank() int { return g.c.Rank() }

// Size is the number of MPI processes.
func (g *MPI) Size() int { return g.c.Size() }

// AllreduceSum sums in DDP-sized fused buckets (mpi.DefaultBucketBytes).
func (g *MPI) AllreduceSum(bufs [][]float32) error {
	return timedOut(g.c.AllreduceFused(bufs, false, 0))
}

// AllreduceFloat64 is MPI_Allreduce with MPI_SUM or MPI_MAX.
func (g *MPI) AllreduceFloat64(buf []float64, op Op) error {
	mop := mpi.Sum
	if op == Max {
		mop = mpi.Max
	}
	return timedOut(g.c.AllreduceFloat64(buf, mop))
}

// ReduceScatterSum is MPI_Reduce_scatter_block with MPI_SUM.
func (g *MPI) ReduceScatterSum(send, recv []float32) error {
	if err := CheckBlocks("ReduceScatterSum", len(recv), len(send), g.c.Size()); err != nil {
		return err
	}
	return timedOut(g.c.ReduceScatterFloat32(send, recv, mpi.Sum))
}

// AllgatherFloat32 is MPI_Allgather of float32 blocks.
func (g *MPI) AllgatherFloat32(mine, recv []float32) error {
	if err := CheckBlocks("AllgatherFloat32", len(mine), len(recv), g.c.Size()); err != nil {
		return err
	}
	return timedOut(g.c.AllgatherFloat32(mine, recv))
}

// AlltoallAllgatherBlocks is MPI_Ialltoall and MPI_Iallgather of byte blocks, in flight together.
func (g *MPI) AlltoallAllgatherBlocks(send, recv, mine, gathered []byte) error {
	if err := CheckAlltoall(len(send), len(recv), g.c.Size()); err != nil {
		return err
	}
	if err := CheckBlocks("AlltoallAllgatherBlocks", len(mine), len(gathered), g.c.Size()); err != nil {
		return err
	}
	return timedOut(g.c.AlltoallAllgatherBlocks(send, recv, mine, gathered))
}

// Exit is mpi.Exit: MPI_Finalize (MPI_Abort after a failed collective), then the C exit.
func (g *MPI) Exit(code int) {
	if g.end != nil {
		_ = g.leave(code)
	}
	mpi.Exit(code)
}

// Broadcast is MPI_Bcast.
func (g *MPI) Broadcast(buf []byte, root int) error { return timedOut(g.c.Broadcast(buf, root)) }

// Barrier is a barrier that names the processes that did not arrive within timeout.
func (g *MPI) Barrier(timeout time.Duration) error { return timedOut(g.c.Barrier(timeout)) }

// Close is MPI_Finalize.
func (g *MPI) Close() error {
	if g.end == nil {
		return g.c.Finalize()
	}
	err := g.leave(0)
	if g.c.Broken() != nil {
		_ = g.c.Finalize() // says why it is skipped
	}
	return err
}

// Allgather gathers every process's bytes, of any length.
func (g *MPI) Allgather(mine []byte) ([][]byte, error) {
	all, err := g.c.AllgatherBytes(mine)
	return all, timedOut(err)
}

// timedOut makes an MPI error that wraps mpi.ErrTimeout wrap ErrTimeout too, its text unchanged.
func timedOut(err error) error {
	if err != nil && errors.Is(err, mpi.ErrTimeout) {
		return &peerTimeout{err}
	}
	return err
}

// peerTimeout is the MPI error of a process that never arrived; errors.Is finds ErrTimeout in it.
type peerTimeout struct{ err error }

func (e *peerTimeout) Error() string   { return e.err.Error() }
func (e *peerTimeout) Unwrap() []error { return []error{e.err, ErrTimeout} }

// Comm is the group's MPI communicator, for what the Group interface does not offer (the
// benchmarks of its raw, unfused all-reduce).
func (g *MPI) Comm() *mpi.Comm { return g.c }

// mismatchHint says what to do when MPI saw a job of another size than the launcher's
// variables: which launcher's process manager the library missed, and the ways out.
func mismatchHint() string {
	if v, ok := envvar.PMIxRank.Lookup(); ok && v != "" {
		return "The launcher serves PMIx (srun --mpi=pmix, Open MPI's mpirun), which this MPI library does not speak: " +
			"run `srun --mpi=pmi2 ...`, or `srun --mpi=none ...` (then the processes meet by themselves, from Slurm's " +
			"variables), or set $GOACCEL_MPI_LIB to the libmpi of the launcher's MPI"
	}
	if v, ok := envvar.SlurmStepID.Lookup(); ok && v != "" {
		return "Under Slurm run `srun --mpi=pmi2 ...` (Slurm's PMI-2, which MPICH speaks), or `srun --mpi=none ...` " +
			"(the processes meet by themselves, from Slurm's variables); `srun --mpi=list` shows the cluster's plugins"
	}
	return "Start the program with goaccel launch, with the mpiexec of the same MPI, or with the variables of " +
		"torch's env:// alone (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, and no PMI_*: the processes then meet by " +
		"themselves); or set $GOACCEL_MPI_LIB to the libmpi of the launcher that started the job; or unset those " +
		"variables to run as one process"
}
