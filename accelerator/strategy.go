package accelerator

import (
	"errors"
	"slices"

	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"github.com/goaccel/goaccel/accelerator/internal/strategy"
	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/ml/model"
)

// How a Job runs its training steps, keeps its replicas' variables equal and gathers their
// evaluation results is a strategy, chosen once in Prepare by chooseStrategy (Lightning
// Fabric's strategies and its connector play this part there). This file is that choice and
// the three strategies' glue; their runners live in internal/strategy:
//
//   - inGraph: every replica is a device of this process. A step is one compiled graph over the
//     device mesh (strategy.InGraph); XLA's sharding inserts the all-reduce of the gradients;
//     with Config.Sharding some variables are sharded over the devices (sharding.go).
//   - hostReduced: the replicas span several processes. A step is a gradients graph, then the
//     gradients reduced on the host through the process group and the update (strategy.Host
//     with strategy.Mean, given collective.Exact or, under Config.GradientCompression,
//     collective.Compressed); with gradient accumulation, the batches before the update keep
//     their gradients on the devices and the reduction runs once per update.
//   - zero1: the same host step with ZeRO-1's reduction (strategy.Zero1Reduction):
//     reduce-scatter, the update of this rank's slices of the optimizer state, all-gather.
//
// The wrappers a batch passes through (the memory plan's check, Verify, micro-batches) are
// composed once, in Job.TrainStep (compose.go), around the strategy's runner; which settings cannot run
// together is decided by one table (settings.go). A new way to run a step is a new runner or
// reduction in internal/strategy and its case here, with what it needs from other processes
// added to collective.Group. Runners talk to other processes only through the group and
// never test the number of processes: chooseStrategy is the one place that does.

