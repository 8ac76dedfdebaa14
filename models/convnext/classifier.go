package convnext

import (
	"fmt"

	"github.com/goaccel/goaccel/models/internal/convnet"
	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/goaccel/goaccel/models/internal/remat"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/nn"
	"github.com/gomlx/gomlx/support/exceptions"
)

// innerEps is the epsilon of every LayerNorm but the final one (transformers fixes it at 1e-6).
const innerEps = 1e-6

// Classifier is a ConvNeXt image classifier with the semantics of transformers'
// ConvNextForImageClassification (ConvNextV2ForImageClassification for model_type
// "convnextv2"): the patchify stem (a patch_size x patch_size convolution with that stride,
// then a LayerNorm over the channels), the stages (a LayerNorm and a 2x2 convolution with
// stride 2 before every stage but the first; blocks of a depthwise 7x7 convolution, a
// LayerNorm, the inverted bottleneck pwconv1 to 4x the width, hidden_act, GRN for V2,
// pwconv2 back, layer scale for V1, drop path, the residual sum), global average pooling, a
// LayerNorm and the linear classifier.
//
// Its variables live in a model.Store (Store returns it) under paths that map one to one to
// the HF tensor names (see the names' comment). Variables not in the Store yet are created
// on first use as transformers initialises them: N(0, initializer_range²) for kernels and
// linear weights, zero biases, unit LayerNorm gains, layer scale at
// layer_scale_init_value, GRN at zero, drawn from the Store's random state.
//
// A Classifier is a model.StoreProvider, so it can be handed to the accelerator's Prepare.
type Classifier struct {
	// Config is the model's configuration; do not change it after variables were created
	// (DropPathRate and GradientCheckpointing aside, read when a graph is built).
	Config Config

	// Base holds the Store, the compute dtype (the patchify and downsampling convolutions,
	// pwconv1, pwconv2 and the classifier; the depthwise convolutions, LayerNorms, GRN,
	// activations and residual sums stay float32) and the LoRA adapter.
	hf.Base
}

// NewClassifier returns a classifier for cfg whose variables live in store (a new Store when
// nil). Variables already in the Store under the classifier's paths (loaded by
// LoadPretrained) are used as they are; the others are initialised on first use.
func NewClassifier(cfg Config, store *model.Store) (*Classifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("convnext: invalid config: %w", err)
	}
	c := &Classifier{Config: cfg}
	c.Base = hf.NewBase("convnext", store, func() hf.ClassifierConfig { return c.Config })
	return c, nil
}

// Logits builds the classifier's forward pass: inputs are [pixel_values] (a second input, the
// batch's mask, is accepted and not needed: nothing mixes examples), pixel_values float [B,
// H, W, num_channels] (channels last, normalised as the image processor does); the result
// is the float32 [B, num_labels] logits. Drop path is active only while the Store marks the
// graph as training. It panics on invalid inputs, as GoMLX graph functions do.
func (c *Classifier) Logits(s *model.Scope, inputs []*Node) *Node {
	if len(inputs) < 1 || len(inputs) > 2 {
		exceptions.Panicf("convnext: Classifier.Logits wants [pixel_values] or [pixel_values, mask], got %d inputs", len(inputs))
	}
	defer c.Adapter().Freeze(c.Store())
	return c.Head(s, c.Encoder(s, inputs[0]))
}

