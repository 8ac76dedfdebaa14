package resnet

import (
	"fmt"
	"math"

	"github.com/goaccel/goaccel/models/internal/convnet"
	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/goaccel/goaccel/models/internal/remat"
	"github.com/goaccel/goaccel/models/nn"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Classifier is a ResNet image classifier with the semantics of transformers'
// ResNetForImageClassification: the stem (7x7 convolution with stride 2, BatchNorm,
// hidden_act, 3x3 max-pool with stride 2), the stages of basic or bottleneck residual layers
// with 1x1 projection shortcuts, global average pooling and the linear classifier.
//
// Its variables live in a model.Store (Store returns it) under paths that map one to one to
// the HF tensor names (see the names' comment); the BatchNorms' running statistics are
// variables too, not trainable, updated by every training graph (models/nn.BatchNorm:
// PyTorch's momentum and unbiased running variance, over the real examples of the whole
// batch) and exported with the weights. Variables not in the Store yet are created on first
// use as transformers initialises them: kaiming_normal_(fan_out) for the kernels, ones and
// zeros for BatchNorm, torch.nn.Linear's uniform for the classifier, drawn from the Store's
// random state.
//
// A Classifier is a model.StoreProvider, so it can be handed to the accelerator's Prepare.
type Classifier struct {
	// Config is the model's configuration; do not change it after variables were created
	// (GradientCheckpointing and BatchNormMomentum aside, read when a graph is built).
	Config Config

	// Base holds the Store, the compute dtype (the convolutions and the classifier; the
	// BatchNorms, activations and the residual sums stay float32) and the LoRA slot.
	hf.Base
}

// NewClassifier returns a classifier for cfg whose variables live in store (a new Store when
// nil). Variables already in the Store under the classifier's paths (loaded by
// LoadPretrained) are used as they are; the others are initialised on first use.
func NewClassifier(cfg Config, store *model.Store) (*Classifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("resnet: invalid config: %w", err)
	}
	c := &Classifier{Config: cfg}
	c.Base = hf.NewBase("resnet", store, func() hf.ClassifierConfig { return c.Config })
	return c, nil
}

// Logits builds the classifier's forward pass: inputs are [pixel_values] or [pixel_values,
// mask], pixel_values float [B, H, W, num_channels] (channels last, normalised as the image
// processor does) and mask bool [B], true for the batch's real examples (the accelerator's
// GraphBatch.Mask: padding then stays out of the BatchNorms' statistics in training); the
// result is the float32 [B, num_labels] logits. The BatchNorms use the batch's statistics
// and update the running ones while the Store marks the graph as training, and the running
// ones otherwise. It panics on invalid inputs, as GoMLX graph functions do.
func (c *Classifier) Logits(s *model.Scope, inputs []*Node) *Node {
	if len(inputs) < 1 || len(inputs) > 2 {
		exceptions.Panicf("resnet: Classifier.Logits wants [pixel_values] or [pixel_values, mask], got %d inputs", len(inputs))
	}
	var mask *Node
	if len(inputs) == 2 {
		mask = inputs[1]
	}
	defer c.Adapter().Freeze(c.Store())
	return c.Head(s, c.Encoder(s, inputs[0], mask))
}

// Encoder is ResNetModel's forward pass up to its last hidden state: pixel_values [B, H, W,
// num_channels] to float32 [B, H/32, W/32, hidden_sizes[-1]] (H/16 without
// downsample_in_first_stage's stride... as the stride of each stage gives), channels last.
// mask (bool [B], nil: every example) keeps padding out of the BatchNorms' statistics.
func (c *Classifier) Encoder(s *model.Scope, pixels, mask *Node) *Node {
	cfg := c.Config
	if pixels.Rank() != 4 || pixels.Shape().Dimensions[3] != cfg.NumChannels || !pixels.DType().IsFloat() {
		exceptions.Panicf("resnet: pixel_values must be float [batch, height, width, %d] (channels last), got %s", cfg.NumChannels, pixels.Shape())
	}
	x := ConvertDType(pixels, dtypes.Float32)
	stem := at(s, "resnet.embedder.embedder")
	x = c.convLayer(stem, x, c.Config.stem(), mask, cfg.HiddenAct)
	x = MaxPool(x).Window(3).Strides(2).PaddingPerDim([][2]int{{1, 1}, {1, 1}}).Done()
	checkpoint := cfg.GradientCheckpointing
	for _, p := range cfg.layers() {
		x = c.residual(at(s, p.prefix[:len(p.prefix)-1]), remat.Begin(c.Store(), false, x, checkpoint), p, mask)
	}
	return remat.End(c.Store(), false, x, checkpoint)
}

