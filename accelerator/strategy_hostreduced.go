package accelerator

import (
	"fmt"
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
//     gradients over the local devices, as in a single process), giving the loss and the mean
//     gradient of this process's part of the global batch;
//  2. on the host: each process weights its loss and gradients by its number of real examples
//     n_p, and one bucketed all-reduce (the group's AllreduceSum) sums them, with the n_p,
//     over all processes; dividing by the sum gives the mean over the real examples of the
//     whole global batch — the same number a single process running the whole global batch
//     computes;
//  3. apply: the mean gradient goes back to the devices, where gradient accumulation, clipping,
//     the learning-rate schedule and the optimizer update run exactly as in a single process.
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
	t            *TrainStep
	grp          group
	grads        *model.Exec // forward and backward: the loss, then one gradient per variable
	apply, accum *model.Exec // apply the all-reduced gradients, or add them to the accumulators
	vars         []*model.Variable
	lossDType    dtypes.DType
	bufs         [][]float32 // host buffers of the all-reduce: the gradients, then {n*loss, n}
	synced       bool        // the variables were made equal on all processes
}

func (p *hostReducedStep) run(gb *data.GlobalBatch, args []any, accumulate bool) (Loss, error) {
	t, j := p.t, p.t.job
	var err error
	if p.grads == nil {
		if p.grads, err = j.newExec(p.gradsGraphFn, layoutTrain); err != nil {
			return Loss{}, err
		}
	}
	outs, err := j.execCreatingVariables(&p.synced, func() ([]*tensors.Tensor, error) { return t.execTracing(p.grads, gb, args) })
	if err != nil {
		return Loss{}, err
	}
	perDevice := 1 + len(p.vars)
	if len(outs) != perDevice*j.acc.NumDevices() {
		finalizeAll(outs)
		return Loss{}, fmt.Errorf("accelerator: the gradient step returned %d outputs, want %d per device", len(outs), perDevice)
	}
	n := float32(gb.NumReal())
	err = p.toHost(outs[:perDevice], n)
	finalizeAll(outs)
	if err != nil {
		return Loss{}, err
	}
	syncStart := time.Now()
	if err := p.grp.AllreduceSum(p.bufs); err != nil {
		return Loss{}, fmt.Errorf("accelerator: all-reducing the gradients (%s): %w", batchPlace(gb), err)
	}
	t.stats.Sync += time.Since(syncStart)
	sums := p.bufs[len(p.vars)]
	if sums[1] <= 0 {
		return Loss{}, fmt.Errorf("accelerator: global batch %d of epoch %d has no real example on any process", gb.Index+1, gb.Epoch+1)
	}
	inv := 1 / sums[1]
	loss := float64(sums[0]) / float64(sums[1])

	slot := &p.apply
	if accumulate {
		slot = &p.accum
	}
	if *slot == nil {
		if *slot, err = j.newExec(p.applyGraphFn(accumulate), layoutApply); err != nil {
			return Loss{}, err
		}
	}
	for _, g := range p.bufs[:len(p.vars)] {
		for k := range g {
			g[k] *= inv
		}
	}
	nd := j.acc.NumDevices()
	applyArgs := make([]any, 0, nd*len(p.vars))
	for range nd { // every device gets its own copy (replicated inputs, device-major)
		for i, v := range p.vars {
			applyArgs = append(applyArgs, tensors.FromFlatDataAndDimensions(p.bufs[i], v.Shape().Dimensions...))
		}
	}
	applied, err := (*slot).Exec(applyArgs...)
	if err != nil {
		return Loss{}, fmt.Errorf("accelerator: applying the all-reduced gradients (%s): %w", batchPlace(gb), err)
	}
	finalizeAll(applied)
	return Loss{t: tensors.FromValue(loss)}, nil
}

// toHost copies one device's loss and gradients into the all-reduce buffers, each weighted by
// n, the number of real examples of this process's part of the global batch.
func (p *hostReducedStep) toHost(outs []*tensors.Tensor, n float32) error {
	if p.bufs == nil {
		p.bufs = make([][]float32, len(p.vars)+1)
		for i, v := range p.vars {
			p.bufs[i] = make([]float32, v.Shape().Size())
			p.t.stats.SyncBytes += int64(4 * v.Shape().Size())
		}
		p.bufs[len(p.vars)] = make([]float32, 2)
	}
	loss, err := scalarFloat(outs[0])
	if err != nil {
		return fmt.Errorf("accelerator: reading the loss: %w", err)
	}
	if n == 0 {
		loss = 0 // a process whose part is all padding contributes nothing (not NaN)
	}
	p.bufs[len(p.vars)][0], p.bufs[len(p.vars)][1] = n*float32(loss), n
	for i, v := range p.vars {
		g := outs[1+i]
		if g.DType() != dtypes.Float32 {
			return fmt.Errorf("accelerator: the gradient of %s is %s; runs over several processes need float32 variables",
				v.Path(), g.DType())
		}
		dst := p.bufs[i]
		err := tensors.ConstFlatData(g, func(flat []float32) {
			for k, x := range flat {
				dst[k] = n * x
			}
		})
		if err != nil {
			return fmt.Errorf("accelerator: reading the gradient of %s: %w", v.Path(), err)
		}
	}
	return nil
}

// gradsGraphFn is graph 1: the user's step function with Backward computing the gradients only.
func (p *hostReducedStep) gradsGraphFn(s *model.Scope, inputs []*Node) []*Node {
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
	return append([]*Node{loss}, st.grads...)
}

// applyGraphFn is graph 2: the all-reduced gradients (the inputs, one per variable) applied
// as Backward applies them in a single process.
func (p *hostReducedStep) applyGraphFn(accumulate bool) func(s *model.Scope, inputs []*Node) []*Node {
	return func(s *model.Scope, inputs []*Node) []*Node {
		j := p.t.job
		g := inputs[0].Graph()
		for _, v := range p.vars {
			_ = v.NodeValue(g) // the optimizer updates the variables the graph uses, in Store order
		}
		root := s.Store().RootScope()
		j.applyGradients(root, g, p.vars, inputs, accumulate, p.lossDType)
		return []*Node{optimizer.GetGlobalStepVar(root).NodeValue(g)}
	}
}
