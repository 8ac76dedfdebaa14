package accelerator

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"time"

	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute/distributed"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/gomlx/gomlx/support/exceptions"
)

// GraphBatch is what a step function sees: the whole global batch as graph nodes. Each input has
// the batch on axis 0; under the hood that axis is sharded over the devices, each device
// holding the per-device batch that the loader assigned to it.
type GraphBatch struct {
	// Inputs are the collated model inputs, in the loader's order.
	Inputs []*Node
	// Labels are the labels ([B]), or nil when the loader has none.
	Labels *Node
	// Mask is a [B] bool node: true for real examples, false for padding. Pass it to GoMLX
	// losses as an extra label (loss.SparseCategoricalCrossEntropyLogits([]*Node{b.Labels,
	// b.Mask}, ...)) so padding never counts.
	Mask *Node
}

// StepFn builds one training step: it computes the loss of the global batch, calls
// Accelerator.Backward on it, and returns it. Job.TrainStep turns it into a TrainStep, which
// traces and compiles it once per input shape, so it must build the same computation every
// time it is called. Values captured by a closure are baked into the compiled graph: a new
// value needs a new TrainStep.
type StepFn func(s *model.Scope, b GraphBatch) *Node

// EvalFn builds one evaluation step: it returns per-example outputs, each with the batch on
// axis 0 (for example the logits [B, C], or per-example losses [B]).
type EvalFn func(s *model.Scope, b GraphBatch) []*Node

// PrepareOption configures Prepare.
type PrepareOption func(*prepareOptions)

type prepareOptions struct {
	accumulate int
	clipNorm   float64
	schedule   func(updatesDone *Node) *Node
}

// WithGradientAccumulation accumulates gradients over k consecutive steps and applies one
// optimizer update with their mean on every k-th step (k >= 1).
func WithGradientAccumulation(k int) PrepareOption {
	return func(o *prepareOptions) { o.accumulate = k }
}

// WithClipGradNorm clips the (global-batch) gradients by their global L2 norm before the
// update, as torch.nn.utils.clip_grad_norm_. 0 disables clipping.
func WithClipGradNorm(maxNorm float64) PrepareOption {
	return func(o *prepareOptions) { o.clipNorm = maxNorm }
}

// WithLearningRateSchedule sets the learning rate of each update in the graph:
// schedule(updatesDone) gets the number of optimizer updates already applied (a float
// scalar, 0 for the first update) and returns the learning rate to use.
func WithLearningRateSchedule(schedule func(updatesDone *Node) *Node) PrepareOption {
	return func(o *prepareOptions) { o.schedule = schedule }
}

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
}

// Prepare binds a model's variables (anything with a model.Store, such as a *model.Store or
// a model object exposing Store()), an optimizer and a data source for data-parallel
// training: the source is split over all replicas (devices x processes), the variables are
// replicated on every device, and each step's batch is sharded along its batch axis.
// On the main process it prints the batch plan:
//
//	goaccel: per-device batch 64 x 4 device(s) x 1 process(es) = global batch 256; 150 batches/epoch
func (a *Accelerator) Prepare(m model.StoreProvider, opt optimizer.Interface, src data.Source, opts ...PrepareOption) (*Job, error) {
	if m == nil || m.Store() == nil {
		return nil, errors.New("accelerator: Prepare: the model has no model.Store")
	}
	if opt == nil {
		return nil, errors.New("accelerator: Prepare: the optimizer is nil (e.g. optimizer.Adam().LearningRate(2e-5).Done())")
	}
	j := &Job{acc: a, store: m.Store(), opt: opt, src: src}
	j.opts.accumulate = 1
	for _, o := range opts {
		o(&j.opts)
	}
	if j.opts.accumulate < 1 {
		return nil, fmt.Errorf("accelerator: Prepare: gradient accumulation must be >= 1 step, got %d", j.opts.accumulate)
	}
	if j.opts.clipNorm < 0 {
		return nil, fmt.Errorf("accelerator: Prepare: clip norm must be >= 0, got %g", j.opts.clipNorm)
	}
	if err := a.applyPrecision(m); err != nil {
		return nil, err
	}
	if _, err := j.syncVariables(); err != nil { // e.g. pretrained weights loaded before Prepare
		return nil, err
	}
	root := j.store.RootScope()
	if _, found := j.store.GetParam(initializer.ParamInitialSeed); !found {
		root.SetParam(initializer.ParamInitialSeed, a.seed)
	}
	if err := seedRNG(j.store, a.seed+int64(a.ProcessIndex())); err != nil { // dropout differs per process, as in DDP
		return nil, fmt.Errorf("accelerator: Prepare: seeding the model's random state: %w", err)
	}
	if src != nil {
		if err := a.distribute(src); err != nil {
			return nil, err
		}
		bs := src.BatchSize()
		steps := ""
		if k := j.opts.accumulate; k > 1 {
			steps = fmt.Sprintf(" (gradient accumulation %d: %d steps/epoch)", k, src.BatchesPerEpoch()/k)
		}
		a.plan("goaccel: per-device batch %d x %d device(s) x %d process(es) = global batch %d; %d batches/epoch%s",
			bs, a.NumDevices(), a.NumProcesses(), bs*a.NumReplicas(), src.BatchesPerEpoch(), steps)
	}
	return j, nil
}

