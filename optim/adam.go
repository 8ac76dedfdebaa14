// Package optim holds goaccel's optimizers with PyTorch's meanings: Adam and AdamW with
// PyTorch's defaults, built on GoMLX's Adam so that their Store variables (and so
// checkpoints) are GoMLX's, and SGD as torch.optim.SGD (momentum, dampening, Nesterov, coupled
// weight decay), which GoMLX's SGD has none of. They work with accelerator.Prepare,
// trainer.New and trainer.Fit alike:
//
//	opt, err := optim.Adam(optim.AdamConfig{LearningRate: 2e-5, WeightDecay: 0.01}) // HF's AdamW
//	opt, err = optim.SGD(optim.SGDConfig{LearningRate: 0.1, Momentum: 0.9, WeightDecay: 5e-4}) // the CIFAR-10 recipe
//	job, err := acc.Prepare(store, opt, loader)
//
// Under trainer.Fit the rate is Config.LearningRate's (with its schedule): build the optimizer
// without one, optim.Adam(optim.AdamConfig{WeightDecay: 0.01}).
package optim

import (
	"fmt"
	"math"
	"strings"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/gomlx/gomlx/support/exceptions"
)

// adamEpsilon is the epsilon of torch.optim.Adam and torch.optim.AdamW (and of Hugging Face's
// Trainer), added to the square root of the second-moment estimate. GoMLX's optimizer.Adam
// defaults to 1e-7, which damps the updates of weights with small gradients.
const adamEpsilon = 1e-8

// AdamConfig configures Adam: the zero value of every field but LearningRate gives what a
// PyTorch user gets from torch.optim.Adam, and WeightDecay > 0 what Hugging Face's Trainer does
// with torch.optim.AdamW.
type AdamConfig struct {
	// LearningRate is the learning rate (> 0), for accelerator.Prepare; 0 leaves it to
	// whoever sets the rate of each update: trainer.Fit (its Config.LearningRate is the one
	// place a Fit run's rate is given) or accelerator.WithLearningRateSchedule. Prepare
	// refuses an optimizer without a rate and without a schedule.
	LearningRate float64
	// Beta1 and Beta2 are the decay rates of the moment estimates; 0 means PyTorch's 0.9 and
	// 0.999.
	Beta1, Beta2 float64
	// Epsilon is added to the denominator; 0 means PyTorch's 1e-8 (GoMLX's Adam has 1e-7).
	Epsilon float64
	// WeightDecay > 0 makes it AdamW: decoupled weight decay, every step subtracting
	// lr·WeightDecay·w from each decayed weight w (the value before the step), as
	// torch.optim.AdamW.
	WeightDecay float64
	// NoDecay reports the trainable variables, by Store path, that weight decay leaves alone.
	// nil means NoWeightDecay (biases and normalisation layers, as Hugging Face's Trainer);
	// func(string) bool { return false } decays every weight, as torch.optim.AdamW given
	// model.parameters().
	NoDecay func(path string) bool
}

// Adam returns the Adam (or AdamW) optimizer of c, for accelerator.Prepare, trainer.New or
// trainer.Fit. It is GoMLX's Adam with PyTorch's defaults and with the weight decay applied
// only to the variables NoDecay does not name; its Store variables are GoMLX Adam's, so
// checkpoints of either load in the other.
func Adam(c AdamConfig) (optimizer.Interface, error) {
	bad := func(field string, v float64, want string) error {
		return fmt.Errorf("optim: Adam: AdamConfig.%s = %g, want %s", field, v, want)
	}
	switch {
	case !(c.LearningRate >= 0) || math.IsInf(c.LearningRate, 1):
		return nil, bad("LearningRate", c.LearningRate, "a positive finite rate (0: set by trainer.Fit or a schedule)")
	case !(c.Beta1 >= 0 && c.Beta1 < 1):
		return nil, bad("Beta1", c.Beta1, "a value in [0, 1) (0: 0.9)")
	case !(c.Beta2 >= 0 && c.Beta2 < 1):
		return nil, bad("Beta2", c.Beta2, "a value in [0, 1) (0: 0.999)")
	case !(c.Epsilon >= 0) || math.IsInf(c.Epsilon, 1):
		return nil, bad("Epsilon", c.Epsilon, fmt.Sprintf(">= 0 (0: %g)", adamEpsilon))
	case !(c.WeightDecay >= 0) || math.IsInf(c.WeightDecay, 1):
		return nil, bad("WeightDecay", c.WeightDecay, ">= 0 (0: Adam, no decay)")
	}
	if c.Beta1 == 0 {
		c.Beta1 = 0.9
	}
	if c.Beta2 == 0 {
		c.Beta2 = 0.999
	}
	if c.Epsilon == 0 {
		c.Epsilon = adamEpsilon
	}
	if c.NoDecay == nil {
		c.NoDecay = NoWeightDecay
	}
	inner := optimizer.Adam().LearningRate(c.LearningRate).Betas(c.Beta1, c.Beta2).Epsilon(c.Epsilon).Done()
	return &adam{inner: inner, cfg: c}, nil
}

