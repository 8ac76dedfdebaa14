package accelerator

import (
	"fmt"
	"sync"
	"time"

	"github.com/goaccel/goaccel/internal/mpi"
)

// group is the process group of a run: this process's rank, the number of processes, and the
// collectives between them. Every process calls the same collectives in the same order, with
// the same lengths where a method says so. A single process uses soloGroup, on which every
// collective is the identity; several use MPI (openGroup); tests use a loopback fake whose
// "processes" are goroutines. Strategies and the Accelerator's collectives talk to other
// processes only through it, and none of them tests the number of processes: that is
// chooseStrategy's job.
//
// A collective that waits longer than the run's timeout for a process fails with an error
// that wraps ErrTimeout and names the processes that never arrived.
type group interface {
	// Rank and Size are this process's index and the number of processes.
	Rank() int
	Size() int
	// AllreduceSum adds bufs element-wise over all processes, in place: afterwards every
	// process holds the same sums. Implementations fuse small buffers into buckets.
	AllreduceSum(bufs [][]float32) error
	// AllreduceFloat64 combines buf element-wise over all processes with op, in place.
	AllreduceFloat64(buf []float64, op ReduceOp) error
	// ReduceScatterSum adds send element-wise over all processes and leaves this process's
	// block of the sums in recv: send holds Size() blocks of len(recv) elements, block r for
	// rank r (len(send) == Size()*len(recv), the same lengths everywhere; a sharded strategy
	// pads its buffers to a multiple of Size()). send and recv must not overlap.
	ReduceScatterSum(send, recv []float32) error
	// AllgatherFloat32 writes every process's mine into recv, rank after rank
	// (len(recv) == Size()*len(mine), the same lengths everywhere).
	AllgatherFloat32(mine, recv []float32) error
	// AlltoallBytes sends block r of send to process r and receives in block r of recv what
	// process r sent to this one: both hold Size() blocks of len(send)/Size() bytes, the same
	// lengths everywhere. It moves what MPI cannot reduce (16-bit floats, compress.go).
	AlltoallBytes(send, recv []byte) error
	// AllgatherBlocks writes every process's mine into recv, rank after rank
	// (len(recv) == Size()*len(mine), the same lengths everywhere).
	AllgatherBlocks(mine, recv []byte) error
	// Broadcast copies root's buf into every other process's buf (same length everywhere).
	Broadcast(buf []byte, root int) error
	// Allgather returns every process's bytes, indexed by rank; lengths may differ.
	Allgather(mine []byte) ([][]byte, error)
	// Barrier returns when every process has called it, or an error naming the processes that
	// did not arrive within timeout.
	Barrier(timeout time.Duration) error
	// Close leaves the group.
	Close() error
	// Exit ends the process with code the way the group's launcher expects (see Exit).
	Exit(code int)
}

// checkBlocks checks the lengths of a block collective (ReduceScatterSum, AllgatherFloat32):
// one buffer of n elements, the other of size*n.
func checkBlocks(op string, one, all, size int) error {
	if all != size*one {
		return fmt.Errorf("accelerator: %s: %d elements for %d processes x %d: want %d", op, all, size, one, size*one)
	}
	return nil
}

// checkAlltoall checks the lengths of AlltoallBytes: equal, and a multiple of size.
func checkAlltoall(send, recv, size int) error {
	if send != recv || send%size != 0 {
		return fmt.Errorf("accelerator: AlltoallBytes: %d bytes sent and %d received for %d processes: want equal lengths, a multiple of %d", send, recv, size, size)
	}
	return nil
}

// soloGroup is the group of a single process: every collective is the identity.
type soloGroup struct{}

func (soloGroup) Rank() int                                  { return 0 }
func (soloGroup) Size() int                                  { return 1 }
func (soloGroup) AllreduceSum([][]float32) error             { return nil }
func (soloGroup) AllreduceFloat64([]float64, ReduceOp) error { return nil }
func (soloGroup) Broadcast([]byte, int) error                { return nil }
func (soloGroup) Allgather(mine []byte) ([][]byte, error)    { return [][]byte{mine}, nil }
func (soloGroup) Barrier(time.Duration) error                { return nil }
func (soloGroup) Close() error                               { return nil }

func (soloGroup) ReduceScatterSum(send, recv []float32) error {
	if err := checkBlocks("ReduceScatterSum", len(recv), len(send), 1); err != nil {
		return err
	}
	copy(recv, send)
	return nil
}

func (soloGroup) AllgatherFloat32(mine, recv []float32) error {
	if err := checkBlocks("AllgatherFloat32", len(mine), len(recv), 1); err != nil {
		return err
	}
	copy(recv, mine)
	return nil
}

func (soloGroup) AlltoallBytes(send, recv []byte) error {
	if err := checkAlltoall(len(send), len(recv), 1); err != nil {
		return err
	}
	copy(recv, send)
	return nil
}

func (soloGroup) AllgatherBlocks(mine, recv []byte) error {
	if err := checkBlocks("AllgatherBlocks", len(mine), len(recv), 1); err != nil {
		return err
	}
	copy(recv, mine)
	return nil
}

// Exit is the C library's exit (mpi.Exit without MPI): it flushes C's buffered output, as the
// end of a C program does, whether or not a launcher started the process.
func (soloGroup) Exit(code int) { mpi.Exit(code) }

// joinGroup returns the process group that proc describes: soloGroup for a single process,
// else the MPI group (openGroup), which then is the group Exit leaves.
func joinGroup(proc processInfo, timeout time.Duration) (group, error) {
	if proc.worldSize == 1 {
		return soloGroup{}, nil
	}
	g, err := openGroup(proc, timeout)
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
	joined   group = soloGroup{} // the process group this process joined (at most one: MPI initializes once)
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
