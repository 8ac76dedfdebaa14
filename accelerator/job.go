package accelerator

import (
	"iter"
	"reflect"
	"slices"

	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute/distributed"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/gomlx/gomlx/support/exceptions"
	"github.com/pkg/errors"
)

// Batch is what a step function sees: the whole global batch as graph nodes. Each input has
// the batch on axis 0; under the hood that axis is sharded over the devices, each device
// holding the per-device batch that the loader assigned to it.
type Batch struct {
	// Inputs are the collated model inputs, in the loader's order.
	Inputs []*Node
	// Labels are the labels ([B]), or nil when the loader has none.
	Labels *Node
	// Mask is a [B] bool node: true for real examples, false for padding. Pass it to GoMLX
	// losses as an extra label (loss.SparseCategoricalCrossEntropyLogits([]*Node{b.Labels,
	// b.Mask}, ...)) so padding never counts.
	Mask *Node
}

// StepFn builds one training step: it computes the loss of the batch, calls
// Accelerator.Backward on it, and returns it. It is traced once per input shape (like a
// compiled function), so it must build the same computation every time. Step functions are
// told apart by their code: closures made from the same function literal share one compiled
// step, so a literal written inside the training loop is compiled once, not every step.
type StepFn func(s *model.Scope, b Batch) *Node

// EvalFn builds one evaluation step: it returns per-example outputs, each with the batch on
// axis 0 (for example the logits [B, C], or per-example losses [B]).
type EvalFn func(s *model.Scope, b Batch) []*Node

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

	execs      map[execKey]*model.Exec
	microSteps int64
	inputRanks []int
}

type execKey struct {
	fn   uintptr
	kind int // 0 train-apply, 1 train-accumulate, 2 eval
}

