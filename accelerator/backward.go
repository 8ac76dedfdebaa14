package accelerator

import (
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/gomlx/gomlx/support/exceptions"
)

// gradientOptimizer is implemented by GoMLX's optimizers (Adam, AdamW, SGD, RMSProp): it
// applies given gradients, which lets goaccel sync, accumulate and clip them first.
type gradientOptimizer interface {
	UpdateGraphWithGradients(scope *model.Scope, grads []*Node, lossDType dtypes.DType)
}

// backwardKey attaches a *backwardState to the graph of a training step.
type backwardKey struct{}

// backwardState is what Backward needs to know about the step being built.
type backwardState struct {
	job        *Job
	accumulate bool // true: add gradients to the accumulators, no optimizer update
	called     bool
	// gradsOnly (a strategy that combines the gradients outside the graph, such as
	// hostReduced): Backward only computes the gradients and leaves them in vars/grads; the
	// strategy combines them and applies them with a second graph (Job.applyGradients).
	gradsOnly bool
	vars      []*model.Variable
	grads     []*Node
}

// Backward computes the gradients of loss with respect to every trainable variable, takes
// their mean over the global batch (all devices), optionally accumulates them over several
// micro-batches and clips them by global norm, and applies the optimizer update. Call it
// exactly once inside the step function given to Job.TrainStep, on the scalar loss of the
// global batch (a mean over its real examples):
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
// count. Like GoMLX graph building, Backward panics on misuse; TrainStep.Run turns the panic
// into an error.
func (a *Accelerator) Backward(s *model.Scope, loss *Node) {
	g := loss.Graph()
	st, _ := g.State(backwardKey{}).(*backwardState)
	if st == nil || st.job.acc != a {
		exceptions.Panicf("accelerator: Backward: called outside a step function run by a TrainStep of this Accelerator")
	}
	if st.called {
		exceptions.Panicf("accelerator: Backward: called twice in one step; sum the losses and call it once")
	}
	st.called = true
	if !loss.Shape().IsScalar() {
		exceptions.Panicf("accelerator: Backward: the loss must be a scalar (a mean over the batch), got shape %s", loss.Shape())
	}
	j := st.job
	root := s.Store().RootScope()
	var vars []*model.Variable
	var values []*Node
	for v := range root.IterVariables() {
		if v.Trainable && v.InUseByGraph(g) {
			vars = append(vars, v)
			values = append(values, v.NodeValue(g))
		}
	}
	if len(vars) == 0 {
		exceptions.Panicf("accelerator: Backward: the loss depends on no trainable variable")
	}
	grads := Gradient(loss, values...)
	if st.gradsOnly {
		st.vars, st.grads = vars, grads
		return
	}
	if _, ok := j.opt.(gradientOptimizer); !ok {
		if j.opts.accumulate > 1 || j.opts.clipNorm > 0 {
			exceptions.Panicf("accelerator: optimizer %T does not accept gradients (UpdateGraphWithGradients), "+
				"so it cannot be used with gradient accumulation or clipping", j.opt)
		}
		j.opt.UpdateGraph(root, g, loss)
		return
	}
	j.applyGradients(root, g, vars, grads, st.accumulate, loss.DType())
}

// applyGradients accumulates, clips and applies grads (one per variable of vars, in the
// Store's order) with the job's optimizer, in graph g.
func (j *Job) applyGradients(root *model.Scope, g *Graph, vars []*model.Variable, grads []*Node, accumulate bool, lossDType dtypes.DType) {
	k := j.opts.accumulate
	if k > 1 {
		accScope := root.At(internalScope).At("grad_accum").WithInitializer(initializer.Zero)
		for i, v := range vars {
			accVar := accScope.VariableWithShape(accumName(v), v.Shape()).SetTrainable(false)
			sum := Add(accVar.NodeValue(g), grads[i])
			if accumulate {
				accVar.SetNodeValue(sum)
				continue
			}
			grads[i] = DivScalar(sum, float64(k))
			accVar.SetNodeValue(ZerosLike(sum))
		}
		if accumulate {
			return
		}
	}
	if j.opts.clipNorm > 0 {
		grads = clipByGlobalNorm(root, g, grads, j.opts.clipNorm)
	}
	if j.opts.schedule != nil {
		stepVar := optimizer.GetGlobalStepVar(root)
		updatesDone := ConvertDType(stepVar.NodeValue(g), lossDType)
		lr := j.opts.schedule(updatesDone)
		if !lr.Shape().IsScalar() {
			exceptions.Panicf("accelerator: the learning-rate schedule must return a scalar, got %s", lr.Shape())
		}
		lr = ConvertDType(lr, lossDType)
		optimizer.LearningRateVar(root, lossDType, 0).SetNodeValue(lr)
	}
	j.opt.(gradientOptimizer).UpdateGraphWithGradients(root, grads, lossDType)
}

// internalScope holds goaccel's own variables (gradient accumulators, last gradient norm).
const internalScope = "goaccel"

func accumName(v *model.Variable) string {
	return strings.ReplaceAll(strings.TrimPrefix(v.Path(), "/"), "/", ".")
}

// clipByGlobalNorm scales all gradients by min(1, maxNorm/(norm+1e-6)), norm being the L2
// norm of all gradients together (as torch.nn.utils.clip_grad_norm_). The norm before
// clipping is stored in the variable goaccel/grad_norm for logging.
func clipByGlobalNorm(root *model.Scope, g *Graph, grads []*Node, maxNorm float64) []*Node {
	var total *Node
	for _, gr := range grads {
		sq := ReduceAllSum(Square(ConvertDType(gr, dtypes.Float32)))
		if total == nil {
			total = sq
		} else {
			total = Add(total, sq)
		}
	}
	norm := Sqrt(total)
	normVar := root.At(internalScope).VariableWithValue(gradNormName, shapes.CastAsDType(0, dtypes.Float32)).SetTrainable(false)
	normVar.SetNodeValue(norm)
	factor := Min(OnesLike(norm), Div(Scalar(g, dtypes.Float32, maxNorm), AddScalar(norm, 1e-6)))
	out := make([]*Node, len(grads))
	for i, gr := range grads {
		out[i] = Mul(gr, ConvertDType(factor, gr.DType()))
	}
	return out
}
