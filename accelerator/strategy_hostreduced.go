package accelerator

import (
	"fmt"
	"math"
	"slices"
	"time"

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
type hostReduced struct{ grp group }

func (h hostReduced) newStep(t *TrainStep) stepRunner { return &hostReducedStep{t: t, grp: h.grp} }
func (h hostReduced) syncVariables(j *Job) (bool, error) {
	return syncVariables(h.grp, j.store)
}
func (h hostReduced) gather(local *Gathered) (*Gathered, error) { return gatherRanks(h.grp, local) }

// hostReducedStep holds a TrainStep's graphs and host buffers under hostReduced.
type hostReducedStep struct {
	t     *TrainStep
	grp   group
	grads *model.Exec // the update's batch: loss, weight, then the weighted gradient sum of each variable
	accum *model.Exec // a batch before the update (accumulation): loss and weight; the sums stay on the devices
	apply *model.Exec // applies the all-reduced mean gradients
	vars  []*model.Variable
	// gradBytes is the bytes of the gradients all-reduced per update.
	gradBytes int64
	lossDType dtypes.DType
	bufs      [][]float32 // host buffers of the update's all-reduce: one per variable, then {weight x loss, weight}
	pair      []float64   // host buffer of the loss's all-reduce on the batches before the update
	window    float64     // total weight, over all processes, of the update's batches so far
	local     float64     // this process's part of window
	synced    bool        // the variables were made equal on all processes
	// zero, under Config.Sharding over several processes, replaces the update's all-reduce
	// and apply graph by ZeRO-1's reduce-scatter, update of this rank's slices and all-gather
	// (strategy_zero1.go); nil for hostReduced.
	zero *zero1Sync
	comp *compressor // Config.GradientCompression's all-reduce (nil: exact float32)
}

// hostReducedFault is set only by tests: it breaks the reduction of the gradients on purpose,
// to show that Config.Verify catches it. skipBucket = i+1 leaves variable i's gradients out of
// the all-reduce (each process keeps its own sum); unweightedRank = r+1 makes rank r send its
// mean gradient instead of its weighted sum. The zero value breaks nothing.
var hostReducedFault struct{ skipBucket, unweightedRank int }

func (p *hostReducedStep) run(gb *data.GlobalBatch, args []any, accumulate bool) (Loss, error) {
	t, j := p.t, p.t.job
	var err error
	slot := &p.grads
	if accumulate {
		slot = &p.accum
	}
	tl := j.acc.tl
	name := "gradients"
	if *slot == nil {
		name = "compile+gradients"
		if *slot, err = j.newExec(p.gradsGraphFn(accumulate), layoutTrain); err != nil {
			return Loss{}, err
		}
	}
	span := tl.Start(name, "execute")
	outs, err := j.execCreatingVariables(&p.synced, func() ([]*tensors.Tensor, error) { return t.execTracing(*slot, gb, args) })
	span.End()
	if err != nil {
		return Loss{}, err
	}
	perDevice := 2
	if !accumulate {
		perDevice += len(p.vars)
	}
	if len(outs) != perDevice*j.numDevices() {
		finalizeAll(outs)
		return Loss{}, fmt.Errorf("accelerator: the gradient step returned %d outputs, want %d per device", len(outs), perDevice)
	}
	span = tl.Start("device-to-host", "execute")
	err = p.toHost(outs[:perDevice], accumulate)
	finalizeAll(outs)
	span.End()
	if err != nil {
		return Loss{}, err
	}
	syncStart := time.Now()
	var lossSum, weight float64 // this batch's weight x loss and weight, over all processes
	if accumulate {
		// Only the loss crosses processes; the gradients stay in the accumulators.
		err = p.grp.AllreduceFloat64(p.pair, OpSum)
		syncEnd := time.Now()
		t.stats.Sync += syncEnd.Sub(syncStart)
		if tl != nil {
			tl.Add("all-reduce loss", "collective", syncStart, syncEnd, "bytes", 8*len(p.pair))
		}
		if err != nil {
			return Loss{}, fmt.Errorf("accelerator: all-reducing the loss (%s): %w", batchPlace(gb), err)
		}
		t.stats.SyncedBytes += int64(8 * len(p.pair))
		lossSum, weight = p.pair[0], p.pair[1]
	} else if p.zero != nil {
		p.injectLossScaleFault()
		if lossSum, weight, err = p.zero.reduce(gb); err != nil {
			return Loss{}, err
		}
	} else {
		// The update: the gradients and, in the same buckets, the loss.
		p.injectLossScaleFault()
		err = p.allreduceGradients()
		syncEnd := time.Now()
		t.stats.Sync += syncEnd.Sub(syncStart)
		if tl != nil {
			tl.Add("all-reduce gradients", "collective", syncStart, syncEnd, "bytes", p.gradBytes+p.lossBytes(), "variables", len(p.vars))
		}
		if err != nil {
			return Loss{}, fmt.Errorf("accelerator: all-reducing the gradients (%s): %w", batchPlace(gb), err)
		}
		t.stats.SyncedBytes += p.gradBytes + p.lossBytes()
		lossSum, weight = float64(p.bufs[len(p.vars)][0]), float64(p.bufs[len(p.vars)][1])
		if p.comp != nil { // the loss went alone, in float64; the gradients are the mean already
			lossSum, weight = p.pair[0], p.pair[1]
		}
	}
	if weight <= 0 {
		return Loss{}, fmt.Errorf("accelerator: global batch %d of epoch %d has no real example on any process", gb.Index+1, gb.Epoch+1)
	}
	loss := Loss{t: tensors.FromValue(lossSum / weight)}
	if accumulate {
		p.window += weight
		return loss, nil
	}
	inv := float32(1 / (p.window + weight))
	if p.comp != nil {
		inv = 1 // divided by the total weight before the 16-bit encoding
	}
	p.window, p.local = 0, 0
	if p.zero != nil {
		return loss, p.zero.apply(gb, inv)
	}
	for _, g := range p.bufs[:len(p.vars)] {
		for k := range g {
			g[k] *= inv
		}
	}
	name = "apply"
	if p.apply == nil {
		name = "compile+apply"
	}
	if err = p.newApply(); err != nil {
		return Loss{}, err
	}
	nd := j.numDevices()
	applyArgs := make([]any, 0, nd*len(p.vars))
	for range nd { // every device gets its own copy (replicated inputs, device-major)
		for i, v := range p.vars {
			applyArgs = append(applyArgs, tensors.FromFlatDataAndDimensions(p.bufs[i], v.Shape().Dimensions...))
		}
	}
	span = tl.Start(name, "execute")
	applied, err := p.apply.Exec(applyArgs...)
	span.End()
	if err != nil {
		return Loss{}, fmt.Errorf("accelerator: applying the all-reduced gradients (%s): %w", batchPlace(gb), err)
	}
	finalizeAll(applied)
	return loss, nil
}

// newApply creates the apply graph's executor, if not yet made (by run or compileApply).
func (p *hostReducedStep) newApply() error {
	if p.apply != nil {
		return nil
	}
	var err error
	p.apply, err = p.t.job.newExec(p.applyGraphFn, layoutApply)
	return err
}

// allreduceGradients sums the weighted gradient sums of all processes, in place.
func (p *hostReducedStep) allreduceGradients() error {
	if p.comp != nil {
		return p.allreduceCompressed()
	}
	f := hostReducedFault
	if f == (struct{ skipBucket, unweightedRank int }{}) {
		return p.grp.AllreduceSum(p.bufs)
	}
	if f.unweightedRank == p.grp.Rank()+1 && p.local > 0 {
		for _, g := range p.bufs[:len(p.vars)] {
			for k := range g {
				g[k] /= float32(p.local)
			}
		}
	}
	bufs := p.bufs
	if i := f.skipBucket - 1; i >= 0 && i < len(bufs) {
		bufs = append(slices.Clone(bufs[:i]), bufs[i+1:]...)
	}
	return p.grp.AllreduceSum(bufs)
}

// toHost reads one device's outputs: the loss and the weight, as {weight x loss, weight}, and,
// on the update's batch, the weighted gradient sums, into the buffers of the all-reduce.
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
	p.local += w
	p.pair[0], p.pair[1] = w*loss, w
	if accumulate {
		return nil
	}
	if p.zero != nil {
		if err := p.zero.begin(float32(w*loss), float32(w)); err != nil {
			return err
		}
	} else if p.bufs == nil {
		p.bufs = make([][]float32, len(p.vars)+1)
		for i, v := range p.vars {
			p.bufs[i] = make([]float32, v.Shape().Size())
			p.gradBytes += int64(4 * v.Shape().Size())
		}
		p.bufs[len(p.vars)] = make([]float32, 2)
		if c := p.t.job.acc.codec; c != nil {
			p.comp = newCompressor(c, int(p.gradBytes/4), p.grp.Size())
			p.gradBytes = p.comp.bytes()
		}
		p.t.stats.SyncBytes = p.gradBytes
	}
	if p.zero == nil {
		p.bufs[len(p.vars)][0], p.bufs[len(p.vars)][1] = float32(w*loss), float32(w)
	}
	for i, v := range p.vars {
		g := outs[2+i]
		if g.DType() != dtypes.Float32 {
			return fmt.Errorf("accelerator: the gradient of %s is %s; runs over several processes need float32 variables",
				v.Path(), g.DType())
		}
		place := func(flat []float32) { copy(p.bufs[i], flat) }
		if p.zero != nil {
			place = func(flat []float32) { p.zero.place(i, flat) }
		}
		if err := tensors.ConstFlatData(g, place); err != nil {
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