// Encoder is the base model's forward pass up to its last hidden state: pixel_values [B, H,
// W, num_channels] to float32 [B, H/(patch_size·2^(num_stages-1)), ..., hidden_sizes[-1]],
// channels last.
func (c *Classifier) Encoder(s *model.Scope, pixels *Node) *Node {
	cfg := c.Config
	if pixels.Rank() != 4 || pixels.Shape().Dimensions[3] != cfg.NumChannels || !pixels.DType().IsFloat() {
		exceptions.Panicf("convnext: pixel_values must be float [batch, height, width, %d] (channels last), got %s", cfg.NumChannels, pixels.Shape())
	}
	base := s.At("%s", cfg.ModelType)
	emb := base.At("embeddings")
	p := cfg.PatchSize
	x := c.conv(emb.At("patch_embeddings"), ConvertDType(pixels, dtypes.Float32), convnet.Conv{Out: cfg.HiddenSizes[0], Kernel: p, Stride: p, Bias: true})
	x = c.layerNorm(emb.At("layernorm"), x, innerEps)
	rates := cfg.dropPathRates()
	checkpoint := cfg.GradientCheckpointing
	random := s.IsTraining(pixels.Graph()) && cfg.DropPathRate > 0
	for i, width := range cfg.HiddenSizes {
		st := base.At("encoder").At("stages").At("%d", i)
		if cfg.downsamples(i) {
			ds := st.At("downsampling_layer")
			x = c.layerNorm(ds.At("0"), x, innerEps)
			x = c.conv(ds.At("1"), x, convnet.Conv{Out: width, Kernel: 2, Stride: 2, Bias: true})
		}
		for j := range cfg.Depths[i] {
			x = c.block(st.At("layers").At("%d", j), c.checkpoint(x, random), rates[i][j])
		}
	}
	if !checkpoint {
		return x
	}
	d := x.Shape().Dimensions
	return Reshape(remat.End(c.Store(), random, Reshape(x, d[0], d[1]*d[2], d[3]), true), d...)
}

// checkpoint marks a block's input x [B, H, W, C] as kept for the backward pass with Config.GradientCheckpointing
// (remat, which wants [B, L, C] inputs: x is seen as [B, H·W, C]), the Store's random state
// tied to it when drop path draws (random).
func (c *Classifier) checkpoint(x *Node, random bool) *Node {
	if !c.Config.GradientCheckpointing {
		return x
	}
	d := x.Shape().Dimensions
	return Reshape(remat.Begin(c.Store(), random, Reshape(x, d[0], d[1]*d[2], d[3]), true), d...)
}

// Head pools the last hidden state [B, h, w, hidden_sizes[-1]] over its spatial axes, applies
// the final LayerNorm (layer_norm_eps) and the classifier: float32 [B, num_labels].
func (c *Classifier) Head(s *model.Scope, hidden *Node) *Node {
	width := c.Config.HiddenSizes[len(c.Config.HiddenSizes)-1]
	if hidden.Rank() != 4 || hidden.Shape().Dimensions[3] != width {
		exceptions.Panicf("convnext: Classifier.Head wants a last hidden state [batch, h, w, %d], got %s", width, hidden.Shape())
	}
	pooled := c.layerNorm(s.At("%s", c.Config.ModelType).At("layernorm"), ReduceMean(hidden, 1, 2), c.Config.LayerNormEps)
	return c.ImageClassifier(s, pooled, c.Config.NumLabels, convnet.Normal(c.Store(), c.Config.InitializerRange))
}

// block is one ConvNextLayer (ConvNextV2Layer): dwconv, layernorm, pwconv1, hidden_act, GRN
// (V2), pwconv2, layer scale (V1), drop path at rate, and the residual sum.
func (c *Classifier) block(s *model.Scope, x *Node, rate float64) *Node {
	cfg := c.Config
	width := x.Shape().Dimensions[3]
	h := c.conv(s.At("dwconv"), x, convnet.Conv{Out: width, Kernel: 7, Stride: 1, Pad: 3, Groups: width, Bias: true})
	h = c.layerNorm(s.At("layernorm"), h, innerEps)
	h = hf.Activate(cfg.HiddenAct, c.linear(s.At("pwconv1"), h, 4*width))
	if cfg.ModelType == V2 {
		h = grn(s.At("grn"), h)
	}
	h = c.linear(s.At("pwconv2"), h, width)
	if cfg.layerScale() {
		init := func(g *Graph, shape shapes.Shape) *Node { return MulScalar(Ones(g, shape), cfg.LayerScaleInitValue) }
		gamma := s.WithInitializer(init).VariableWithShape("layer_scale_parameter", shapes.Make(dtypes.Float32, width)).NodeValue(x.Graph())
		h = Mul(h, Reshape(gamma, 1, 1, 1, width))
	}
	return Add(x, c.dropPath(s, h, rate))
}