// Prepare binds a model's variables (anything with a model.Store, such as a *model.Store or
// a model object exposing Store()), an optimizer and a data source for data-parallel
// training: the source is split over all replicas (devices x processes), the variables are
// replicated on every device, and each step's batch is sharded along its batch axis.
// On the main process it prints the batch plan:
//
//	goaccel: per-device batch 64 x 4 devices x 1 process = global batch 256; 150 steps/epoch
func (a *Accelerator) Prepare(m model.StoreProvider, opt optimizer.Interface, src data.Source, opts ...PrepareOption) (*Job, error) {
	if m == nil || m.Store() == nil {
		return nil, errors.New("accelerator.Prepare: the model has no model.Store")
	}
	if opt == nil {
		return nil, errors.New("accelerator.Prepare: the optimizer is nil (e.g. optimizer.Adam().LearningRate(2e-5).Done())")
	}
	j := &Job{acc: a, store: m.Store(), opt: opt, src: src, execs: map[execKey]*model.Exec{}}
	j.opts.accumulate = 1
	for _, o := range opts {
		o(&j.opts)
	}
	if j.opts.accumulate < 1 {
		return nil, errors.Errorf("accelerator.Prepare: gradient accumulation must be >= 1 step, got %d", j.opts.accumulate)
	}
	if j.opts.clipNorm < 0 {
		return nil, errors.Errorf("accelerator.Prepare: clip norm must be >= 0, got %g", j.opts.clipNorm)
	}
	if err := a.applyPrecision(m); err != nil {
		return nil, err
	}
	root := j.store.RootScope()
	if _, found := j.store.GetParam(initializer.ParamInitialSeed); !found {
		root.SetParam(initializer.ParamInitialSeed, a.seed)
	}
	if err := seedRNG(j.store, a.seed); err != nil {
		return nil, errors.WithMessage(err, "accelerator.Prepare: seeding the model's random state")
	}
	if src != nil {
		if err := a.distribute(src); err != nil {
			return nil, err
		}
		bs := src.BatchSize()
		a.plan("goaccel: per-device batch %d x %d device(s) x %d process(es) = global batch %d; %d steps/epoch",
			bs, a.NumDevices(), a.NumProcesses(), bs*a.NumReplicas(), src.StepsPerEpoch())
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
		return errors.WithMessage(err, "accelerator: splitting the data over the replicas")
	}
	if src.BatchSize() <= 0 {
		return errors.Errorf("accelerator: the data source has batch size %d; it must be > 0", src.BatchSize())
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
func (j *Job) Batches() iter.Seq2[*data.Step, error] {
	if j.src == nil {
		return func(yield func(*data.Step, error) bool) {
			yield(nil, errors.New("accelerator: the job was prepared without a data source"))
		}
	}
	return j.src.Epoch()
}

// GlobalStep returns the number of optimizer updates applied so far (GoMLX's global_step).
func (j *Job) GlobalStep() int64 {
	v := j.store.GetVariable("/" + optimizer.GlobalStepVariableName)
	if v == nil || !v.HasValue() {
		return 0
	}
	t, err := v.Value()
	if err != nil {
		return 0
	}
	n, _ := t.Value().(int64)
	return n
}

// Loss is the scalar loss of a step. Reading it waits for the step to finish on the
// devices; not reading it lets steps queue up.
type Loss struct{ t *tensors.Tensor }

// Value copies the loss to the host.
func (l Loss) Value() float64 {
	if l.t == nil {
		return 0
	}
	switch v := l.t.Value().(type) {
	case float32:
		return float64(v)
	case float64:
		return v
	default:
		return 0
	}
}

// Step runs one training step (forward, backward, gradient sync, optimizer update) on all
// devices and returns the loss of the global batch (the mean over the global batch, as
// returned by fn). With gradient accumulation over k steps, the update happens on every k-th
// call.
func (j *Job) Step(step *data.Step, fn StepFn) (Loss, error) {
	if fn == nil {
		return Loss{}, errors.New("accelerator: Job.Step needs a step function")
	}
	kind := 0
	if j.opts.accumulate > 1 && (j.microSteps+1)%int64(j.opts.accumulate) != 0 {
		kind = 1
	}
	args, err := j.args(step)
	if err != nil {
		return Loss{}, err
	}
	exec, err := j.execFor(execKey{fn: reflect.ValueOf(fn).Pointer(), kind: kind}, func(s *model.Scope, inputs []*Node) []*Node {
		g := inputs[0].Graph()
		s.Store().SetTraining(g, true)
		st := &backwardState{job: j, accumulate: kind == 1}
		g.AttachState(backwardKey{}, st)
		loss := fn(s, j.unpack(inputs))
		if loss == nil {
			exceptions.Panicf("the step function returned a nil loss")
		}
		if !st.called {
			exceptions.Panicf("the step function never called Accelerator.Backward(s, loss): without it " +
				"no gradient is computed and no update is made; call it once on the batch loss")
		}
		if !loss.Shape().IsScalar() {
			exceptions.Panicf("the step function must return the scalar loss, got shape %s", loss.Shape())
		}
		return []*Node{loss}
	}, false)
	if err != nil {
		return Loss{}, err
	}
	outs, err := exec.Exec(args...)
	if err != nil {
		return Loss{}, errors.WithMessagef(err, "accelerator: training step (epoch %d, step %d) failed", step.Epoch, step.Index)
	}
	j.microSteps++
	for _, extra := range outs[1:] {
		_ = extra.FinalizeAll()
	}
	return Loss{t: outs[0]}, nil
}

// unpack turns the flat per-device parameter list back into a Batch.
func (j *Job) unpack(inputs []*Node) Batch {
	n := len(j.inputRanks)
	b := Batch{Inputs: inputs[:n], Mask: inputs[len(inputs)-1]}
	if len(inputs) == n+2 {
		b.Labels = inputs[n]
	}
	return b
}

// args flattens a step into the executor's arguments: device-major, each device's inputs,
// labels (if any) and mask.
func (j *Job) args(step *data.Step) ([]any, error) {
	if step == nil {
		return nil, errors.New("accelerator: nil step")
	}
	nd := j.acc.NumDevices()
	if len(step.Shards) != nd {
		return nil, errors.Errorf("accelerator: step has %d shard(s) but there are %d device(s); was the "+
			"source prepared by this Accelerator (Prepare/Evaluate split it)?", len(step.Shards), nd)
	}
	first := step.Shards[0]
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
		return nil, errors.Errorf("accelerator: batch inputs changed from ranks %v to %v", j.inputRanks, ranks)
	}
	var args []any
	for d, sh := range step.Shards {
		if len(sh.Inputs) != len(first.Inputs) || (sh.Labels == nil) != (first.Labels == nil) || sh.Mask == nil {
			return nil, errors.Errorf("accelerator: shard %d of step %d is not shaped like shard 0 (inputs, labels, mask)", d, step.Index)
		}
		for i, t := range sh.Inputs {
			if !t.Shape().Equal(first.Inputs[i].Shape()) {
				return nil, errors.Errorf("accelerator: input %d of shard %d has shape %s, shard 0 has %s: every device "+
					"must get the same per-device batch shape", i, d, t.Shape(), first.Inputs[i].Shape())
			}
			if t.Shape().Rank() == 0 || t.Shape().Dimensions[0] != sh.Size() {
				return nil, errors.Errorf("accelerator: input %d of shard %d has shape %s: axis 0 must be the batch (%d)",
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

// execFor returns (building it on first use) the executor for a step or eval function.
func (j *Job) execFor(key execKey, graphFn func(s *model.Scope, inputs []*Node) []*Node, eval bool) (*model.Exec, error) {
	if e, ok := j.execs[key]; ok {
		return e, nil
	}
	e, err := model.NewExec(j.acc.backend, j.store, graphFn)
	if err != nil {
		return nil, errors.WithMessage(err, "accelerator: creating the step executor")
	}
	if mesh := j.acc.mesh; mesh != nil {
		// Every input, the labels and the mask have the batch on axis 0: shard that axis over
		// the mesh and replicate the rest (a spec shorter than the rank replicates the
		// remaining axes; the last spec is reused for all inputs).
		batchSharded, err := distributed.BuildSpec(mesh).S(MeshAxis).Done()
		if err != nil {
			return nil, errors.WithMessage(err, "accelerator: building the batch sharding spec")
		}
		e.AutoSharding(mesh)
		e.WithInputShardingSpecs(batchSharded)
		if eval {
			e.WithOutputShardingSpecs(batchSharded) // per-example outputs stay on their device
		} else {
			e.WithOutputShardingSpecs(distributed.NewReplicatedShardingSpec(mesh)) // the scalar loss
		}
	}
	j.execs[key] = e
	return e, nil
}