// NoWeightDecay is AdamConfig.NoDecay's default, the parameters Hugging Face's Trainer gives
// no weight decay: biases (a last path element "bias" or "biases") and the weights of
// normalisation layers (a path element containing "norm", such as BERT's LayerNorm or GoMLX's
// layer_normalization). It is exported for a NoDecay that extends it, such as
// func(p string) bool { return optim.NoWeightDecay(p) || strings.Contains(p, "embeddings") }.
func NoWeightDecay(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if last := parts[len(parts)-1]; last == "bias" || last == "biases" {
		return true
	}
	for _, p := range parts {
		if strings.Contains(strings.ToLower(p), "norm") {
			return true
		}
	}
	return false
}

// adam is GoMLX's Adam, without its own weight decay, followed by the decoupled weight decay
// of the variables that NoDecay does not exclude.
type adam struct {
	inner optimizer.Interface
	cfg   AdamConfig
}

// gradientApplier is what GoMLX's Adam implements besides optimizer.Interface (the Accelerator
// uses it to apply its synced, accumulated and clipped gradients).
type gradientApplier interface {
	UpdateGraphWithGradients(scope *model.Scope, grads []*Node, lossDType dtypes.DType)
}

// UpdateGraph implements optimizer.Interface.
func (o *adam) UpdateGraph(scope *model.Scope, g *Graph, loss *Node) {
	if !loss.Shape().IsScalar() {
		exceptions.Panicf("optim: Adam: the loss must be a scalar, got shape %s", loss.Shape())
	}
	o.UpdateGraphWithGradients(scope, scope.BuildTrainableVariablesGradientsGraph(loss), loss.DType())
}

// UpdateGraphWithGradients applies grads, one per trainable variable in use by the graph in
// the Store's order (as GoMLX's optimizers take them).
func (o *adam) UpdateGraphWithGradients(scope *model.Scope, grads []*Node, lossDType dtypes.DType) {
	if len(grads) == 0 {
		exceptions.Panicf("optim: Adam: no gradients (are there trainable variables?)")
	}
	g := grads[0].Graph()
	type decayed struct {
		v      *model.Variable
		before *Node
	}
	var decay []decayed
	if o.cfg.WeightDecay > 0 {
		for v := range scope.IterVariables() {
			if v.Trainable && v.InUseByGraph(g) && !o.cfg.NoDecay(v.Path()) {
				decay = append(decay, decayed{v, v.NodeValue(g)})
			}
		}
	}
	o.inner.(gradientApplier).UpdateGraphWithGradients(scope, grads, lossDType)
	if len(decay) == 0 {
		return
	}
	// The rate Adam used (the schedule's, when one set the variable in this graph).
	lr := optimizer.LearningRateVar(scope, lossDType, o.cfg.LearningRate).NodeValue(g)
	for _, d := range decay {
		step := Mul(ConvertDType(lr, d.before.DType()), MulScalar(d.before, o.cfg.WeightDecay))
		d.v.SetNodeValue(Sub(d.v.NodeValue(g), step))
	}
}

// LearningRate is AdamConfig.LearningRate: 0 when the optimizer was built without a rate,
// which accelerator.Prepare accepts only with a schedule.
func (o *adam) LearningRate() float64 { return o.cfg.LearningRate }

// Clear implements optimizer.Interface: it deletes Adam's moment estimates and step count.
func (o *adam) Clear(scope *model.Scope) error { return o.inner.Clear(scope) }
