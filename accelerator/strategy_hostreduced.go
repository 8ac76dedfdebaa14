package accelerator

import (
	"fmt"
	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"math"

	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/gomlx/gomlx/support/exceptions"
)

// hostReduced is the strategy of a run over several processes. A training step runs as two
// graphs with the host in between:
//
//  1. gradients: forward and backward on this process's devices (XLA sharding averages the
//     gradients over the local devices, as in a single process), giving the loss, the weight
//     w_p of this process's part of the global batch (its real examples, or BackwardWeighted's
//     weight) and its gradient weighted by w_p;
//  2. on the host: on the batch that makes the update, one bucketed all-reduce (the group's
//     AllreduceSum) sums the weighted gradients and {w_p x loss, w_p} over all processes;
//     dividing by the total weight gives the mean over the real examples of the whole global
//     batch (of all k batches with accumulation): the number one process running them all
//     computes, and the loss of the global batch;
//     under Config.GradientCompression the loss and weight go first, exact, and the gradients,
//     divided by the total weight, as 16-bit floats (compress.go);
//  3. apply: the mean gradient goes back to the devices, where clipping, the learning-rate
//     schedule and the optimizer update run exactly as in a single process.
//
// With gradient accumulation over k batches, the k-1 batches before the update add their
// weighted gradients to accumulators on the devices (goaccel/grad_accum) and all-reduce only
// their {w_p x loss, w_p} (16 bytes, so that every batch's loss is the global batch's on every
// process): the gradients cross processes once per update, as with DDP's no_sync
// (StepStats.SyncBytes is that update's bytes).
//
// Every process thus applies the same update to the same variables (made rank 0's by
// syncVariables at Prepare and after the first execution) and the variables stay equal on all
// processes. Evaluation rows are all-gathered (gatherRanks).
type hostReduced struct {
	grp   collective.Group
	codec *collective.Codec // Config.GradientCompression (nil: the exact float32 all-reduce)
}

// newStep hands the step the reduction the settings chose: 16-bit compressed or exact.
func (h hostReduced) newStep(t *TrainStep) stepRunner {
	p := &hostReducedStep{t: t, grp: h.grp}
	if h.codec != nil {
		p.red = &compressedReduction{hostGradients: hostGradients{p: p}, codec: h.codec}
	} else {
		p.red = &exactReduction{hostGradients{p: p}}
	}
	return p
}

func (h hostReduced) syncVariables(j *Job) (bool, error) {
	return collective.SyncVariables(h.grp, j.store, isAccumulator)
}
func (h hostReduced) gather(local *Gathered) (*Gathered, error) { return gatherRanks(h.grp, local) }
func (hostReduced) planSharding(*Job) (string, int)             { return "no", 1 }

// hostReducedStep holds a TrainStep's graphs and host buffers under hostReduced (and zero1).
type hostReducedStep struct {
	t         *TrainStep
	grp       collective.Group
	red       reduction   // how the update's gradients cross processes and become the update
	grads     *model.Exec // the update's batch: loss, weight, then the weighted gradient sum of each variable
	accum     *model.Exec // a batch before the update (accumulation): loss and weight; the sums stay on the devices
	apply     *model.Exec // applies the all-reduced mean gradients (exactReduction, compressedReduction)
	vars      []*model.Variable
	lossDType dtypes.DType
	pair      []float64 // {weight x loss, weight} of the batch, all-reduced alone on the batches before the update
	window    float64   // total weight, over all processes, of the update's batches so far
	synced    bool      // the variables were made equal on all processes
}

func (p *hostReducedStep) run(gb *data.GlobalBatch, args []any, accumulate bool) (Loss, error) {
	if err := p.gradients(gb, args, accumulate); err != nil {
		return Loss{}, err
	}
	if accumulate {
		return p.accumulateLoss(gb)
	}
	lossSum, weight, err := p.red.reduce(gb, p.window)
	if err != nil {
		return Loss{}, err
	}
	if weight <= 0 {
		return Loss{}, noRealExample(gb)
	}
	total := p.window + weight
	p.window = 0
	return Loss{t: tensors.FromValue(lossSum / weight)}, p.red.apply(gb, total)
}

// gradients runs graph 1 on the batch and reads this process's loss, weight and (on the
// update's batch) gradients to the host: into p.pair and the reduction.
func (p *hostReducedStep) gradients(gb *data.GlobalBatch, args []any, accumulate bool) error {
	t, j := p.t, p.t.job
	slot := &p.grads
	if accumulate {
		slot = &p.accum
	}
	tl := j.acc.tl
	name := "gradients"
	if *slot == nil {
		name = "compile+gradients"
		var err error
		if *slot, err = j.newExec(p.gradsGraphFn(accumulate), layoutTrain); err != nil {
			return err
		}
	}
	span := tl.Start(name, "execute")
	outs, err := j.execCreatingVariables(&p.synced, func() ([]*tensors.Tensor, error) { return t.execTracing(*slot, gb, args) })
	span.End()
	if err != nil {
		return err
	}
	defer finalizeAll(outs)
	perDevice := 2
	if !accumulate {
		perDevice += len(p.vars)
	}
	if len(outs) != perDevice*j.numDevices() {
		return fmt.Errorf("accelerator: the gradient step returned %d outputs, want %d per device", len(outs), perDevice)
	}
	span = tl.Start("device-to-host", "execute")
	defer span.End()
	return p.toHost(outs[:perDevice], accumulate)
}

