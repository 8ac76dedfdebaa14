package optim

import (
	"fmt"
	"math"
	"path"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/gomlx/gomlx/support/exceptions"
)

// SGDScope is the Store scope of SGD's state: the momentum buffer of a weight at /a/b/w is
// /sgd/a/b/w_momentum, and the steps taken are /sgd/step.
const SGDScope = "sgd"

// SGDConfig configures SGD with torch.optim.SGD's meaning; the zero value of every field but
// LearningRate is plain gradient descent, as torch.optim.SGD(params, lr) is.
type SGDConfig struct {
	// LearningRate is the learning rate (> 0), for accelerator.Prepare; 0 leaves it to
	// trainer.Fit (Config.LearningRate) or accelerator.WithLearningRateSchedule, as with Adam.
	LearningRate float64
	// Momentum is the momentum factor (0: none). The buffer starts as the first step's
	// gradient and is then momentum·buf + (1-Dampening)·g, as in PyTorch.
	Momentum float64
	// Dampening damps the gradient's share of the momentum buffer (0: none).
	Dampening float64
	// Nesterov uses Nesterov momentum, g + momentum·buf; it needs Momentum > 0 and
	// Dampening 0, as PyTorch requires.
	Nesterov bool
	// WeightDecay > 0 adds WeightDecay·w to each decayed weight's gradient (L2, coupled with
	// the gradient as torch.optim.SGD does, not AdamW's decoupled decay).
	WeightDecay float64
	// NoDecay reports the trainable variables, by Store path, that weight decay leaves alone.
	// nil decays every weight, as torch.optim.SGD given model.parameters() (the CIFAR-10
	// recipes' weight_decay=5e-4 includes BatchNorm and biases); NoWeightDecay gives
	// Hugging Face's choice.
	NoDecay func(path string) bool
}

// SGD returns the SGD optimizer of c (torch.optim.SGD's update), for accelerator.Prepare,
// trainer.New or trainer.Fit. Its momentum buffers are variables of the Store in SGDScope, so
// checkpoints hold them and the sharding strategies shard them like Adam's moments.
func SGD(c SGDConfig) (optimizer.Interface, error) {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("optim: SGD: SGDConfig.%s = %v, want %s", field, v, want)
	}
	switch {
	case !(c.LearningRate >= 0) || math.IsInf(c.LearningRate, 1):
		return nil, bad("LearningRate", c.LearningRate, "a positive finite rate (0: set by trainer.Fit or a schedule)")
	case !(c.Momentum >= 0) || math.IsInf(c.Momentum, 1):
		return nil, bad("Momentum", c.Momentum, ">= 0 (0: no momentum)")
	case !(c.Dampening >= 0 && c.Dampening <= 1):
		return nil, bad("Dampening", c.Dampening, "a value in [0, 1]")
	case !(c.WeightDecay >= 0) || math.IsInf(c.WeightDecay, 1):
		return nil, bad("WeightDecay", c.WeightDecay, ">= 0 (0: no decay)")
	case c.Nesterov && (c.Momentum == 0 || c.Dampening != 0):
		return nil, bad("Nesterov", true, fmt.Sprintf("Momentum > 0 and Dampening 0 (have %g and %g)", c.Momentum, c.Dampening))
	}
	if c.NoDecay == nil {
		c.NoDecay = func(string) bool { return false }
	}
	return &sgd{cfg: c}, nil
}

type sgd struct{ cfg SGDConfig }

// UpdateGraph implements optimizer.Interface.
func (o *sgd) UpdateGraph(scope *model.Scope, g *Graph, loss *Node) {
	if !loss.Shape().IsScalar() {
		exceptions.Panicf("optim: SGD: the loss must be a scalar, got shape %s", loss.Shape())
	}
	o.UpdateGraphWithGradients(scope, scope.BuildTrainableVariablesGradientsGraph(loss), loss.DType())
}

// UpdateGraphWithGradients applies grads, one per trainable variable in use by the graph in
// the Store's order (as GoMLX's optimizers take them): for each weight w with gradient g,
//
//	g += WeightDecay·w                          (unless NoDecay(w))
//	buf = g on the first step, else Momentum·buf + (1-Dampening)·g
//	g = g + Momentum·buf (Nesterov), else buf   (with Momentum > 0)
//	w -= lr·g
func (o *sgd) UpdateGraphWithGradients(scope *model.Scope, grads []*Node, lossDType dtypes.DType) {
	if len(grads) == 0 {
		exceptions.Panicf("optim: SGD: no gradients (are there trainable variables?)")
	}
	g := grads[0].Graph()
	lr := optimizer.LearningRateVar(scope, lossDType, o.cfg.LearningRate).NodeValue(g)
	_ = optimizer.IncrementGlobalStep(g, dtypes.Int64)
	var first *Node
	if o.cfg.Momentum > 0 {
		step := optimizer.IncrementCounter(scope.At(SGDScope), g, "step", dtypes.Int64)
		first = Equal(step, OnesLike(step))
	}
	i := 0
	for v := range scope.IterVariables() {
		if !v.Trainable || !v.InUseByGraph(g) {
			continue
		}
		if i >= len(grads) {
			exceptions.Panicf("optim: SGD: %d gradients for more trainable variables (%s has none)", len(grads), v.Path())
		}
		w := v.NodeValue(g)
		grad := grads[i]
		i++
		if grad.DType() != w.DType() {
			grad = ConvertDType(grad, w.DType())
		}
		if o.cfg.WeightDecay > 0 && !o.cfg.NoDecay(v.Path()) {
			grad = Add(grad, MulScalar(w, o.cfg.WeightDecay))
		}
		if o.cfg.Momentum > 0 {
			bufVar := scope.Store().Scope(path.Join("/", SGDScope, v.Scope())).WithInitializer(initializer.Zero).
				VariableWithShape(v.Name()+"_momentum", w.Shape()).SetTrainable(false)
			buf := Add(MulScalar(bufVar.NodeValue(g), o.cfg.Momentum), MulScalar(grad, 1-o.cfg.Dampening))
			buf = Where(first, grad, buf)
			bufVar.SetNodeValue(buf)
			if o.cfg.Nesterov {
				grad = Add(grad, MulScalar(buf, o.cfg.Momentum))
			} else {
				grad = buf
			}
		}
		v.SetNodeValue(Sub(w, Mul(ConvertDType(lr, w.DType()), grad)))
	}
	if i != len(grads) {
		exceptions.Panicf("optim: SGD: %d gradients for %d trainable variables in use", len(grads), i)
	}
}

// LearningRate is SGDConfig.LearningRate: 0 when the optimizer was built without a rate,
// which accelerator.Prepare accepts only with a schedule.
func (o *sgd) LearningRate() float64 { return o.cfg.LearningRate }

// Clear implements optimizer.Interface: it deletes the momentum buffers and the step count.
func (o *sgd) Clear(scope *model.Scope) error { return scope.In(SGDScope).DeleteVariablesInScope() }