// stepStrategy is how a Job's steps run over its replicas.
type stepStrategy interface {
	strategyTraits // what the table of refused combinations asks of it (settings.go)
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

// inGraph is the strategy of a run whose replicas are all devices of this process: the step
// function, Backward's gradients, their mean over the devices (XLA's sharding inserts the
// all-reduce), accumulation, clipping and the optimizer update are one compiled graph
// (strategy.InGraph). The variables are replicated on the devices by XLA (with
// Config.Sharding some are sharded over them instead: sharding.go), so they are equal by
// construction, and the devices' evaluation rows are already together.
type inGraph struct{}

func (inGraph) newStep(t *TrainStep) strategy.Runner {
	return strategy.NewInGraph(t.job.env(), runnerStep{t})
}
func (inGraph) shardsOverProcesses() bool                 { return false }
func (inGraph) syncVariables(*Job) (bool, error)          { return false, nil }
func (inGraph) gather(local *Gathered) (*Gathered, error) { return local, nil }

// planSharding: Config.Sharding over the devices, when the job shards variables over them.
func (inGraph) planSharding(j *Job) (string, int) {
	if j.shardsVariables() {
		return j.acc.shard.String(), j.numDevices()
	}
	return "no", 1
}

// hostReduced is the strategy of a run over several processes: each step's runner is a
// strategy.Host (a gradients graph, the gradients summed on the host through the process
// group, the update) given the reduction of the mean gradient: the exact float32 all-reduce,
// or, under Config.GradientCompression, 16-bit floats (collective.Compressed). Every process
// thus applies the same update to the same variables (made rank 0's by syncVariables at
// Prepare and after the first execution) and the variables stay equal on all processes.
// Evaluation rows are all-gathered (gatherRanks).
type hostReduced struct {
	grp   collective.Group
	codec *collective.Codec // Config.GradientCompression (nil: the exact float32 all-reduce)
}

// newStep hands the step the reducer the settings chose: 16-bit compressed or exact (a new
// one per step: the compressed one keeps its buffers).
func (h hostReduced) newStep(t *TrainStep) strategy.Runner {
	var r strategy.Reducer = collective.Exact{}
	if h.codec != nil {
		r = collective.Compressed(h.codec)
	}
	return strategy.NewHost(t.job.env(), runnerStep{t}, strategy.Mean(r))
}

// syncVariables makes the variables rank 0's, but for the rank-local accumulators and the
// model's buffers, which each process's first step changed on its own part of the batch and
// which the update makes rank 0's (strategy.Buffers): comparing them would rerun that step.
func (h hostReduced) syncVariables(j *Job) (bool, error) {
	env := j.env()
	return collective.SyncVariables(h.grp, j.store, func(path string) bool { return isAccumulator(path) || env.Buffers.Has(path) })
}
func (h hostReduced) gather(local *Gathered) (*Gathered, error) { return gatherRanks(h.grp, local) }
func (hostReduced) shardsOverProcesses() bool                   { return false }
func (hostReduced) planSharding(*Job) (string, int)             { return "no", 1 }

// zero1 is hostReduced with the optimizer state sharded over the processes (ZeRO stage 1,
// Config.Sharding over several processes, under every stage). The gradients graph, the
// accumulation and the loss and weight bookkeeping are hostReduced's (the same strategy.Host
// runs them); only the update's reduction differs (strategy.Zero1Reduction: a reduce-scatter,
// the update of this rank's slices of the optimizer state, an all-gather of the weights).
// The bytes crossing processes are those of hostReduced's all-reduce (a reduce-scatter and an
// all-gather are its two halves). The job's sharded state (strategy.Zero1) is shared by its
// TrainSteps and kept by the Accelerator, by Store, for CompleteStore and ResidentBytes.
type zero1 struct{ hostReduced }

func (z zero1) newStep(t *TrainStep) strategy.Runner {
	return strategy.NewHost(t.job.env(), runnerStep{t}, strategy.Zero1Reduction(t.job.zero1For))
}

func (zero1) shardsOverProcesses() bool { return true }

// planSharding: the optimizer state over the processes, whatever the stage.
func (z zero1) planSharding(*Job) (string, int) { return shardZero1.String(), z.grp.Size() }

// zero1For returns the job's sharded state for the trainable variables vars, making it on the
// first update (or the first memory plan).
func (j *Job) zero1For(vars []*model.Variable, lossDType dtypes.DType) (*strategy.Zero1, error) {
	if st := j.acc.shardedState[j.store]; st != nil {
		if !slices.Equal(st.Vars(), vars) {
			return nil, errors.New("accelerator: with Config.Sharding over several processes every TrainStep of a job " +
				"must train the same variables (its optimizer state is sharded once)")
		}
		return st, nil
	}
	st, err := strategy.NewZero1(j.env(), j.update(), j.hostGuard(), vars, lossDType)
	if err != nil {
		return nil, err
	}
	if j.acc.shardedState == nil {
		j.acc.shardedState = map[*model.Store]*strategy.Zero1{}
	}
	j.acc.shardedState[j.store] = st
	return st, nil
}

// CompleteStore gives a checkpoint the whole state of the job whose Store is store, for Save
// to write in the usual format (checkpoint.StoreCompleter). With Config.Sharding over several
// processes, each process holds only its slice of the optimizer state, outside the Store:
// every process calls CompleteStore (a collective), the slices are all-gathered, and on the
// main process the whole tensors are added to store under their usual paths; release removes
// them again after the write. For any other job it adds nothing.
//
// Loading needs no counterpart: a checkpoint's whole optimizer state, loaded into the Store,
// is sliced out of it before the next update.
//
// Kept exported: package checkpoint reaches it through its StoreCompleter interface (a method
// of another package's interface must be exported), without importing accelerator; programs
// need not call it, checkpoint.Save does.
func (a *Accelerator) CompleteStore(store *model.Store) (release func(), err error) {
	st := a.shardedState[store]
	if st == nil {
		return func() {}, nil
	}
	return st.Complete(store)
}

// bareTrainStep is fn as a step that only runs the job's strategy: no memory plan, Verify
// nor micro-batches (Verify's one-device reference update runs in one).
func (j *Job) bareTrainStep(fn StepFn) *TrainStep {
	t := &TrainStep{job: j, fn: fn}
	t.runner = j.strategy.newStep(t)
	t.stage = func(gb *data.GlobalBatch, args []any, accumulate bool) (Loss, error) {
		l, err := t.runner.Run(gb, args, accumulate)
		return Loss{t: l}, err
	}
	return t
}
