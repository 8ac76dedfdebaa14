package collective

import (
	"errors"
	"fmt"
	"time"

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
		return nil, fmt.Errorf("accelerator: the environment says rank %d of %d (%s) but MPI (%s) says rank %d of %d: "+
			"either the program was started by hand with those variables set (start it with goaccel launch, mpirun or "+
			"srun, or unset them to run as one process), or the MPI library does not belong to the launcher that "+
			"started the job (set $GOACCEL_MPI_LIB to its libmpi)",
			rank, size, source, lib.Path, comm.Rank(), comm.Size())
	}
	return &MPI{comm}, nil
}

// MPI is a Group over MPI.
type MPI struct{ c *mpi.Comm }

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
func (g *MPI) Exit(code int) { mpi.Exit(code) }

// Broadcast is MPI_Bcast.
func (g *MPI) Broadcast(buf []byte, root int) error { return timedOut(g.c.Broadcast(buf, root)) }

// Barrier is a barrier that names the processes that did not arrive within timeout.
func (g *MPI) Barrier(timeout time.Duration) error { return timedOut(g.c.Barrier(timeout)) }

// Close is MPI_Finalize.
func (g *MPI) Close() error { return g.c.Finalize() }

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
