package accelerator

import (
	"fmt"
	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"github.com/goaccel/goaccel/accelerator/internal/strategy"

	"github.com/gomlx/gomlx/core/tensors"
)

// How a Job runs its training steps, keeps its replicas' variables equal and gathers their
// evaluation results is a strategy, chosen once in Prepare by chooseStrategy (Lightning
// Fabric's strategies play this part there):
//
//   - inGraph: every replica is a device of this process. A step is one compiled graph over the
//     device mesh; XLA's sharding inserts the all-reduce of the gradients (strategy_ingraph.go);
//     with Config.Sharding some variables are sharded over the devices (sharding.go).
//   - hostReduced: the replicas span several processes. A step is a gradients graph, then a
//     reduction of the gradients on the host through the process group (exact, or 16-bit
//     under Config.GradientCompression: reduction.go, compress.go) and the update
//     (strategy_hostreduced.go); with gradient accumulation, the batches before the update
//     keep their gradients on the devices and the reduction runs once per update.
//   - zero1: hostReduced's gradients graph with ZeRO-1's reduction: reduce-scatter, the update
//     of this rank's slices of the optimizer state, all-gather (strategy_zero1.go).
//
// The wrappers a batch passes through (the memory plan's check, Verify, micro-batches) are
// composed once, in Job.TrainStep, around the strategy's runner; which settings cannot run
// together is decided by one table (settings.go). A new way to run a step is a new strategy
// or a new reduction, with what it needs from other processes added to the group interface.
// Strategies talk to other processes only through the group and never test the number of
// processes: chooseStrategy is the one place that does.

// stepStrategy is how a Job's steps run over its replicas.
type stepStrategy interface {
	// newStep returns what runs the batches of one TrainStep (its compiled graphs and buffers).
	newStep(t *TrainStep) strategy.Runner
	// syncVariables makes every replica's variables equal to rank 0's, after variables were
	// created or loaded on each process, and reports whether a value changed.
	syncVariables(j *Job) (changed bool, err error)
	// gather returns the evaluation rows of every replica, process after process, given this
	// process's: the same result on every process.
	gather(local *Gathered) (*Gathered, error)
	// planSharding is the sharding kind ("no", "zero1", "zero2", "zero3") and the shard count
	// that the memory plan of j's steps assumes.
	planSharding(j *Job) (kind string, shards int)
}

// chooseStrategy is the one place that decides, from the process group and the settings, how
// steps run: in the graph for one process, reduced on the host for several (with the
// reduction Config.GradientCompression picks), and with the optimizer state sharded over
// several processes (zero1) under any ZeRO stage.
func chooseStrategy(grp collective.Group, set *settings) stepStrategy {
	if grp.Size() > 1 {
		if set.shard != shardNo {
			return zero1{hostReduced{grp: grp}}
		}
		return hostReduced{grp: grp, codec: set.codec}
	}
	return inGraph{}
}

// execCreatingVariables executes a compiled graph with exec. The first execution of a graph
// may create and initialise variables (on each process from its own seed); then, once per
// graph (*synced records it), the job's strategy makes them equal on all replicas and, if a
// value changed, the graph runs again on the same batch with the synced values.
func (j *Job) execCreatingVariables(synced *bool, exec func() ([]*tensors.Tensor, error)) ([]*tensors.Tensor, error) {
	outs, err := exec()
	if err != nil || *synced {
		return outs, err
	}
	changed, err := j.strategy.syncVariables(j)
	if err != nil {
		finalizeAll(outs)
		return nil, err
	}
	*synced = true
	if !changed {
		return outs, nil
	}
	finalizeAll(outs)
	if err := j.resetAccumulators(); err != nil { // the first execution added to them already
		return nil, err
	}
	return exec()
}

// resetAccumulators sets the gradient accumulators (goaccel/grad_accum, goaccel/grad_weight)
// to zero.
func (j *Job) resetAccumulators() error {
	for v := range j.store.IterVariables() {
		if isAccumulator(v.Path()) && v.HasValue() {
			if err := v.SetValue(tensors.FromShape(v.Shape())); err != nil {
				return fmt.Errorf("accelerator: resetting %s: %w", v.Path(), err)
			}
		}
	}
	return nil
}

func finalizeAll(ts []*tensors.Tensor) { strategy.FinalizeAll(ts) }
