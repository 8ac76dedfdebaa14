package vit

import (
	"fmt"
	"math"

	"github.com/goaccel/goaccel/models/internal/half"
	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/goaccel/goaccel/models/internal/remat"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/nn"
	"github.com/gomlx/gomlx/support/exceptions"
)

// variableDType is the dtype of every variable and of the computation.
const variableDType = dtypes.Float32

// Classifier is a ViT image classifier with the semantics of transformers'
// ViTForImageClassification: the encoder (see Encoder), the final LayerNorm's CLS token, and
// the linear classifier on it (the image head every image family shares).
//
// Its variables live in a model.Store (Store returns it) under paths that map one to one to
// the HF tensor names (VarPath): "/vit/..." for the encoder, "/classifier/..." for the head.
// Variables not in the Store yet (a random model, or the classifier of a pretrained one) are
// created on first use and initialised as transformers 5.25 does: normal with standard
// deviation initializer_range for the dense and convolution weights, the CLS token and the
// position embeddings (those truncated at ±2, as torch's trunc_normal_), zero biases and unit
// LayerNorm gains, drawn from the Store's random state.
//
// A Classifier is a model.StoreProvider, so it can be handed to the accelerator's Prepare.
type Classifier struct {
	// Config is the model's configuration; do not change it after variables were created
	// (the dropout rates, GradientCheckpointing and InterpolatePosEncoding aside, read when a
	// graph is built).
	Config Config

	// Base holds the Store, the compute dtype and the LoRA adapter: it gives the classifier
	// Store, SetComputeDType (the patch embedding, the projections, the attention scores and
	// the mix of the values, the feed-forward and the classifier; LayerNorm, the softmax, GELU
	// and the residual stream stay float32), ComputeDType, NumParameters, AttachLoRA and
	// Adapter.
	hf.Base
}

// NewClassifier returns a classifier for cfg whose variables live in store (a new Store when
// nil). Variables already in the Store under the classifier's paths (loaded by
// LoadPretrained) are used as they are; the others are initialised on first use.
func NewClassifier(cfg Config, store *model.Store) (*Classifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("vit: invalid config: %w", err)
	}
	c := &Classifier{Config: cfg}
	c.Base = hf.NewBase("vit", store, func() hf.ClassifierConfig { return c.Config })
	return c, nil
}

// Logits builds the classifier's forward pass: inputs is [pixel_values], float32 [B, H, W,
// num_channels] (NHWC, the image processor's normalised pixels), and the result is the float32
// [B, num_labels] logits of the classifier on the final LayerNorm's CLS token. H and W are
// image_size unless Config.InterpolatePosEncoding; a side that is not a multiple of
// patch_size loses its last pixels, as the strided convolution does. Dropout is active only
// when the Store marks the graph as training. It panics on invalid inputs, as GoMLX graph
// functions do (model.Exec and the accelerator turn the panic into an error).
func (c *Classifier) Logits(s *model.Scope, inputs []*Node) *Node {
	if len(inputs) != 1 {
		exceptions.Panicf("vit: Classifier.Logits wants [pixel_values], got %d inputs", len(inputs))
	}
	defer c.Adapter().Freeze(c.Store())
	return c.ImageClassifier(s, c.Pool(c.Encoder(s, inputs[0])), c.Config.NumLabels, c.normal())
}

// Pool is the classifier's input from the last hidden states [B, 1+patches, hidden]: the CLS
// token's [B, hidden] (ViT), or it and the mean of the patch tokens side by side [B,
// 2·hidden] (DINOv2).
func (c *Classifier) Pool(hidden *Node) *Node {
	dims := hidden.Shape().Dimensions
	b, n, d := dims[0], dims[1], dims[2]
	cls := Reshape(Slice(hidden, AxisRange(), AxisRange(0, 1), AxisRange()), b, d)
	if c.Config.ModelType != DINOv2 {
		return cls
	}
	mean := ReduceMean(Slice(hidden, AxisRange(), AxisRange(1, n), AxisRange()), 1)
	return Concatenate([]*Node{cls, mean}, -1)
}

