package strategy

import (
	"fmt"
	"math"

	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"github.com/goaccel/goaccel/accelerator/internal/memplan"
	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Host runs a step whose replicas span several processes, as two graphs with the host in
// between:
//
//  1. gradients: forward and backward on this process's devices (XLA sharding averages the
//     gradients over the local devices, as in a single process), giving the loss, the weight
//     w_p of this process's part of the global batch (its real examples, or BackwardWeighted's
//     weight) and its gradient weighted by w_p;
//  2. on the host, on the batch that makes the update, the Reduction: it sums the weighted
//     gradients and {w_p x loss, w_p} over all processes and makes the update from the sums
//     divided by the total weight, the mean over the real examples of the whole global batch
//     (of all k batches with accumulation): the number one process running them all computes.
//
// With gradient accumulation over k batches, the k-1 batches before the update add their
// weighted gradients to accumulators on the devices and all-reduce only their {w_p x loss,
// w_p} (16 bytes, so that every batch's loss is the global batch's on every process): the
// gradients cross processes once per update, as with DDP's no_sync.
type Host struct {
	env       *Env
	step      Step
	red       Reduction
	grads     *model.Exec // the update's batch: loss, weight, then the weighted gradient sum of each variable
	accum     *model.Exec // a batch before the update (accumulation): loss and weight; the sums stay on the devices
	vars      []*model.Variable
	lossDType dtypes.DType
	pair      []float64 // {weight x loss, weight} of the batch, all-reduced alone on the batches before the update
	window    float64   // total weight, over all processes, of the update's batches so far
	synced    bool      // the variables were made equal on all processes
}

// Reduction is how the update's weighted gradient sums cross processes and become the update
// under Host: Mean (the mean gradients applied on every device, given a Reducer), or the
// optimizer state sharded over the processes.
type Reduction interface {
	// Begin starts an update: this process's {w x loss, w} of the update's batch; the
	// gradients follow through Place.
	Begin(lossSum, weight float64) error
	// Place puts variable i's weighted gradient sum (flat, float32).
	Place(i int, flat []float32)
	// Reduce returns the global batch's w x loss and weight, summed over all processes;
	// window is the total weight of the update's batches before this one.
	Reduce(gb *data.GlobalBatch, window float64) (lossSum, weight float64, err error)
	// Apply makes the update from the reduced sums; total is the update's total weight over
	// all processes (> 0).
	Apply(gb *data.GlobalBatch, total float64) error
}

// NewHost returns the host runner of step; reduction makes its Reduction, given the runner.
func NewHost(env *Env, step Step, reduction func(h *Host) Reduction) *Host {
	h := &Host{env: env, step: step}
	h.red = reduction(h)
	return h
}

// Env is what the runner was built from.
func (p *Host) Env() *Env { return p.env }

// Step is the training step the runner runs.
func (p *Host) Step() Step { return p.step }

// Vars are the trainable variables of the step, in the Store's order (known once the
// gradients graph was traced).
func (p *Host) Vars() []*model.Variable { return p.vars }

// LossDType is the dtype of the step's loss (known once the gradients graph was traced).
func (p *Host) LossDType() dtypes.DType { return p.lossDType }

// Run runs one global batch: the gradients graph, then, on the update's batch, the reduction
// and the update.
func (p *Host) Run(gb *data.GlobalBatch, args []any, accumulate bool) (*tensors.Tensor, error) {
	if err := p.gradients(gb, args, accumulate); err != nil {
		return nil, err
	}
	if accumulate {
		return p.accumulateLoss(gb)
	}
	lossSum, weight, err := p.red.Reduce(gb, p.window)
	if err != nil {
		return nil, err
	}
	if weight <= 0 {
		return nil, noRealExample(gb)
	}
	total := p.window + weight
	p.window = 0
	if err := p.red.Apply(gb, total); err != nil {
		return nil, err
	}
	if err := p.env.Buffers.Sync(p.env); err != nil {
		return nil, errorAt("making the buffers rank 0's", gb, err)
	}
	return tensors.FromValue(lossSum / weight), nil
}

// graphFn is graph 1 of the update's batch or, with accumulate, of a batch before it.
func (p *Host) graphFn(accumulate bool) GraphFn {
	inner := p.step.GradientsGraph(accumulate, func(vars []*model.Variable, lossDType dtypes.DType) {
		p.vars, p.lossDType = vars, lossDType
	})
	return func(s *model.Scope, inputs []*Node) []*Node {
		out := inner(s, inputs)
		p.env.Buffers.Note(s.Store(), inputs[0].Graph())
		return out
	}
}

// gradients runs graph 1 on the batch and reads this process's loss, weight and (on the
// update's batch) gradients to the host: into p.pair and the reduction.
func (p *Host) gradients(gb *data.GlobalBatch, args []any, accumulate bool) error {
	slot := &p.grads
	if accumulate {
		slot = &p.accum
	}
	tl := p.env.TL
	name := "gradients"
	if *slot == nil {
		name = "compile+gradients"
		var err error
		if *slot, err = p.env.NewExec(p.graphFn(accumulate), Train); err != nil {
			return err
		}
	}
	span := tl.Start(name, "execute")
	outs, err := p.step.Exec(*slot, gb, args, &p.synced)
	span.End()
	if err != nil {
		return err
	}
	defer FinalizeAll(outs)
	perDevice := 2
	if !accumulate {
		perDevice += len(p.vars)
	}
	if len(outs) != perDevice*p.env.Devices() {
		return fmt.Errorf("accelerator: the gradient step returned %d outputs, want %d per device", len(outs), perDevice)
	}
	span = tl.Start("device-to-host", "execute")
	defer span.End()
	return p.toHost(outs[:perDevice], accumulate)
}

// accumulateLoss is a batch before the update: only its {w x loss, w} crosses processes (the
// gradients stay in the accumulators), so that its loss is the global batch's everywhere.
func (p *Host) accumulateLoss(gb *data.GlobalBatch) (*tensors.Tensor, error) {
	grp := p.env.Group
	err := p.step.Timed().Do("all-reduce loss", int64(8*len(p.pair)), 0, func() error { return grp.AllreduceFloat64(p.pair, collective.Sum) })
	if err != nil {
		return nil, errorAt("all-reducing the loss", gb, err)
	}
	lossSum, weight := p.pair[0], p.pair[1]
	if weight <= 0 {
		return nil, noRealExample(gb)
	}
	p.window += weight
	return tensors.FromValue(lossSum / weight), nil
}

// noRealExample is the error of a global batch whose every slot, on every process, is padding.
func noRealExample(gb *data.GlobalBatch) error {
	return fmt.Errorf("accelerator: global batch %d of epoch %d has no real example on any process", gb.Index+1, gb.Epoch+1)
}

// toHost reads one device's outputs: the loss and the weight, as {weight x loss, weight}, and,
// on the update's batch, the weighted gradient sums, into the reduction.
func (p *Host) toHost(outs []*tensors.Tensor, accumulate bool) error {
	if p.pair == nil {
		p.pair = make([]float64, 2)
	}
	loss, err := ScalarFloat(outs[0])
	if err != nil {
		return fmt.Errorf("accelerator: reading the loss: %w", err)
	}
	w, err := ScalarFloat(outs[1])
	if err != nil {
		return fmt.Errorf("accelerator: reading the batch's weight: %w", err)
	}
	if w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
		return fmt.Errorf("accelerator: the batch's weight is %g; it must be a finite count >= 0", w)
	}
	if w == 0 {
		loss = 0 // a process whose part is all padding contributes nothing (not NaN)
	}
	p.pair[0], p.pair[1] = w*loss, w
	if accumulate {
		return nil
	}
	if err := p.red.Begin(w*loss, w); err != nil {
		return err
	}
	for i, v := range p.vars {
		g := outs[2+i]
		if g.DType() != dtypes.Float32 {
			return fmt.Errorf("accelerator: the gradient of %s is %s; runs over several processes need float32 variables",
				v.Path(), g.DType())
		}
		if err := tensors.ConstFlatData(g, func(flat []float32) { p.red.Place(i, flat) }); err != nil {
			return fmt.Errorf("accelerator: reading the gradient of %s: %w", v.Path(), err)
		}
	}
	return nil
}

