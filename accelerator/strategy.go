package accelerator

import (
	"fmt"

	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/gomlx/core/tensors"
)

// How a Job runs its training steps, keeps its replicas' variables equal and gathers their
// evaluation results is a strategy, chosen once in Prepare by chooseStrategy (Lightning
// Fabric's strategies play this part there):
//
//   - inGraph: every replica is a device of this process. A step is one compiled graph over the
//     device mesh; XLA's sharding inserts the all-reduce of the gradients (strategy_ingraph.go).
//   - hostReduced: the replicas span several processes. A step is a gradients graph, an
//     all-reduce of the gradients on the host through the process group, and an apply graph
//     (strategy_hostreduced.go); with gradient accumulation, the batches before the update
//     keep their gradients on the devices and the all-reduce runs once per update.
//
// A new way to run a step (sharded optimizer state or parameters, compressed all-reduce) is
// a new strategy: a type implementing strategy, its case in chooseStrategy, and what it needs
// from other processes added to the group interface (ReduceScatterSum and AllgatherFloat32
// are there for the sharded ones).
// Strategies talk to other processes only through the group and never test the number of
// processes: chooseStrategy is the one place that does.

// strategy is how a Job's steps run over its replicas.
type strategy interface {
	// newStep returns what runs the batches of one TrainStep (its compiled graphs and buffers).
	newStep(t *TrainStep) stepRunner
	// syncVariables makes every replica's variables equal to rank 0's, after variables were
	// created or loaded on each process, and reports whether a value changed.
	syncVariables(j *Job) (changed bool, err error)
	// gather returns the evaluation rows of every replica, process after process, given this
	// process's: the same result on every process.
	gather(local *Gathered) (*Gathered, error)
}

// stepRunner runs the batches of one TrainStep under a strategy.
type stepRunner interface {
	// run runs one global batch, whose executor arguments are args. With accumulate, the batch
	// only adds its gradients to the accumulators (no optimizer update): a strategy that
	// accumulates without syncing may skip the all-reduce then. It adds what it measures
	// (Sync, SyncBytes) to the step's stats; TrainStep.Run counts the batch and its time.
	run(gb *data.GlobalBatch, args []any, accumulate bool) (Loss, error)
}

// chooseStrategy is the one place that decides, from the process group and Config.Sharding,
// how steps run: in the graph for one process, reduced on the host for several, and with the
// optimizer state sharded over several processes (zero1) under any ZeRO stage.
func chooseStrategy(grp group, shard sharding) strategy {
	if grp.Size() > 1 {
		if shard != shardNo {
			return zero1{hostReduced{grp: grp}}
		}
		return hostReduced{grp: grp}
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

func finalizeAll(ts []*tensors.Tensor) {
	for _, t := range ts {
		if t != nil {
			_ = t.FinalizeAll()
		}
	}
}
