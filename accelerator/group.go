package accelerator

import "time"

// group is the process group of a run over several processes: this process's rank, and the
// collectives between the processes. Every process calls the same collectives in the same
// order. A single process uses soloGroup; several use MPI (groupFromEnv).
type group interface {
	// Rank and Size are this process's index and the number of processes.
	Rank() int
	Size() int
	// AllreduceSum adds bufs element-wise over all processes, in place: afterwards every
	// process holds the same sums. Implementations fuse small buffers into buckets.
	AllreduceSum(bufs [][]float32) error
	// AllreduceFloat64 combines buf element-wise over all processes with op, in place.
	AllreduceFloat64(buf []float64, op ReduceOp) error
	// Broadcast copies root's buf into every other process's buf (same length everywhere).
	Broadcast(buf []byte, root int) error
	// Allgather returns every process's bytes, indexed by rank; lengths may differ.
	Allgather(mine []byte) ([][]byte, error)
	// Barrier returns when every process has called it, or an error naming the processes that
	// did not arrive within timeout.
	Barrier(timeout time.Duration) error
	// Close leaves the group.
	Close() error
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
