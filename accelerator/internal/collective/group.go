// Package collective is how the processes of a run talk to each other: the Group seam (one
// process: Solo; several: MPI), the variables made equal on every process (SyncVariables),
// a check that every process computed the same value (Agree), the 16-bit gradient codec of
// the compressed all-reduce (Compressor) and Timed, which does the step's bookkeeping of
// every collective (time, bytes, timeline span) in one place.
//
// Nothing here knows about jobs, steps or strategies: the accelerator package and its
// strategies call in. None of it tests the number of processes either: a collective of Solo
// is the identity.
package collective

import (
	"errors"
	"fmt"
	"time"

	"github.com/goaccel/goaccel/internal/mpi"
)

// ErrTimeout is wrapped by the error of every wait on other processes that ran out of time.
// The accelerator package exports it as accelerator.ErrTimeout.
var ErrTimeout = errors.New("accelerator: timed out waiting for other processes")

// Op is how AllreduceFloat64 combines the processes' values.
type Op int

// The element-wise reductions of AllreduceFloat64.
const (
	Sum Op = iota
	Max
)

// Group is the process group of a run: this process's rank, the number of processes, and the
// collectives between them. Every process calls the same collectives in the same order, with
// the same lengths where a method says so. A single process uses Solo, on which every
// collective is the identity; several use MPI (Open); tests use a loopback fake whose
// "processes" are goroutines.
//
// A collective that waits longer than the run's timeout for a process fails with an error
// that wraps ErrTimeout and names the processes that never arrived.
type Group interface {
	// Rank and Size are this process's index and the number of processes.
	Rank() int
	Size() int
	// AllreduceSum adds bufs element-wise over all processes, in place: afterwards every
	// process holds the same sums. Implementations fuse small buffers into buckets.
	AllreduceSum(bufs [][]float32) error
	// AllreduceFloat64 combines buf element-wise over all processes with op, in place.
	AllreduceFloat64(buf []float64, op Op) error
	// ReduceScatterSum adds send element-wise over all processes and leaves this process's
	// block of the sums in recv: send holds Size() blocks of len(recv) elements, block r for
	// rank r (len(send) == Size()*len(recv), the same lengths everywhere; a sharded strategy
	// pads its buffers to a multiple of Size()). send and recv must not overlap.
	ReduceScatterSum(send, recv []float32) error
	// AllgatherFloat32 writes every process's mine into recv, rank after rank
	// (len(recv) == Size()*len(mine), the same lengths everywhere).
	AllgatherFloat32(mine, recv []float32) error
	// AlltoallAllgatherBlocks runs two collectives of bytes, in flight together: an
	// all-to-all, which sends block r of send to process r and receives in block r of recv
	// what process r sent to this one (both hold Size() blocks of len(send)/Size() bytes), and
	// an all-gather, which writes every process's mine into gathered, rank after rank
	// (len(gathered) == Size()*len(mine)); the same lengths everywhere, and a pair of no bytes
	// is left out. They move what MPI cannot reduce: the Compressor's 16-bit floats, one
	// bucket's all-to-all with an earlier bucket's all-gather.
	AlltoallAllgatherBlocks(send, recv, mine, gathered []byte) error
	// Broadcast copies root's buf into every other process's buf (same length everywhere).
	Broadcast(buf []byte, root int) error
	// Allgather returns every process's bytes, indexed by rank; lengths may differ.
	Allgather(mine []byte) ([][]byte, error)
	// Barrier returns when every process has called it, or an error naming the processes that
	// did not arrive within timeout.
	Barrier(timeout time.Duration) error
	// Close leaves the group.
	Close() error
	// Exit ends the process with code the way the group's launcher expects.
	Exit(code int)
}

// CheckBlocks checks the lengths of a block collective (ReduceScatterSum, AllgatherFloat32,
// AlltoallAllgatherBlocks's all-gather) named op: one buffer of one elements, the other of size*one.
func CheckBlocks(op string, one, all, size int) error {
	if all != size*one {
		return fmt.Errorf("accelerator: %s: %d elements for %d processes x %d: want %d", op, all, size, one, size*one)
	}
	return nil
}

// CheckAlltoall checks the lengths of AlltoallAllgatherBlocks's all-to-all: equal, and a
// multiple of size.
func CheckAlltoall(send, recv, size int) error {
	if send != recv || send%size != 0 {
		return fmt.Errorf("accelerator: AlltoallAllgatherBlocks: %d bytes sent and %d received for %d processes: want equal lengths, a multiple of %d", send, recv, size, size)
	}
	return nil
}

// Solo is the group of a single process: every collective is the identity.
type Solo struct{}

// Rank is 0.
func (Solo) Rank() int { return 0 }

// Size is 1.
func (Solo) Size() int { return 1 }

// AllreduceSum leaves bufs as they are.
func (Solo) AllreduceSum([][]float32) error { return nil }

// AllreduceFloat64 leaves buf as it is.
func (Solo) AllreduceFloat64([]float64, Op) error { return nil }

// Broadcast leaves buf as it is.
func (Solo) Broadcast([]byte, int) error { return nil }

// Allgather returns [mine].
func (Solo) Allgather(mine []byte) ([][]byte, error) { return [][]byte{mine}, nil }

// Barrier returns at once.
func (Solo) Barrier(time.Duration) error { return nil }

// Close does nothing.
func (Solo) Close() error { return nil }

// ReduceScatterSum copies send into recv (one block).
func (Solo) ReduceScatterSum(send, recv []float32) error {
	if err := CheckBlocks("ReduceScatterSum", len(recv), len(send), 1); err != nil {
		return err
	}
	copy(recv, send)
	return nil
}

// AllgatherFloat32 copies mine into recv.
func (Solo) AllgatherFloat32(mine, recv []float32) error {
	if err := CheckBlocks("AllgatherFloat32", len(mine), len(recv), 1); err != nil {
		return err
	}
	copy(recv, mine)
	return nil
}

// AlltoallAllgatherBlocks copies send into recv and mine into gathered.
func (Solo) AlltoallAllgatherBlocks(send, recv, mine, gathered []byte) error {
	if err := CheckAlltoall(len(send), len(recv), 1); err != nil {
		return err
	}
	if err := CheckBlocks("AlltoallAllgatherBlocks", len(mine), len(gathered), 1); err != nil {
		return err
	}
	copy(recv, send)
	copy(gathered, mine)
	return nil
}

// Exit is the C library's exit (mpi.Exit without MPI): it flushes C's buffered output, as the
// end of a C program does, whether or not a launcher started the process.
func (Solo) Exit(code int) { mpi.Exit(code) }

// Agree checks that every process of g computed the same value v (one small all-gather; on
// Solo it returns nil at once): what names the value in the error.
func Agree(g Group, what string, v int) error {
	all, err := g.Allgather([]byte(fmt.Sprint(v)))
	if err != nil {
		return fmt.Errorf("accelerator: checking %s on all processes: %w", what, err)
	}
	for r, b := range all {
		if string(b) != fmt.Sprint(v) {
			return fmt.Errorf("accelerator: the processes disagree on %s: rank %d has %s, rank %d has %d",
				what, r, b, g.Rank(), v)
		}
	}
	return nil
}
