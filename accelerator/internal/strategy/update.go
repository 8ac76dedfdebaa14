package strategy

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

// InternalScope holds goaccel's own variables in a job's Store (gradient accumulators, the
// last gradient norm, the variables of a guard that skips updates).
const InternalScope = "goaccel"

// The gradient accumulators, in InternalScope: the accumulated weighted gradients (one per
// trainable variable, in AccumScope) and their accumulated weight (WeightName). They are each
// process's own (not synced between processes) and zero between updates.
const (
	AccumScope = "grad_accum"
	WeightName = "grad_weight"
)

// NormName is the variable, in InternalScope, that holds the last gradient norm before
// clipping; NormPath is its path.
const (
	NormName = "grad_norm"
	NormPath = "/" + InternalScope + "/" + NormName
)

// IsAccumulator reports whether path is one of the gradient accumulators.
func IsAccumulator(path string) bool {
	return strings.HasPrefix(path, "/"+InternalScope+"/"+AccumScope+"/") || path == "/"+InternalScope+"/"+WeightName
}

func accumName(v *model.Variable) string {
	return strings.ReplaceAll(strings.TrimPrefix(v.Path(), "/"), "/", ".")
}

// GradientOptimizer is implemented by GoMLX's optimizers (Adam, AdamW, SGD, RMSProp): it
// applies given gradients, which lets goaccel sync, accumulate and clip them first.
type GradientOptimizer interface {
	UpdateGraphWithGradients(scope *model.Scope, grads []*Node, lossDType dtypes.DType)
}

// Update is the optimizer update of an update's mean gradients, written once: the guard's
// unscaling (when the update may be skipped), clipping by global norm, the learning-rate
// schedule and the optimizer. Backward runs it in the step's graph, the host step in its
// apply graph, and the update of optimizer state sharded over the processes on its slices.
type Update struct {
	Optimizer GradientOptimizer
	// ClipNorm clips the gradients by their global L2 norm (0: no clipping).
	ClipNorm float64
	// Schedule, when set, gives the learning rate from the number of updates done.
	Schedule func(updatesDone *Node) *Node
	// Guard, when set, turns the gradients into what the optimizer must see and makes the
	// update conditional: it returns the gradients and the function to call once the update
	// is built (nil: nothing to do).
	Guard func(root *model.Scope, g *Graph, grads []*Node) ([]*Node, func())
}

// Apply clips and applies grads (one per trainable variable of the graph, in the Store's
// order: the mean gradient of the update) in graph g.
func (u *Update) Apply(root *model.Scope, g *Graph, grads []*Node, lossDType dtypes.DType) {
	if u.Guard != nil {
		var finish func()
		grads, finish = u.Guard(root, g, grads)
		if finish != nil {
			defer finish()
		}
	}
	if u.ClipNorm > 0 {
		grads = ClipByGlobalNorm(root, g, grads, u.ClipNorm)
	}
	u.WithGradients(root, g, grads, lossDType)
}

// WithGradients is Apply after the clipping: the learning rate of the schedule, then the
// optimizer's update with grads.
func (u *Update) WithGradients(root *model.Scope, g *Graph, grads []*Node, lossDType dtypes.DType) {
	if u.Schedule != nil {
		stepVar := optimizer.GetGlobalStepVar(root)
		updatesDone := ConvertDType(stepVar.NodeValue(g), lossDType)
		lr := u.Schedule(updatesDone)
		if !lr.Shape().IsScalar() {
			exceptions.Panicf("accelerator: the learning-rate schedule must return a scalar, got %s", lr.Shape())
		}
		lr = ConvertDType(lr, lossDType)
		optimizer.LearningRateVar(root, lossDType, 0).SetNodeValue(lr)
	}
	u.Optimizer.UpdateGraphWithGradients(root, grads, lossDType)
}

// Accumulate adds weight x grads (one per variable of vars) to the gradient accumulators (on
// the devices) and weight to their total. With accumulate it stores the sums and returns
// nothing; else it returns the sums including this batch's and their total weight and resets
// the accumulators to zero for the next update.
func Accumulate(root *model.Scope, g *Graph, vars []*model.Variable, grads []*Node, weight *Node, accumulate bool) (sums []*Node, total *Node) {
	accScope := root.At(InternalScope).At(AccumScope).WithInitializer(initializer.Zero)
	for i, v := range vars {
		accVar := accScope.VariableWithShape(accumName(v), v.Shape()).SetTrainable(false)
		sum := Add(accVar.NodeValue(g), Mul(grads[i], ConvertDType(weight, grads[i].DType())))
		if accumulate {
			accVar.SetNodeValue(sum)
			continue
		}
		sums = append(sums, sum)
		accVar.SetNodeValue(ZerosLike(sum))
	}
	wVar := root.At(InternalScope).WithInitializer(initializer.Zero).
		VariableWithShape(WeightName, shapes.Make(dtypes.Float32)).SetTrainable(false)
	total = Add(wVar.NodeValue(g), weight)
	if accumulate {
		wVar.SetNodeValue(total)
		return nil, nil
	}
	wVar.SetNodeValue(ZerosLike(total))
	return sums, total
}

// ClipByGlobalNorm scales all gradients by min(1, maxNorm/(norm+1e-6)), norm being the L2
// norm of all gradients together (as torch.nn.utils.clip_grad_norm_). The norm before
// clipping is stored in the variable NormPath for logging.
func ClipByGlobalNorm(root *model.Scope, g *Graph, grads []*Node, maxNorm float64) []*Node {
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
	normVar := root.At(InternalScope).VariableWithValue(NormName, shapes.CastAsDType(0, dtypes.Float32)).SetTrainable(false)
	normVar.SetNodeValue(norm)
	return ClipToNorm(g, grads, norm, maxNorm)
}

// ClipToNorm scales grads by min(1, maxNorm/(norm+1e-6)), norm (a float32 scalar) being their
// global L2 norm.
func ClipToNorm(g *Graph, grads []*Node, norm *Node, maxNorm float64) []*Node {
	factor := Min(OnesLike(norm), Div(Scalar(g, dtypes.Float32, maxNorm), AddScalar(norm, 1e-6)))
	out := make([]*Node, len(grads))
	for i, gr := range grads {
		out[i] = Mul(gr, ConvertDType(factor, gr.DType()))
	}
	return out
}
