package accelerator

import (
	"fmt"
	"math"
)

// ReduceOp is how Reduce combines the processes' values.
type ReduceOp int

// The reductions Reduce supports.
const (
	OpSum ReduceOp = iota
	OpMean
	OpMax
)

// Reduce combines a host scalar (such as a running loss) across all processes, like
// torch.distributed.all_reduce on a one-element tensor, and returns the result on every
// process. A step's loss from TrainStep.Run is already the mean over the global batch of all
// devices of this process, so with one process Reduce returns x for every op.
func (a *Accelerator) Reduce(x float64, op ReduceOp) (float64, error) {
	if op < OpSum || op > OpMax {
		return 0, fmt.Errorf("accelerator: unknown ReduceOp %d (want OpSum, OpMean or OpMax)", op)
	}
	if a.grp.Size() == 1 {
		return x, nil
	}
	// NaN travels as a flag: MPI's max of NaN is undefined.
	buf := []float64{x, 0}
	if math.IsNaN(x) {
		buf = []float64{0, 1}
	}
	mpiOp := OpSum
	if op == OpMax {
		mpiOp = OpMax
	}
	if err := a.grp.AllreduceFloat64(buf, mpiOp); err != nil {
		return math.NaN(), fmt.Errorf("accelerator: Reduce: %w", err)
	}
	if buf[1] > 0 {
		return math.NaN(), nil
	}
	if op == OpMean {
		return buf[0] / float64(a.grp.Size()), nil
	}
	return buf[0], nil
}

// Broadcast returns the main process's b on every process (torch.distributed's
// broadcast_object_list from rank 0): for a decision that only the main process should make,
// such as a run directory named after the time. Every process must call it. With one process
// it returns b.
func (a *Accelerator) Broadcast(b []byte) ([]byte, error) {
	if a.grp.Size() == 1 {
		return b, nil
	}
	all, err := a.grp.Allgather(b)
	if err != nil {
		return nil, fmt.Errorf("accelerator: Broadcast: %w", err)
	}
	return all[0], nil
}

// AllGather returns every process's b, indexed by rank (torch.distributed.all_gather_object
// for bytes; the lengths may differ): every process must call it, and all get the same
// result. Package checkpoint uses it to save the random state of every process. With one
// process it returns [b].
func (a *Accelerator) AllGather(b []byte) ([][]byte, error) {
	all, err := a.grp.Allgather(b)
	if err != nil {
		return nil, fmt.Errorf("accelerator: AllGather: %w", err)
	}
	return all, nil
}