// Head pools the last hidden state [B, h, w, hidden_sizes[-1]] over its spatial axes
// (AdaptiveAvgPool2d(1)) and applies the classifier: float32 [B, num_labels].
func (c *Classifier) Head(s *model.Scope, hidden *Node) *Node {
	width := c.Config.HiddenSizes[len(c.Config.HiddenSizes)-1]
	if hidden.Rank() != 4 || hidden.Shape().Dimensions[3] != width {
		exceptions.Panicf("resnet: Classifier.Head wants a last hidden state [batch, h, w, %d], got %s", width, hidden.Shape())
	}
	pooled := ReduceMean(hidden, 1, 2)
	g := hidden.Graph()
	cs := at(s, "classifier.1")
	bound := 1 / math.Sqrt(float64(width))
	init := convnet.Uniform(c.Store(), bound)
	w := cs.WithInitializer(init).VariableWithShape("weight", shapes.Make(dtypes.Float32, c.Config.NumLabels, width)).NodeValue(g)
	b := cs.WithInitializer(init).VariableWithShape("bias", shapes.Make(dtypes.Float32, c.Config.NumLabels)).NodeValue(g)
	return hf.Compute(&c.Base).Dense(pooled, w, b)
}

// residual is one ResNetBasicLayer or ResNetBottleNeckLayer: its convolutions (ReLU between
// them), the shortcut (a 1x1 projection and BatchNorm where p has one), the sum and
// hidden_act.
func (c *Classifier) residual(s *model.Scope, x *Node, p layerPlan, mask *Node) *Node {
	shortcut := x
	if p.shortcut {
		shortcut = c.convLayer(s.At("shortcut"), x, convnet.Conv{Out: p.out, Kernel: 1, Stride: p.stride}, mask, "")
	}
	h := x
	for k, conv := range p.convs {
		act := ""
		if p.convActivated[k] {
			act = "relu"
		}
		h = c.convLayer(s.At("layer").At("%d", k), h, conv, mask, act)
	}
	return hf.Activate(c.Config.HiddenAct, Add(h, shortcut))
}

// convLayer is ResNetConvLayer: the convolution (no bias; with LoRA's update where the
// adapter targets it), its BatchNorm and the activation act ("" for none).
func (c *Classifier) convLayer(s *model.Scope, x *Node, conv convnet.Conv, mask *Node, act string) *Node {
	cs, compute := s.At("convolution"), hf.Compute(&c.Base)
	y := convnet.Conv2D(cs, x, conv, compute, convnet.Init{Kernel: convnet.KaimingNormalFanOut(c.Store())})
	y = c.Adapter().Conv(cs, x, y, func(x, kernel *Node) *Node { return convnet.Apply(x, kernel, conv, compute) })
	y = nn.BatchNorm(s.At("normalization"), y, mask, nn.BatchNormConfig{Momentum: c.Config.BatchNormMomentum})
	if act != "" {
		y = hf.Activate(act, y)
	}
	return y
}

// NumParameters is the number of trainable scalars of the classifier (the BatchNorms'
// running statistics left out).
func (c *Classifier) NumParameters() int {
	n := 0
	for _, t := range c.Config.Tensors() {
		if name := t.Name; len(t.Dims) > 0 && !isBuffer(name) {
			n += shapes.Make(dtypes.Float32, t.Dims...).Size()
		}
	}
	return n
}

// isBuffer reports whether a tensor name is a BatchNorm running statistic.
func isBuffer(name string) bool {
	for _, suffix := range []string{nn.BatchNormRunningMean, nn.BatchNormRunningVar, nn.BatchNormTracked} {
		if len(name) > len(suffix) && name[len(name)-len(suffix):] == suffix {
			return true
		}
	}
	return false
}

// at returns the scope of a dotted HF module path under s: at(s, "resnet.embedder").
func at(s *model.Scope, dotted string) *model.Scope {
	start := 0
	for i := 0; i <= len(dotted); i++ {
		if i == len(dotted) || dotted[i] == '.' {
			s = s.At("%s", dotted[start:i])
			start = i + 1
		}
	}
	return s
}