// accumulateLoss is a batch before the update: only its {w x loss, w} crosses processes (the
// gradients stay in the accumulators), so that its loss is the global batch's everywhere.
func (p *hostReducedStep) accumulateLoss(gb *data.GlobalBatch) (Loss, error) {
	err := p.t.timed().Do("all-reduce loss", int64(8*len(p.pair)), 0, func() error { return p.grp.AllreduceFloat64(p.pair, collective.Sum) })
	if err != nil {
		return Loss{}, fmt.Errorf("accelerator: all-reducing the loss (%s): %w", batchPlace(gb), err)
	}
	lossSum, weight := p.pair[0], p.pair[1]
	if weight <= 0 {
		return Loss{}, noRealExample(gb)
	}
	p.window += weight
	return Loss{t: tensors.FromValue(lossSum / weight)}, nil
}

// noRealExample is the error of a global batch whose every slot, on every process, is padding.
func noRealExample(gb *data.GlobalBatch) error {
	return fmt.Errorf("accelerator: global batch %d of epoch %d has no real example on any process", gb.Index+1, gb.Epoch+1)
}

// toHost reads one device's outputs: the loss and the weight, as {weight x loss, weight}, and,
// on the update's batch, the weighted gradient sums, into the reduction.
func (p *hostReducedStep) toHost(outs []*tensors.Tensor, accumulate bool) error {
	if p.pair == nil {
		p.pair = make([]float64, 2)
	}
	loss, err := scalarFloat(outs[0])
	if err != nil {
		return fmt.Errorf("accelerator: reading the loss: %w", err)
	}
	w, err := scalarFloat(outs[1])
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
	if err := p.red.begin(w*loss, w); err != nil {
		return err
	}
	for i, v := range p.vars {
		g := outs[2+i]
		if g.DType() != dtypes.Float32 {
			return fmt.Errorf("accelerator: the gradient of %s is %s; runs over several processes need float32 variables",
				v.Path(), g.DType())
		}
		if err := tensors.ConstFlatData(g, func(flat []float32) { p.red.place(i, flat) }); err != nil {
			return fmt.Errorf("accelerator: reading the gradient of %s: %w", v.Path(), err)
		}
	}
	return nil
}

// gradsGraphFn is graph 1: the user's step function with Backward computing the gradients
// only; it returns the loss and the batch's weight and, on the update's batch (accumulate
// false), each variable's gradient weighted by the batch's weight, plus, with accumulation,
// what the batches before it left in the accumulators (which it resets). With accumulate, the
// weighted gradients go to the accumulators instead.
func (p *hostReducedStep) gradsGraphFn(accumulate bool) func(s *model.Scope, inputs []*Node) []*Node {
	return func(s *model.Scope, inputs []*Node) []*Node {
		t, j := p.t, p.t.job
		g := inputs[0].Graph()
		s.Store().SetTraining(g, true)
		st := &backwardState{job: j, gradsOnly: true}
		g.AttachState(backwardKey{}, st)
		loss := t.traceUser(s, inputs, st)
		if _, ok := j.opt.(gradientOptimizer); !ok {
			exceptions.Panicf("accelerator: optimizer %T does not accept gradients (UpdateGraphWithGradients), so it cannot "+
				"be used over several processes; use one of GoMLX's optimizers (Adam, AdamW, SGD, RMSProp)", j.opt)
		}
		p.vars, p.lossDType = st.vars, loss.DType()
		out := []*Node{loss, st.weight}
		if j.accumulating() {
			sums, _ := accumulateWeighted(s.Store().RootScope(), g, st.vars, st.grads, st.weight, accumulate)
			return append(out, sums...)
		}
		for _, gr := range st.grads {
			out = append(out, Mul(gr, ConvertDType(st.weight, gr.DType())))
		}
		return out
	}
}

// applyGraphFn is graph 2: the all-reduced mean gradients (the inputs, one per variable)
// clipped and applied as Backward applies them in a single process.
func (p *hostReducedStep) applyGraphFn(s *model.Scope, inputs []*Node) []*Node {
	j := p.t.job
	g := inputs[0].Graph()
	for _, v := range p.vars {
		_ = v.NodeValue(g) // the optimizer updates the variables the graph uses, in Store order
	}
	root := s.Store().RootScope()
	j.applyGradients(root, g, inputs, p.lossDType)
	return []*Node{optimizer.GetGlobalStepVar(root).NodeValue(g)}
}
