package accelerator

import (
	"errors"
	"fmt"
	"iter"
	"os"
	"slices"
	"time"

	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"github.com/goaccel/goaccel/accelerator/internal/precision"
	"github.com/goaccel/goaccel/accelerator/internal/strategy"
	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute/distributed"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// Job is a model, an optimizer and a data source prepared for data-parallel training on the
// Accelerator's devices.
type Job struct {
	acc   *Accelerator
	store *model.Store
	opt   optimizer.Interface
	src   data.Source
	opts  prepareOptions

	// batchesRun counts the training batches run so far: with gradient accumulation over k
	// batches, every k-th one applies the update.
	batchesRun int64
	inputRanks []int
	strategy   stepStrategy // how steps run over the replicas: chosen in Prepare
	// strategyEnv is what the strategy's runners are built from (env makes it).
	strategyEnv *strategy.Env
	// mesh is the devices the job's graphs run over: the Accelerator's, or nil for device 0
	// alone (one device, or Config.Verify's reference job).
	mesh *distributed.DeviceMesh
	// autocast is the dtype the job's graphs cast the model to (mixed precision on a model
	// without SetComputeDType, see precision.go); InvalidDType when they do not.
	autocast dtypes.DType
	memPlan  *MemoryPlan // the largest memory plan made (memcheck.go)
	// frozen are the paths of the frozen weights: the variables, not trainable, that a
	// training step's loss reads (Backward notes them; sharding.go's variableKind).
	frozen map[string]bool
	// layouts counts the changes of a variable's sharding spec (layOutVariables): a graph
	// traced before the latest takes its variables laid out as they were then.
	layouts int
	micro   int // WithAutoBatch's micro-batches per global batch (0: not chosen yet)
	// busy records this rank's busy time for the straggler report (straggler.go); nil until
	// the first step, and always with $GOACCEL_STRAGGLER_EVERY=0.
	busy *busyRecorder
}

// RankBusy returns every rank's busy time, indexed by rank, over the latest window of
// StragglerEvery updates (in a single process, its one rank): nil before the first window and with
// $GOACCEL_STRAGGLER_EVERY=0.
func (j *Job) RankBusy() []RankBusy {
	if j.busy == nil {
		return nil
	}
	return slices.Clone(j.busy.last)
}

// busyRecorder returns the job's recorder, nil when switched off. In a single process the
// exchange is the identity and names no rank: the figures still say where the time goes.
func (j *Job) busyRecorder() *busyRecorder {
	if j.busy != nil || j.acc.stragglerEvery == 0 {
		return j.busy
	}
	host, _ := os.Hostname()
	j.busy = &busyRecorder{every: j.acc.stragglerEvery, host: host}
	return j.busy
}

// backwardKey attaches a *backwardState to the graph of a training step.
type backwardKey struct{}

// backwardState is what Backward needs to know about the step being built: the TrainStep
// attaches it to the step's graph (trainstep.go), autocast adds its casts (precision.go) and
// Backward reads and fills it (backward.go).
type backwardState struct {
	job *Job
	// accumulate: the batch only adds its weighted gradients to the accumulators (no
	// optimizer update).
	accumulate bool
	called     bool
	// mask is the batch's mask ([B] bool): its count of true rows is the default weight.
	mask *Node
	// gradsOnly (a strategy that combines the gradients outside the graph, such as
	// hostReduced): Backward only computes the gradients and the batch's weight and leaves
	// them in vars/grads/weight; the strategy combines and applies them.
	gradsOnly bool
	vars      []*model.Variable
	grads     []*Node
	weight    *Node               // the batch's weight (a float32 scalar): its real examples, or BackwardWeighted's
	autocast  *precision.Autocast // mixed precision's casts of the variables (nil without autocast)
}

// numDevices is the number of devices the job's graphs run on.
func (j *Job) numDevices() int {
	if j.mesh == nil {
		return 1
	}
	return j.acc.NumDevices()
}

// batchPlan is the batch plan line Prepare prints: both batch sizes, and with a fixed global
// batch (data.LoaderConfig.GlobalBatchSize) that the replicas do not divide, its masked slots.
func (a *Accelerator) batchPlan(src data.Source, accumulate int) string {
	bs, slots := src.BatchSize(), src.BatchSize()*a.NumReplicas()
	global := slots
	if g, ok := src.(interface{ GlobalBatchSize() int }); ok {
		global = g.GlobalBatchSize()
	}
	sizes := fmt.Sprintf("global batch %d", global)
	if global != slots {
		sizes = fmt.Sprintf("%d slots: global batch %d + %d masked", slots, global, slots-global)
	}
	steps := ""
	if accumulate > 1 {
		steps = fmt.Sprintf(" (gradient accumulation %d: %d steps/epoch)", accumulate, src.BatchesPerEpoch()/accumulate)
	}
	return fmt.Sprintf("goaccel: per-device batch %d x %d device(s) x %d process(es) = %s; %d batches/epoch%s",
		bs, a.NumDevices(), a.NumProcesses(), sizes, src.BatchesPerEpoch(), steps)
}

// distribute splits src over this Accelerator's replicas.
func (a *Accelerator) distribute(src data.Source) error {
	replicas := make([]int, a.NumDevices()) // this process's replicas: rank x devices + device
	for d := range replicas {
		replicas[d] = a.ProcessIndex()*a.NumDevices() + d
	}
	if err := src.Distribute(a.NumReplicas(), replicas); err != nil {
		return fmt.Errorf("accelerator: splitting the data over the %d replicas: %w", a.NumReplicas(), err)
	}
	if src.BatchSize() <= 0 {
		return fmt.Errorf("accelerator: the data source has batch size %d; it must be > 0", src.BatchSize())
	}
	return nil
}

// Store returns the model.Store holding the model's variables and the optimizer's state.
func (j *Job) Store() *model.Store { return j.store }

// Source returns the training data source.
func (j *Job) Source() data.Source { return j.src }

// Accelerator returns the Accelerator the job was prepared on.
func (j *Job) Accelerator() *Accelerator { return j.acc }

// Batches returns one pass (an epoch) over the training data, one global batch at a time.
// The epoch advances by itself when a pass ends: there is no SetEpoch to forget.
func (j *Job) Batches() iter.Seq2[*data.GlobalBatch, error] {
	if j.src == nil {
		return func(yield func(*data.GlobalBatch, error) bool) {
			yield(nil, errors.New("accelerator: Job.Batches: the job was prepared without a data source"))
		}
	}
	epoch := j.src.Epoch()
	tl, busy := j.acc.tl, j.busyRecorder()
	if tl == nil && busy == nil {
		return epoch
	}
	// Each wait for the next global batch is a "loader wait" span of the timeline, and the
	// data wait of the straggler report.
	return func(yield func(*data.GlobalBatch, error) bool) {
		span := tl.Start("loader wait", "loader")
		start := time.Now()
		for gb, err := range epoch {
			span.End()
			if busy != nil {
				busy.data += time.Since(start)
			}
			if !yield(gb, err) {
				return
			}
			span = tl.Start("loader wait", "loader")
			start = time.Now()
		}
	}
}

// unpack turns the flat per-device parameter list back into a Batch.
func (j *Job) unpack(inputs []*Node) GraphBatch {
	n := len(j.inputRanks)
	b := GraphBatch{Inputs: inputs[:n], Mask: inputs[len(inputs)-1]}
	if len(inputs) == n+2 {
		b.Labels = inputs[n]
	}
	return b
}

// args flattens a global batch into the executor's arguments: device-major, each device's inputs,
// labels (if any) and mask.
func (j *Job) args(gb *data.GlobalBatch) ([]any, error) {
	if gb == nil {
		return nil, errors.New("accelerator: nil global batch")
	}
	nd := j.numDevices()
	if len(gb.Shards) != nd {
		return nil, fmt.Errorf("accelerator: the global batch has %d shard(s) but there are %d device(s); was the "+
			"source prepared by this Accelerator (Prepare/Evaluate split it)?", len(gb.Shards), nd)
	}
	first := gb.Shards[0]
	if len(first.Inputs) == 0 {
		return nil, errors.New("accelerator: the batch has no inputs")
	}
	if j.inputRanks == nil {
		j.inputRanks = inputRanks(first)
	} else if !sameRanks(first, j.inputRanks) {
		return nil, fmt.Errorf("accelerator: batch inputs changed from ranks %v to %v", j.inputRanks, inputRanks(first))
	}
	args := make([]any, 0, len(gb.Shards)*(len(first.Inputs)+2))
	for d, sh := range gb.Shards {
		if len(sh.Inputs) != len(first.Inputs) || (sh.Labels == nil) != (first.Labels == nil) || sh.Mask == nil {
			return nil, fmt.Errorf("accelerator: shard %d of batch %d is not shaped like shard 0 (inputs, labels, mask)", d, gb.Index+1)
		}
		for i, t := range sh.Inputs {
			if !t.Shape().Equal(first.Inputs[i].Shape()) {
				return nil, fmt.Errorf("accelerator: input %d of shard %d has shape %s, shard 0 has %s: every device "+
					"must get the same per-device batch shape", i, d, t.Shape(), first.Inputs[i].Shape())
			}
			if t.Shape().Rank() == 0 || t.Shape().Dimensions[0] != sh.Size() {
				return nil, fmt.Errorf("accelerator: input %d of shard %d has shape %s: axis 0 must be the batch (%d)",
					i, d, t.Shape(), sh.Size())
			}
			args = append(args, t)
		}
		if sh.Labels != nil {
			args = append(args, sh.Labels)
		}
		args = append(args, sh.Mask)
	}
	return args, nil
}

// inputRanks are the ranks of a batch's inputs.
func inputRanks(b *data.Batch) []int {
	ranks := make([]int, len(b.Inputs))
	for i, t := range b.Inputs {
		ranks[i] = t.Shape().Rank()
	}
	return ranks
}

// sameRanks reports whether b's inputs have the ranks ranks, without allocating (Job.args
// checks every batch).
func sameRanks(b *data.Batch, ranks []int) bool {
	if len(b.Inputs) != len(ranks) {
		return false
	}
	for i, t := range b.Inputs {
		if t.Shape().Rank() != ranks[i] {
			return false
		}
	}
	return true
}

// newExec builds the executor of a graph function, laid out over the job's devices.
func (j *Job) newExec(graphFn strategy.GraphFn, lay strategy.Layout) (*model.Exec, error) {
	return j.env().NewExec(graphFn, lay)
}

// env is what the job's runners are built from.
func (j *Job) env() *strategy.Env {
	if j.strategyEnv == nil {
		j.strategyEnv = &strategy.Env{Backend: j.acc.backend, Store: j.store, Mesh: j.mesh, Group: j.acc.grp, TL: j.acc.tl}
	}
	return j.strategyEnv
}

// batchPlace names a global batch for people: "epoch E, batch B", both counted from 1 (data
// counts them from 0).
func batchPlace(gb *data.GlobalBatch) string { return strategy.Place(gb) }

// accumulating reports whether the job's steps accumulate gradients over several batches
// (WithGradientAccumulation) or micro-batches (WithAutoBatch).
func (j *Job) accumulating() bool { return j.opts.accumulate > 1 || j.micro > 1 }

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
	// The first execution updated the buffers once already, on rank 0 from the variables
	// every process has now: the second must not update them again (BatchNorm's
	// num_batches_tracked would count the batch twice). Each process keeps its first
	// execution's; the update then makes them rank 0's (strategy.Buffers).
	buffers := &j.env().Buffers
	saved, err := buffers.Save()
	if err != nil {
		return nil, fmt.Errorf("accelerator: %w", err)
	}
	if outs, err = exec(); err != nil {
		return nil, err
	}
	if err := buffers.Restore(saved); err != nil {
		finalizeAll(outs)
		return nil, fmt.Errorf("accelerator: %w", err)
	}
	return outs, nil
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

// agreeOn checks that every process computed the same value (collective.Agree).
func (j *Job) agreeOn(what string, v int) error { return collective.Agree(j.acc.grp, what, v) }

// internalScope holds goaccel's own variables (gradient accumulators, last gradient norm).
const internalScope = strategy.InternalScope

// isAccumulator reports whether path is one of the gradient accumulators.
func isAccumulator(path string) bool { return strategy.IsAccumulator(path) }