// Encoder builds ViTModel's forward pass (without its pooler) under the scope "vit" and
// returns the last hidden states [B, 1+patches, hidden], float32:
//
//   - the patch embedding: the convolution of kernel and stride patch_size (computed as the
//     product of each patch's pixels with the kernel, the same sums), flattened row by row;
//   - the CLS token before the patches, plus the position embeddings (interpolated when the
//     image has another size, see Config.InterpolatePosEncoding), dropout (hidden_dropout_prob);
//   - num_hidden_layers pre-norm layers: x + dropout(attention(layernorm_before(x))), then
//     x + dropout(output(act(intermediate(layernorm_after(x)))));
//   - attention: query, key and value heads, softmax of the scores scaled by head_dim^-1/2,
//     dropout on the probabilities (attention_probs_dropout_prob), attention.output.dense;
//   - the final layernorm.
//
// With Config.GradientCheckpointing, training graphs keep only each layer's input for the
// backward pass and recompute the layer there.
func (c *Classifier) Encoder(s *model.Scope, pixels *Node) *Node {
	cfg := c.Config
	c.checkPixels(pixels)
	g := pixels.Graph()
	vs := s.At("%s", cfg.prefix())
	es := vs.At("embeddings")
	dims := pixels.Shape().Dimensions
	height, width := dims[1], dims[2]
	x := c.patchEmbedding(es.At("patch_embeddings").At("projection"), pixels) // [B, N, D]
	batch, n := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
	if cfg.keepsMaskToken() { // kept, not computed with: frozen, so that no optimizer changes it
		es.WithInitializer(Zeros).VariableWithShape("mask_token", shapes.Make(variableDType, 1, cfg.HiddenSize)).SetTrainable(false)
	}
	cls := es.WithInitializer(c.truncNormal()).VariableWithShape("cls_token", shapes.Make(variableDType, 1, 1, cfg.HiddenSize)).NodeValue(g)
	x = Concatenate([]*Node{BroadcastToDims(cls, batch, 1, cfg.HiddenSize), x}, 1)
	pos := es.WithInitializer(c.truncNormal()).VariableWithShape("position_embeddings",
		shapes.Make(variableDType, 1, cfg.NumPatches()+1, cfg.HiddenSize)).NodeValue(g)
	if cfg.InterpolatePosEncoding && !(n == cfg.NumPatches() && height == width) {
		pos = interpolatePositions(pos, cfg.ImageSize/cfg.PatchSize, height/cfg.PatchSize, width/cfg.PatchSize)
	}
	x = Add(x, BroadcastToShape(pos, x.Shape()))
	x = hf.Dropout(es.At("dropout"), x, cfg.HiddenDropoutProb)

	checkpoint := cfg.GradientCheckpointing && s.IsTraining(g)
	dropout := cfg.HiddenDropoutProb > 0 || cfg.AttentionProbsDropoutProb > 0 || cfg.DropPathRate > 0
	ls := vs.At("encoder").At("layer")
	for i := range cfg.NumHiddenLayers {
		x = c.layer(ls.At("%d", i), remat.Begin(c.Store(), dropout, x, checkpoint))
	}
	return c.layerNorm(vs.At("layernorm"), remat.End(c.Store(), dropout, x, checkpoint))
}

// checkPixels panics with a clear message when the pixels are not a float [B, H, W,
// num_channels] tensor of a size the model takes.
func (c *Classifier) checkPixels(pixels *Node) {
	cfg := c.Config
	if pixels == nil {
		exceptions.Panicf("vit: pixel_values is required")
	}
	sh := pixels.Shape()
	if sh.Rank() != 4 || !sh.DType.IsFloat() || sh.Dimensions[3] != cfg.NumChannels {
		exceptions.Panicf("vit: pixel_values must be a float [batch, height, width, %d] (NHWC) tensor, got %s", cfg.NumChannels, sh)
	}
	h, w := sh.Dimensions[1], sh.Dimensions[2]
	if h < cfg.PatchSize || w < cfg.PatchSize {
		exceptions.Panicf("vit: images of %dx%d pixels are smaller than a patch (patch_size %d)", h, w, cfg.PatchSize)
	}
	if !cfg.InterpolatePosEncoding && (h != cfg.ImageSize || w != cfg.ImageSize) {
		exceptions.Panicf("vit: input image size (%d*%d) doesn't match the model's (%d*%d, config.json's image_size): "+
			"set InterpolatePosEncoding (auto.Options.InterpolatePosEncoding) to interpolate the position embeddings",
			h, w, cfg.ImageSize, cfg.ImageSize)
	}
}