// distribute splits src over this Accelerator's replicas.
func (a *Accelerator) distribute(src data.Source) error {
	ranks := make([]int, a.NumDevices())
	for i := range ranks {
		ranks[i] = a.ProcessIndex()*a.NumDevices() + i
	}
	if err := src.Distribute(a.NumReplicas(), ranks); err != nil {
		return fmt.Errorf("accelerator: splitting the data over the replicas: %w", err)
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

// Batches returns one pass (an epoch) over the training data, one global step at a time.
// The epoch advances by itself when a pass ends: there is no SetEpoch to forget.
func (j *Job) Batches() iter.Seq2[*data.GlobalBatch, error] {
	if j.src == nil {
		return func(yield func(*data.GlobalBatch, error) bool) {
			yield(nil, errors.New("accelerator: the job was prepared without a data source"))
		}
	}
	return j.src.Epoch()
}

// GlobalStep returns the number of optimizer updates applied so far (GoMLX's global_step
// variable): 0 before the first update.
func (j *Job) GlobalStep() (int64, error) {
	v := j.store.GetVariable("/" + optimizer.GlobalStepVariableName)
	if v == nil || !v.HasValue() {
		return 0, nil
	}
	t, err := v.Value()
	if err != nil {
		return 0, fmt.Errorf("accelerator: reading the global step: %w", err)
	}
	f, err := scalarFloat(t)
	if err != nil {
		return 0, fmt.Errorf("accelerator: reading the global step: %w", err)
	}
	return int64(f), nil
}

// Loss is the scalar loss of a training step. Reading it waits for the step to finish on
// the devices; not reading it lets steps queue up.
type Loss struct{ t *tensors.Tensor }

// Value copies the loss to the host as a float64, whatever its dtype (float32, float64,
// bfloat16, float16). A loss that cannot be read is an error, never a quiet 0.
func (l Loss) Value() (float64, error) {
	if l.t == nil {
		return math.NaN(), errors.New("accelerator: Loss.Value: the loss of a failed or missing step")
	}
	v, err := scalarFloat(l.t)
	if err != nil {
		return math.NaN(), fmt.Errorf("accelerator: Loss.Value: %w", err)
	}
	return v, nil
}

// scalarFloat reads a one-element tensor of any numeric dtype as a float64.
func scalarFloat(t *tensors.Tensor) (float64, error) {
	if t.Shape().Size() != 1 {
		return math.NaN(), fmt.Errorf("want a scalar, got shape %s", t.Shape())
	}
	var out float64
	var ok bool
	if err := t.ConstFlatData(func(flat any) {
		var vals []float64
		if vals, ok = asFloat64s(flat); ok {
			out = vals[0]
		}
	}); err != nil {
		return math.NaN(), err
	}
	if !ok {
		return math.NaN(), fmt.Errorf("a %s value cannot be read as a number", t.DType())
	}
	return out, nil
}

// TrainStep is a training step function compiled for this Job's devices: build it once with
// Job.TrainStep and run it on every global batch. It keeps its own compiled graphs (one per
// input shape, plus a second graph for the batches that only accumulate gradients), so two
// TrainSteps never share a graph, even when they were made by the same code.
type TrainStep struct {
	job   *Job
	fn    StepFn
	apply *model.Exec // forward, backward, gradient sync and optimizer update
	accum *model.Exec // with gradient accumulation: adds the gradients, no update
	// classes is the class count the loss requires of the labels (0: none), known once the
	// step was traced; tracing checks the batch being traced.
	classes int
	tracing *data.GlobalBatch
	procs   procStep // the graphs and buffers of runs over several processes
}

// TrainStep returns fn compiled as a training step of this Job, the way GoMLX's
// model.NewExec compiles a graph function: build it once, outside the training loop, then
// call Run for every global batch.
//
//	train := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *graph.Node {
//	    l := accelerator.CrossEntropy(logits(s, b.Inputs[0]), b.Labels, b.Mask)
//	    acc.Backward(s, l)
//	    return l
//	})
//	for gb, err := range job.Batches() {
//	    loss, err := train.Run(gb)
//	}
func (j *Job) TrainStep(fn StepFn) *TrainStep { return &TrainStep{job: j, fn: fn} }

// Run runs the step on one global batch (forward, backward, gradient sync and optimizer
// update on all devices) and returns the loss of the global batch, as returned by the step
// function (a mean over the global batch's real examples). With gradient accumulation over k
// batches, the update happens on every k-th call.
func (t *TrainStep) Run(gb *data.GlobalBatch) (Loss, error) {
	j := t.job
	if t.fn == nil {
		return Loss{}, errors.New("accelerator: TrainStep.Run: the step function is nil")
	}
	accumulate := j.opts.accumulate > 1 && (j.batchesRun+1)%int64(j.opts.accumulate) != 0
	args, err := j.args(gb)
	if err != nil {
		return Loss{}, err
	}
	slot := &t.apply
	if accumulate {
		slot = &t.accum
	}
	if err := checkLabels(gb, t.classes); err != nil {
		return Loss{}, err
	}
	if j.acc.grp.Size() > 1 {
		return t.runProcesses(gb, args, accumulate)
	}
	if *slot == nil {
		*slot, err = j.newExec(t.graphFn(accumulate), layoutTrain)
		if err != nil {
			return Loss{}, err
		}
	}
	t.tracing = gb
	start := time.Now()
	outs, err := (*slot).Exec(args...)
	t.tracing = nil
	t.procs.stats.Steps++
	t.procs.stats.Total += time.Since(start)
	if err != nil {
		return Loss{}, fmt.Errorf("accelerator: training step (%s) failed: %w", batchPlace(gb), err)
	}
	j.batchesRun++
	for _, extra := range outs[1:] {
		_ = extra.FinalizeAll()
	}
	return Loss{t: outs[0]}, nil
}

// graphFn wraps the user's step function into the graph function compiled by model.Exec.
func (t *TrainStep) graphFn(accumulate bool) func(s *model.Scope, inputs []*Node) []*Node {
	j := t.job
	return func(s *model.Scope, inputs []*Node) []*Node {
		g := inputs[0].Graph()
		s.Store().SetTraining(g, true)
		st := &backwardState{job: j, accumulate: accumulate}
		g.AttachState(backwardKey{}, st)
		return []*Node{t.traceUser(s, inputs, st)}
	}
}

// traceUser calls the user's step function on the graph's inputs and checks what it did.
func (t *TrainStep) traceUser(s *model.Scope, inputs []*Node, st *backwardState) *Node {
	b := t.job.unpack(inputs)
	loss := t.fn(s, b)
	if loss == nil {
		exceptions.Panicf("the step function returned a nil loss")
	}
	if t.classes = labelClasses(b); t.classes > 0 {
		if err := checkLabels(t.tracing, t.classes); err != nil {
			panic(err) // before the first execution: no update is made
		}
	}
	if !st.called {
		exceptions.Panicf("the step function never called Accelerator.Backward(s, loss): without it " +
			"no gradient is computed and no update is made; call it once on the batch loss")
	}
	if !loss.Shape().IsScalar() {
		exceptions.Panicf("the step function must return the scalar loss, got shape %s", loss.Shape())
	}
	return loss
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

// args flattens a step into the executor's arguments: device-major, each device's inputs,
// labels (if any) and mask.
func (j *Job) args(gb *data.GlobalBatch) ([]any, error) {
	if gb == nil {
		return nil, errors.New("accelerator: nil global batch")
	}
	nd := j.acc.NumDevices()
	if len(gb.Shards) != nd {
		return nil, fmt.Errorf("accelerator: the global batch has %d shard(s) but there are %d device(s); was the "+
			"source prepared by this Accelerator (Prepare/Evaluate split it)?", len(gb.Shards), nd)
	}
	first := gb.Shards[0]
	if len(first.Inputs) == 0 {
		return nil, errors.New("accelerator: the batch has no inputs")
	}
	ranks := make([]int, len(first.Inputs))
	for i, t := range first.Inputs {
		ranks[i] = t.Shape().Rank()
	}
	if j.inputRanks == nil {
		j.inputRanks = ranks
	} else if !slices.Equal(ranks, j.inputRanks) {
		return nil, fmt.Errorf("accelerator: batch inputs changed from ranks %v to %v", j.inputRanks, ranks)
	}
	var args []any
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

// layout says how a compiled graph's inputs and outputs are laid out over the devices.
type layout int

const (
	layoutTrain layout = iota // batch-sharded inputs; replicated outputs (the loss, gradients)
	layoutEval                // batch-sharded inputs and per-example outputs
	layoutApply               // replicated inputs (all-reduced gradients) and outputs
)

// String is the compiled graph's name, as XLA's dumps and profiles show it.
func (l layout) String() string {
	switch l {
	case layoutTrain:
		return "goaccel_train_step"
	case layoutEval:
		return "goaccel_eval_step"
	default:
		return "goaccel_apply_update"
	}
}

// newExec builds the executor of a graph function, laid out over the devices.
func (j *Job) newExec(graphFn func(s *model.Scope, inputs []*Node) []*Node, lay layout) (*model.Exec, error) {
	e, err := model.NewExec(j.acc.backend, j.store, graphFn)
	if err != nil {
		return nil, fmt.Errorf("accelerator: creating the step executor: %w", err)
	}
	// A short, fixed name: XLA names its dumps (XLA_FLAGS=--xla_dump_to) and profiles after
	// it, and the default (the Go closure's full name) is too long for a file name.
	e.WithName(lay.String())
	if mesh := j.acc.mesh; mesh != nil {
		// Every input, the labels and the mask have the batch on axis 0: shard that axis over
		// the mesh and replicate the rest (a spec shorter than the rank replicates the
		// remaining axes; the last spec is reused for all inputs).
		batchSharded, err := distributed.BuildSpec(mesh).S(MeshAxis).Done()
		if err != nil {
			return nil, fmt.Errorf("accelerator: building the batch sharding spec: %w", err)
		}
		replicated := distributed.NewReplicatedShardingSpec(mesh)
		e.AutoSharding(mesh)
		switch lay {
		case layoutTrain:
			e.WithInputShardingSpecs(batchSharded)
			e.WithOutputShardingSpecs(replicated)
		case layoutEval:
			e.WithInputShardingSpecs(batchSharded)
			e.WithOutputShardingSpecs(batchSharded) // per-example outputs stay on their device
		case layoutApply:
			e.WithInputShardingSpecs(replicated)
			e.WithOutputShardingSpecs(replicated)
		}
	}
	return e, nil
}

// batchPlace names a global batch for people: "epoch E, batch B", both counted from 1 (data
// counts them from 0).
func batchPlace(gb *data.GlobalBatch) string {
	return fmt.Sprintf("epoch %d, batch %d", gb.Epoch+1, gb.Index+1)
}
