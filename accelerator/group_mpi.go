package accelerator

import (
	"errors"
	"fmt"
	"time"

	"github.com/goaccel/goaccel/internal/mpi"
)

// openGroup joins the process group described by p through MPI, loaded at run time: the
// library that the launcher's environment points to ($GOACCEL_MPI_LIB, the project's
// .deps/mpich, LD_LIBRARY_PATH, system folders). A program that runs as one process never
// gets here. timeout bounds every collective: Config.Timeout or $GOACCEL_TIMEOUT, resolved by
// collectiveTimeout with the parser mpi.Init uses (mpi.TimeoutFromEnv), so both agree.
func openGroup(p processInfo, timeout time.Duration) (group, error) {
	lib, err := mpi.Find()
	if err != nil {
		return nil, fmt.Errorf("accelerator: %d processes (from %s) talk through MPI, which was not found: %w", p.worldSize, p.source, err)
	}
	comm, err := mpi.Init(lib)
	if err != nil {
		return nil, fmt.Errorf("accelerator: joining the %d processes (from %s): %w", p.worldSize, p.source, err)
	}
	comm.SetTimeout(timeout)
	if comm.Rank() != p.rank || comm.Size() != p.worldSize {
		_ = comm.Finalize()
		return nil, fmt.Errorf("accelerator: the environment says rank %d of %d (%s) but MPI (%s) says rank %d of %d: "+
			"either the program was started by hand with those variables set (start it with goaccel launch, mpirun or "+
			"srun, or unset them to run as one process), or the MPI library does not belong to the launcher that "+
			"started the job (set $GOACCEL_MPI_LIB to its libmpi)",
			p.rank, p.worldSize, p.source, lib.Path, comm.Rank(), comm.Size())
	}
	return &mpiGroup{comm}, nil
}

// mpiGroup is a group over MPI.
type mpiGroup struct{ c *mpi.Comm }

func (g *mpiGroup) Rank() int { return g.c.Rank() }
func (g *mpiGroup) Size() int { return g.c.Size() }

// AllreduceSum sums in DDP-sized fused buckets (mpi.DefaultBucketBytes).
func (g *mpiGroup) AllreduceSum(bufs [][]float32) error {
	return timedOut(g.c.AllreduceFused(bufs, false, 0))
}

func (g *mpiGroup) AllreduceFloat64(buf []float64, op ReduceOp) error {
	mop := mpi.Sum
	if op == OpMax {
		mop = mpi.Max
	}
	return timedOut(g.c.AllreduceFloat64(buf, mop))
}

func (g *mpiGroup) ReduceScatterSum(send, recv []float32) error {
	if err := checkBlocks("ReduceScatterSum", len(recv), len(send), g.c.Size()); err != nil {
		return err
	}
	return timedOut(g.c.ReduceScatterFloat32(send, recv, mpi.Sum))
}

func (g *mpiGroup) AllgatherFloat32(mine, recv []float32) error {
	if err := checkBlocks("AllgatherFloat32", len(mine), len(recv), g.c.Size()); err != nil {
		return err
	}
	return timedOut(g.c.AllgatherFloat32(mine, recv))
}

func (g *mpiGroup) AlltoallBytes(send, recv []byte) error {
	if err := checkAlltoall(len(send), len(recv), g.c.Size()); err != nil {
		return err
	}
	return timedOut(g.c.AlltoallBytes(send, recv))
}

func (g *mpiGroup) AllgatherBlocks(mine, recv []byte) error {
	if err := checkBlocks("AllgatherBlocks", len(mine), len(recv), g.c.Size()); err != nil {
		return err
	}
	return timedOut(g.c.AllgatherBlocks(mine, recv))
}

// Exit is mpi.Exit: MPI_Finalize (MPI_Abort after a failed collective), then the C exit.
func (g *mpiGroup) Exit(code int) { mpi.Exit(code) }

func (g *mpiGroup) Broadcast(buf []byte, root int) error { return timedOut(g.c.Broadcast(buf, root)) }
func (g *mpiGroup) Barrier(timeout time.Duration) error  { return timedOut(g.c.Barrier(timeout)) }
func (g *mpiGroup) Close() error                         { return g.c.Finalize() }

func (g *mpiGroup) Allgather(mine []byte) ([][]byte, error) {
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