// grn is ConvNeXt-V2's global response normalisation on x [B, H, W, C]: each channel's L2
// norm over the image, divided by the mean of those norms over the channels (+1e-6), scales
// x, with weight, bias and x itself added: weight·(x·n) + bias + x.
func grn(s *model.Scope, x *Node) *Node {
	g := x.Graph()
	width := x.Shape().Dimensions[3]
	shape := shapes.Make(dtypes.Float32, 1, 1, 1, width)
	w := s.WithInitializer(Zeros).VariableWithShape("weight", shape).NodeValue(g)
	b := s.WithInitializer(Zeros).VariableWithShape("bias", shape).NodeValue(g)
	norms := Sqrt(ReduceAndKeep(Square(x), ReduceSum, 1, 2))               // [B, 1, 1, C]
	n := Div(norms, AddScalar(ReduceAndKeep(norms, ReduceMean, -1), 1e-6)) // [B, 1, 1, C]
	return Add(Add(Mul(w, Mul(x, n)), b), x)
}

// dropPath is stochastic depth on the residual branch x in training: each example's branch
// is kept with probability 1-rate (floor(u + 1-rate) for u uniform in [0, 1)), and divided by
// it; the identity in evaluation or at rate 0.
func (c *Classifier) dropPath(s *model.Scope, x *Node, rate float64) *Node {
	if rate <= 0 || !s.IsTraining(x.Graph()) {
		return x
	}
	keep := 1 - rate
	u := c.Store().RandomUniform(x.Graph(), shapes.Make(x.DType(), x.Shape().Dimensions[0], 1, 1, 1))
	kept := StopGradient(ConvertDType(GreaterOrEqual(u, Scalar(x.Graph(), u.DType(), rate)), x.DType())) // floor(u + keep)
	return Mul(DivScalar(x, keep), kept)
}

// conv is a Conv2d with the family's initialisation: N(0, initializer_range²), zero bias.
func (c *Classifier) conv(s *model.Scope, x *Node, conv convnet.Conv) *Node {
	return convnet.Conv2D(s, x, conv, hf.Compute(&c.Base), convnet.Init{Kernel: convnet.Normal(c.Store(), c.Config.InitializerRange)})
}

// linear is torch.nn.Linear with HF variable names (weight [out, in], bias [out]) over x's
// last axis, in the compute dtype, with LoRA's update on the layers an adapter targets.
func (c *Classifier) linear(s *model.Scope, x *Node, out int) *Node {
	g := x.Graph()
	in := x.Shape().Dimensions[x.Rank()-1]
	w := s.WithInitializer(convnet.Normal(c.Store(), c.Config.InitializerRange)).VariableWithShape("weight", shapes.Make(dtypes.Float32, out, in)).NodeValue(g)
	b := s.WithInitializer(Zeros).VariableWithShape("bias", shapes.Make(dtypes.Float32, out)).NodeValue(g)
	return c.Adapter().Linear(s, x, hf.Compute(&c.Base).Dense(x, w, b))
}

// layerNorm is torch.nn.LayerNorm over the last axis (the channels) with weight and bias,
// float32.
func (c *Classifier) layerNorm(s *model.Scope, x *Node, eps float64) *Node {
	g := x.Graph()
	width := x.Shape().Dimensions[x.Rank()-1]
	gamma := s.WithInitializer(Ones).VariableWithShape("weight", shapes.Make(dtypes.Float32, width)).NodeValue(g)
	beta := s.WithInitializer(Zeros).VariableWithShape("bias", shapes.Make(dtypes.Float32, width)).NodeValue(g)
	return nn.LayerNorm(ConvertDType(x, dtypes.Float32), []int{x.Rank() - 1}, eps, gamma, beta, nil)
}