// Compile compiles the gradients graph that runs gb.
func (p *Host) Compile(gb *data.GlobalBatch, args []any, accumulate bool) (*Graph, error) {
	slot := &p.grads
	if accumulate {
		slot = &p.accum
	}
	return compileSlot(p.env, p.step, slot, p.graphFn(accumulate), gb, args)
}

// CompileApply is the reduction's apply graph compiled ahead, when it has one on the job's
// Store (ApplyCompiler).
func (p *Host) CompileApply() (*Graph, error) {
	if c, ok := p.red.(ApplyCompiler); ok {
		return c.CompileApply()
	}
	return nil, nil
}

// PlanState is the state the reduction keeps outside the Store, if it keeps any
// (StateOutsideStore).
func (p *Host) PlanState() ([]memplan.Var, error) {
	if o, ok := p.red.(StateOutsideStore); ok {
		return o.PlanState()
	}
	return nil, nil
}

// ScalarFloat reads a one-element tensor of any numeric dtype as a float64.
func ScalarFloat(t *tensors.Tensor) (float64, error) {
	if t.Shape().Size() != 1 {
		return math.NaN(), fmt.Errorf("want a scalar, got shape %s", t.Shape())
	}
	var out float64
	var ok bool
	if err := t.ConstFlatData(func(flat any) {
		var vals []float64
		if vals, ok = AsFloat64s(flat); ok {
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
