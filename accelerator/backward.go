package accelerator

import (
	"github.com/goaccel/goaccel/accelerator/internal/strategy"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Backward computes the gradients of loss with respect to every trainable variable, takes
// their mean over the global batch (all devices and processes), optionally accumulates them
// over several batches and clips them by global norm, and applies the optimizer update. Call
// it exactly once inside the step function given to Job.TrainStep, on the scalar loss of the
// global batch, a mean over its real examples (CrossEntropy and MaskedMean with b.Mask are):
//
//	train := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *graph.Node {
//	    l := myLoss(s, b)
//	    acc.Backward(s, l)
//	    return l
//	})
//
// The graph is written for the whole global batch and the batch axis is sharded over the
// devices (GoMLX AutoSharding), so the gradient is a mean over the global batch by
// construction and XLA inserts the all-reduce: the update does not depend on the device
// count. With gradient accumulation over k batches, each batch's gradient is weighted by its
// number of real examples (b.Mask's true rows) and the update uses the sum over the k batches
// divided by their total of real examples: the mean over the real examples of all k, the
// same update as one step on them concatenated, even when a batch is an epoch's padded tail.
// A loss that is a mean over something else (tokens) says its weight with BackwardWeighted.
// Like GoMLX graph building, Backward panics on misuse; TrainStep.Run turns the panic into an
// error.
func (a *Accelerator) Backward(s *model.Scope, loss *Node) { a.backward("Backward", s, loss, nil) }

// BackwardWeighted is Backward for a loss that is a mean over weight units of the global
// batch rather than over its real examples: a language model's loss averaged over the real
// tokens, with weight the number of those tokens (a scalar node of the step's graph, e.g.
// ReduceAllSum of the token mask). Under gradient accumulation, and across processes, each
// batch's gradient counts in proportion to its weight, so the update is the mean over all the
// tokens of the k batches, the update of one step on them concatenated:
//
//	tokens := graph.ReduceAllSum(graph.ConvertDType(tokenMask, dtypes.Float32))
//	l := graph.Div(graph.ReduceAllSum(graph.Mul(perToken, tokenMaskF)), graph.Max(tokens, graph.OnesLike(tokens)))
//	acc.BackwardWeighted(s, l, tokens)
//
// A batch of weight 0 contributes nothing. Backward(s, l) is BackwardWeighted(s, l, real
// examples of the batch).
func (a *Accelerator) BackwardWeighted(s *model.Scope, loss, weight *Node) {
	if weight == nil {
		exceptions.Panicf("accelerator: BackwardWeighted: the weight is nil; use Backward for a mean over the real examples")
	}
	a.backward("BackwardWeighted", s, loss, weight)
}

func (a *Accelerator) backward(op string, s *model.Scope, loss, weight *Node) {
	g := loss.Graph()
	st, _ := g.State(backwardKey{}).(*backwardState)
	if st == nil || st.job.acc != a {
		exceptions.Panicf("accelerator: %s: called outside a step function run by a TrainStep of this Accelerator", op)
	}
	if st.called {
		exceptions.Panicf("accelerator: %s: called twice in one step; sum the losses and call it once", op)
	}
	st.called = true
	if !loss.Shape().IsScalar() {
		exceptions.Panicf("accelerator: %s: the loss must be a scalar (a mean over the batch), got shape %s", op, loss.Shape())
	}
	if weight != nil && (!weight.Shape().IsScalar() || weight.Graph() != g) {
		exceptions.Panicf("accelerator: %s: the weight must be a scalar of the step's graph, got shape %s", op, weight.Shape())
	}
	if isDryTrace(g) {
		return // autocast's dry trace only creates the variables
	}
	j := st.job
	st.autocast.Restore() // the update reads and writes the float32 variables
	if j.acc.ComputeDType() != dtypes.Float32 && loss.DType().IsFloat() {
		loss = ConvertDType(loss, dtypes.Float32) // mixed precision: the update runs in float32
	}
	root := j.store.RootScope() // s may be autocast's shadow scope
	var vars []*model.Variable
	var values []*Node
	for v := range root.IterVariables() {
		switch {
		case !v.InUseByGraph(g):
		case v.Trainable:
			vars = append(vars, v)
			values = append(values, v.NodeValue(g))
		default: // read by the loss, before the update creates or reads the optimizer's variables
			j.noteFrozen(v)
		}
	}
	if len(vars) == 0 {
		exceptions.Panicf("accelerator: %s: the loss depends on no trainable variable", op)
	}
	if weight == nil {
		weight = ReduceAllSum(ConvertDType(st.mask, dtypes.Float32))
	}
	weight = StopGradient(ConvertDType(weight, dtypes.Float32))
	grads := Gradient(j.scaleLoss(op, root, loss), values...)
	if st.gradsOnly {
		st.vars, st.grads, st.weight = vars, grads, weight
		return
	}
	if _, ok := j.opt.(strategy.GradientOptimizer); !ok {
		if j.accumulating() || j.opts.clipNorm > 0 || j.acc.precision.ScalesLoss() {
			exceptions.Panicf("accelerator: optimizer %T does not accept gradients (UpdateGraphWithGradients), "+
				"so it cannot be used with gradient accumulation, clipping or fp16's loss scaling", j.opt)
		}
		j.opt.UpdateGraph(root, g, loss)
		return
	}
	if j.accumulating() {
		sums, total := accumulateWeighted(root, g, vars, grads, weight, st.accumulate)
		if st.accumulate {
			return
		}
		// The mean over the weight of the k batches (0 when they had none: no NaN).
		total = Max(total, Scalar(g, dtypes.Float32, 1e-30))
		for i, s := range sums {
			grads[i] = Div(s, ConvertDType(total, s.DType()))
		}
	}
	j.applyGradients(root, g, grads, loss.DType())
}

// accumulateWeighted is strategy.Accumulate: the gradient accumulators of the job's Store.
func accumulateWeighted(root *model.Scope, g *Graph, vars []*model.Variable, grads []*Node, weight *Node, accumulate bool) (sums []*Node, total *Node) {
	return strategy.Accumulate(root, g, vars, grads, weight, accumulate)
}

// update is the job's optimizer update (strategy.Update): its optimizer, WithClipGradNorm,
// WithLearningRateSchedule, and fp16's unscaling, which keeps the update only where the
// gradients are finite.
func (j *Job) update() *strategy.Update {
	opt, _ := j.opt.(strategy.GradientOptimizer) // the callers checked it accepts gradients
	return &strategy.Update{Optimizer: opt, ClipNorm: j.opts.clipNorm, Schedule: j.opts.schedule,
		Guard: func(root *model.Scope, g *Graph, grads []*Node) ([]*Node, func()) {
			grads, scaled := j.unscaleGradients(root, g, grads) // fp16: unscaled, the update kept only if finite
			return grads, scaled.Finish
		}}
}

// applyGradients clips and applies grads (one per trainable variable of the graph, in the
// Store's order: the mean gradient of the update) with the job's update.
func (j *Job) applyGradients(root *model.Scope, g *Graph, grads []*Node, lossDType dtypes.DType) {
	j.update().Apply(root, g, grads, lossDType)
}
