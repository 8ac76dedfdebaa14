package accelerator

import (
	"fmt"
	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"math"
)

// The collectives of a program: host values combined across processes, barriers. Each goes
// through the process group, whose single-process twin makes them the identity.

// ErrTimeout is wrapped by the error of every wait on other processes that ran out of time
// (Config.Timeout): a barrier, a gradient all-reduce or a gather that a process never arrived
// at. The error's text names the operation and the processes that did not arrive; test for it
// with errors.Is(err, accelerator.ErrTimeout).
var ErrTimeout = collective.ErrTimeout

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
		return 0, fmt.Errorf("accelerator: Reduce: unknown ReduceOp %d (want OpSum, OpMean or OpMax)", op)
	}
	// NaN travels as a flag: MPI's max of NaN is undefined.
	buf := []float64{x, 0}
	if math.IsNaN(x) {
		buf = []float64{0, 1}
	}
	cop := collective.Sum
	if op == OpMax {
		cop = collective.Max
	}
	if err := a.grp.AllreduceFloat64(buf, cop); err != nil {
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

// WaitForEveryone is a barrier across processes (torch.distributed.barrier, Accelerate's
// wait_for_everyone). With a single process it returns at once. A process that does not
// arrive within the collective timeout (Config.Timeout) makes it return an error that names
// the ranks that never arrived, instead of waiting forever.
func (a *Accelerator) WaitForEveryone() error {
	span := a.tl.Start("barrier", "collective")
	err := a.grp.Barrier(a.timeout)
	span.End()
	if err != nil {
		return fmt.Errorf("accelerator: WaitForEveryone: %w", err)
	}
	return nil
}

// MainProcessFirst runs fn on the main process first and then, after a barrier, on the
// others — for work such as preparing a dataset cache that the others then read.
func (a *Accelerator) MainProcessFirst(fn func() error) error {
	if a.IsMainProcess() {
		if err := fn(); err != nil {
			return err
		}
		return a.WaitForEveryone()
	}
	if err := a.WaitForEveryone(); err != nil {
		return err
	}
	return fn()
}

// TimelineSpan starts a span of the timeline (Config.Timeline) named name in category (such
// as "checkpoint" or "collate") and returns the function that ends it, with args as key,
// value pairs shown by the viewer. With the timeline off it returns a function that does
// nothing, and costs no allocation.
func (a *Accelerator) TimelineSpan(name, category string) (end func(args ...any)) {
	if a.tl == nil {
		return noSpan
	}
	return a.tl.Start(name, category).End
}

func noSpan(...any) {}