// patchEmbedding is the strided convolution of ViTPatchEmbeddings on pixels [B, H, W, C]:
// kernel weight [D, C, p, p] (OIHW, as transformers stores it) and bias [D], stride p, no
// padding, its output flattened to [B, (H/p)·(W/p), D] row by row. As the windows do not
// overlap, it is each patch's C·p·p values, laid out as the kernel's (channel, row, column),
// times the kernel's [D, C·p·p] matrix: one product in the compute dtype.
func (c *Classifier) patchEmbedding(s *model.Scope, pixels *Node) *Node {
	cfg := c.Config
	g := pixels.Graph()
	p, ch, d := cfg.PatchSize, cfg.NumChannels, cfg.HiddenSize
	dims := pixels.Shape().Dimensions
	b, nh, nw := dims[0], dims[1]/p, dims[2]/p
	x := ConvertDType(pixels, variableDType)
	if nh*p != dims[1] || nw*p != dims[2] {
		x = Slice(x, AxisRange(), AxisRange(0, nh*p), AxisRange(0, nw*p), AxisRange())
	}
	x = Reshape(x, b, nh, p, nw, p, ch)
	x = TransposeAllAxes(x, 0, 1, 3, 5, 2, 4) // [B, nh, nw, C, p, p]
	x = Reshape(x, b, nh*nw, ch*p*p)
	w := s.WithInitializer(c.normal()).VariableWithShape("weight", shapes.Make(variableDType, d, ch, p, p)).NodeValue(g)
	bias := s.WithInitializer(Zeros).VariableWithShape("bias", shapes.Make(variableDType, d)).NodeValue(g)
	return hf.Compute(&c.Base).Dense(x, Reshape(w, d, ch*p*p), bias)
}

// layer is one ViTLayer (pre-norm), or Dinov2Layer: the same with norm1 and norm2, each
// sub-layer's output scaled by its layer scale and dropped per example by stochastic depth
// (drop_path_rate) instead of dropout, and a plain (mlp.fc1, mlp.fc2) or SwiGLU feed-forward.
func (c *Classifier) layer(s *model.Scope, x *Node) *Node {
	cfg := c.Config
	before, after := cfg.layerNorms()
	as := s.At("attention")
	h := c.attention(as.At("attention"), c.layerNorm(s.At("%s", before), x))
	h = c.linear(as.At("output").At("dense"), h, cfg.HiddenSize, true)
	x = Add(x, c.residual(s, "1", as.At("output").At("dropout"), h))
	h = c.feedForward(s, c.layerNorm(s.At("%s", after), x))
	return Add(x, c.residual(s, "2", s.At("output").At("dropout"), h))
}

// residual is a sub-layer's output h before it joins the residual stream: ViT's dropout
// (hidden_dropout_prob, under drop), or DINOv2's layer scale layer_scale<n> and stochastic
// depth.
func (c *Classifier) residual(s *model.Scope, n string, drop *model.Scope, h *Node) *Node {
	cfg := c.Config
	if cfg.ModelType != DINOv2 {
		return hf.Dropout(drop, h, cfg.HiddenDropoutProb)
	}
	g := h.Graph()
	scale := s.At("layer_scale%s", n).WithInitializer(func(g *Graph, shape shapes.Shape) *Node {
		return BroadcastToDims(Scalar(g, shape.DType, cfg.LayerScaleValue), shape.Dimensions...)
	}).VariableWithShape("lambda1", shapes.Make(variableDType, cfg.HiddenSize)).NodeValue(g)
	h = Mul(h, BroadcastToShape(Reshape(scale, 1, 1, cfg.HiddenSize), h.Shape()))
	if cfg.DropPathRate <= 0 || !s.IsTraining(g) {
		return h
	}
	// One keep-or-drop draw per example, scaled by 1/(1-rate): the dropout of a [B, 1, 1]
	// tensor of ones, broadcast over the example's tokens.
	keep := hf.Dropout(s.At("drop_path%s", n), OnesLike(Slice(h, AxisRange(), AxisRange(0, 1), AxisRange(0, 1))), cfg.DropPathRate)
	return Mul(h, BroadcastToShape(keep, h.Shape()))
}

// feedForward is the layer's feed-forward block on x [B, L, hidden]: ViT's intermediate.dense,
// activation, output.dense; DINOv2's mlp.fc1, activation, mlp.fc2, or with use_swiglu_ffn
// mlp.weights_in (gate and up halves), silu(gate)·up, mlp.weights_out. Under mixed precision
// the first product's output is kept in the compute dtype and widened for the activation,
// whose output is rounded to it for the second.
func (c *Classifier) feedForward(s *model.Scope, x *Node) *Node {
	cfg := c.Config
	dt := hf.Compute(&c.Base).DType()
	keep := func(x *Node) *Node { return ConvertDType(ConvertDType(x, dt), variableDType) }
	first, second := s.At("intermediate").At("dense"), s.At("output").At("dense")
	if cfg.ModelType == DINOv2 {
		first, second = s.At("mlp").At("fc1"), s.At("mlp").At("fc2")
	}
	var h *Node
	if cfg.UseSwiGLUFFN {
		first, second = s.At("mlp").At("weights_in"), s.At("mlp").At("weights_out")
		both := keep(c.linear(first, x, 2*cfg.FFNWidth(), true))
		last := both.Rank() - 1
		gate, up := SliceAxis(both, last, AxisRange(0, cfg.FFNWidth())), SliceAxis(both, last, AxisRange(cfg.FFNWidth(), 2*cfg.FFNWidth()))
		h = Mul(hf.Activate("silu", gate), up)
	} else {
		h = hf.Activate(cfg.HiddenAct, keep(c.linear(first, x, cfg.FFNWidth(), true)))
	}
	return c.linear(second, ConvertDType(h, dt), cfg.HiddenSize, true)
}

