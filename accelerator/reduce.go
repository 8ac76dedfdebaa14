package accelerator

import (
	"math"

	"github.com/pkg/errors"
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
		return 0, errors.Errorf("accelerator: unknown ReduceOp %d (want OpSum, OpMean or OpMax)", op)
	}
	if math.IsNaN(x) {
		return x, nil
	}
	if a.proc.worldSize != 1 {
		return 0, errors.New("accelerator: Reduce across processes is not implemented yet")
	}
	return x, nil
}