// attention is ViTSelfAttention with eager attention: query, key and value projections split
// into heads, softmax of the scores scaled by head_dim^-1/2, dropout, the weighted values;
// [B, L, hidden] in, [B, L, hidden] out (before attention.output.dense).
func (c *Classifier) attention(s *model.Scope, x *Node) *Node {
	cfg := c.Config
	dims := x.Shape().Dimensions
	batch, seqLen := dims[0], dims[1]
	heads, headDim := cfg.NumAttentionHeads, cfg.HeadDim()
	split := func(name string) *Node {
		y := c.linear(s.At("%s", name), x, cfg.HiddenSize, cfg.QKVBias)
		return TransposeAllAxes(Reshape(y, batch, seqLen, heads, headDim), 0, 2, 1, 3) // [B, heads, L, D]
	}
	q, k, v := split("query"), split("key"), split("value")
	dt := hf.Compute(&c.Base).DType()
	product := func(a, b *Node, eq string, axes half.Axes) *Node {
		if hf.Compute(&c.Base).Mixed() {
			return half.Product(a, b, dt, axes)
		}
		return Einsum(eq, a, b)
	}
	scores := MulScalar(product(q, k, "bhqd,bhkd->bhqk", half.ScoreAxes(2)), 1/math.Sqrt(float64(headDim)))
	probs := hf.Dropout(s.At("dropout"), Softmax(scores, -1), cfg.AttentionProbsDropoutProb)
	out := ConvertDType(product(probs, v, "bhqk,bhkd->bhqd", half.MixAxes(2)), dt)
	return Reshape(TransposeAllAxes(out, 0, 2, 1, 3), batch, seqLen, cfg.HiddenSize)
}

// linear is torch.nn.Linear with HF variable names: weight [out, in] (fresh: normal with
// standard deviation initializer_range) and bias [out] (fresh: zeros) when bias is set; the
// product runs on the compute dtype, and an attached LoRA adapter that targets the layer adds
// its update. The result is float32.
func (c *Classifier) linear(s *model.Scope, x *Node, outDim int, bias bool) *Node {
	g := x.Graph()
	inDim := x.Shape().Dimensions[x.Rank()-1]
	w := s.WithInitializer(c.normal()).VariableWithShape("weight", shapes.Make(variableDType, outDim, inDim)).NodeValue(g)
	var b *Node
	if bias {
		b = s.WithInitializer(Zeros).VariableWithShape("bias", shapes.Make(variableDType, outDim)).NodeValue(g)
	}
	return c.Adapter().Linear(s, x, hf.Compute(&c.Base).Dense(x, w, b))
}

// layerNorm is torch.nn.LayerNorm over the last axis (eps layer_norm_eps) with HF variable
// names weight and bias; float32 whatever x's dtype.
func (c *Classifier) layerNorm(s *model.Scope, x *Node) *Node {
	g := x.Graph()
	width := x.Shape().Dimensions[x.Rank()-1]
	gamma := s.WithInitializer(Ones).VariableWithShape("weight", shapes.Make(variableDType, width)).NodeValue(g)
	beta := s.WithInitializer(Zeros).VariableWithShape("bias", shapes.Make(variableDType, width)).NodeValue(g)
	return nn.LayerNorm(ConvertDType(x, variableDType), []int{x.Rank() - 1}, c.Config.LayerNormEps, gamma, beta, nil)
}

// normal draws N(0, initializer_range²) values from the Store's random state.
func (c *Classifier) normal() model.VariableInitializer {
	std := c.Config.InitializerRange
	return func(g *Graph, shape shapes.Shape) *Node {
		return MulScalar(c.Store().RandomNormal(g, shape), std)
	}
}

// truncNormal is normal truncated to [-2, 2] (torch's trunc_normal_ default bounds, absolute,
// which at ViT's standard deviations clamp nothing in practice), by clamping.
func (c *Classifier) truncNormal() model.VariableInitializer {
	n := c.normal()
	return func(g *Graph, shape shapes.Shape) *Node { return ClipScalar(n(g, shape), -2, 2) }
}
