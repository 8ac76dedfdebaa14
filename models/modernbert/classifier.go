package modernbert

import (
	"fmt"
	"math"
	"strings"

	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/nn"
	"github.com/gomlx/gomlx/support/exceptions"
)

// variableDType is the dtype of every variable and of the computation.
const variableDType = dtypes.Float32

// Classifier is a ModernBERT sequence classifier with the semantics of transformers'
// ModernBertForSequenceClassification: the encoder (see Encoder), pooling of its last hidden
// states (classifier_pooling "cls" or "mean"), the prediction head (dense, activation,
// LayerNorm), dropout and the classifier.
//
// Its variables live in a model.Store (Store returns it) under paths that map one to one to
// the HF tensor names (VarPath): "/model/..." for the encoder, "/head/..." and
// "/classifier/..." for the head. Variables not in the Store yet (a random model, or the
// classifier of a pretrained one) are created on first use and initialised as transformers
// does: truncated normals (at initializer_cutoff_factor standard deviations) with the
// standard deviation initializer_range for the embeddings, Wqkv and Wi,
// initializer_range/sqrt(2·num_hidden_layers) for the Wo's and the head's dense,
// hidden_size^-1/2 for the classifier, zero biases and unit LayerNorm gains, drawn from the
// Store's random state.
//
// With Config.Head TokenClassification it is ModernBertForTokenClassification instead: the
// same prediction head, dropout and classifier on every token's last hidden state (see
// TokenHead), with the same variables.
//
// A Classifier is a model.StoreProvider, so it can be handed to the accelerator's Prepare.
type Classifier struct {
	// Config is the model's configuration; do not change it after variables were created
	// (ClassifierPooling and the dropout rates aside, read when a graph is built).
	Config Config

	// Base holds the Store, the compute dtype and the LoRA adapter: it gives the classifier
	// Store, SetComputeDType (the projections, the attention scores and the mix of the values; the rotary embeddings and GeGLU stay float32),
	// ComputeDType, NumParameters, AttachLoRA (see LoRABase) and Adapter.
	hf.Base
}

// NewClassifier returns a classifier for cfg whose variables live in store (a new Store when
// nil). Variables already in the Store under the classifier's paths (loaded by
// LoadPretrained) are used as they are; the others are initialised on first use.
func NewClassifier(cfg Config, store *model.Store) (*Classifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("modernbert: invalid config: %w", err)
	}
	c := &Classifier{Config: cfg}
	c.Base = hf.NewBase("modernbert", store, func() hf.ClassifierConfig { return c.Config })
	return c, nil
}

// Logits builds the classifier's forward pass: inputs are [input_ids, attention_mask]
// (integer [B, L] nodes; attention_mask 1 for real tokens, 0 for padding) and the result is
// the float32 [B, num_labels] logits, or with Config.Head TokenClassification the float32
// [B, L, num_labels] logits of every token (padding included: the caller masks them out). s
// is the scope the model lives in, normally the root scope handed over by model.Exec or the
// accelerator. Dropout is active only when the Store marks the graph as training. It panics
// on invalid inputs, as GoMLX graph functions do (model.Exec and the accelerator turn the
// panic into an error).
func (c *Classifier) Logits(s *model.Scope, inputs []*Node) *Node {
	if len(inputs) != 2 {
		exceptions.Panicf("modernbert: Classifier.Logits wants [input_ids, attention_mask], got %d inputs", len(inputs))
	}
	// The variables this graph created (a fresh classifier, LoRA's) get the adapter's
	// trainable flags before a training step takes the trainable ones (nothing without one).
	defer c.Adapter().Freeze(c.Store())
	hidden := c.Encoder(s, inputs[0], inputs[1])
	if c.Config.Head == hf.TokenClassification {
		return c.TokenHead(s, hidden)
	}
	return c.Head(s, c.Pool(hidden, inputs[1]))
}

// Pool turns the last hidden states [B, L, hidden] into one vector per sequence [B, hidden]
// by the Config's ClassifierPooling: the first token's state ("cls"), or the mean of the
// states of the tokens attentionMask keeps ("mean").
func (c *Classifier) Pool(hidden, attentionMask *Node) *Node {
	dims := hidden.Shape().Dimensions
	if c.Config.ClassifierPooling == "cls" {
		return Reshape(Slice(hidden, AxisRange(), AxisRange(0, 1), AxisRange()), dims[0], dims[2])
	}
	m := ConvertDType(attentionMask, hidden.DType())
	sum := ReduceSum(Mul(hidden, InsertAxes(m, -1)), 1)
	return Div(sum, BroadcastToShape(InsertAxes(ReduceSum(m, 1), -1), sum.Shape())) // [B, H] / [B, 1]
}

// Head applies the prediction head and the classifier to the pooled output [B, hidden]:
// head.dense, classifier_activation, head.norm, dropout (classifier_dropout), classifier. The
// result is the float32 [B, num_labels] logits.
func (c *Classifier) Head(s *model.Scope, pooled *Node) *Node {
	cfg := c.Config
	if pooled.Rank() != 2 || pooled.Shape().Dimensions[1] != cfg.HiddenSize {
		exceptions.Panicf("modernbert: Classifier.Head wants a pooled output [batch, %d], got %s", cfg.HiddenSize, pooled.Shape())
	}
	return c.head(s, pooled)
}

// TokenHead applies ModernBertForTokenClassification's head to the last hidden states
// [B, L, hidden], each token on its own: the prediction head (head.dense,
// classifier_activation, head.norm), dropout (classifier_dropout) and the classifier, the
// variables and computation of Head. The result is the float32 [B, L, num_labels] logits.
func (c *Classifier) TokenHead(s *model.Scope, hidden *Node) *Node {
	if hidden.Rank() != 3 || hidden.Shape().Dimensions[2] != c.Config.HiddenSize {
		exceptions.Panicf("modernbert: Classifier.TokenHead wants last hidden states [batch, seq_len, %d], got %s", c.Config.HiddenSize, hidden.Shape())
	}
	return c.head(s, hidden)
}

// head is the prediction head, dropout and classifier over the last axis of x ([B, hidden]
// or [B, L, hidden]).
func (c *Classifier) head(s *model.Scope, x *Node) *Node {
	cfg := c.Config
	hs := s.At("head")
	x = c.linear(hs.At("dense"), x, cfg.HiddenSize, cfg.ClassifierBias, c.outStd())
	x = c.layerNorm(hs.At("norm"), hf.Activate(cfg.ClassifierActivation, x))
	x = hf.Dropout(s.At("drop"), x, cfg.ClassifierDropout)
	return c.linear(s.At("classifier"), x, cfg.NumLabels, true, 1/math.Sqrt(float64(cfg.HiddenSize)))
}

// inStd and outStd are transformers' standard deviations of fresh weights: "in" for the
// embeddings, Wqkv and Wi, "out" (scaled by the depth) for the Wo's and the head's dense.
func (c *Classifier) inStd() float64 { return c.Config.InitializerRange }

func (c *Classifier) outStd() float64 {
	return c.Config.InitializerRange / math.Sqrt(2*float64(c.Config.NumHiddenLayers))
}

// linear is torch.nn.Linear with HF variable names: weight [out, in] (fresh: truncated
// normal with standard deviation std), and bias [out] (fresh: zeros) when bias is set. The
// result is float32; under mixed precision the product runs on the compute dtype
// (half.Compute.Dense), x converted to it where it is not.
func (c *Classifier) linear(s *model.Scope, x *Node, outDim int, bias bool, std float64) *Node {
	g := x.Graph()
	inDim := x.Shape().Dimensions[x.Rank()-1]
	w := s.WithInitializer(c.truncNormal(std)).VariableWithShape("weight", shapes.Make(variableDType, outDim, inDim)).NodeValue(g)
	var b *Node
	if bias {
		b = s.WithInitializer(Zeros).VariableWithShape("bias", shapes.Make(variableDType, outDim)).NodeValue(g)
	}
	return c.Adapter().Linear(s, x, hf.Compute(&c.Base).Dense(x, w, b)) // LoRA's update on the layers it targets (none without an adapter)
}

// linearHalves is linear with 2·half outputs returned as its two halves [..., half], each
// the product with its half of the weight's rows (and of the bias): the same numbers as
// slicing linear's result, but the gradients of the halves reach x through two products
// instead of being padded back to the whole width and added, a loop XLA's CPU plugin runs
// with a branch per element (GeGLU's backward pass was 22% of a MiniLM-sized ModernBERT
// bf16 step that way; docs/performance.md). Under a LoRA adapter that targets the layer,
// its update is added to the whole result, which is then sliced.
func (c *Classifier) linearHalves(s *model.Scope, x *Node, half int, bias bool, std float64) (lo, hi *Node) {
	g := x.Graph()
	inDim := x.Shape().Dimensions[x.Rank()-1]
	w := s.WithInitializer(c.truncNormal(std)).VariableWithShape("weight", shapes.Make(variableDType, 2*half, inDim)).NodeValue(g)
	var b *Node
	if bias {
		b = s.WithInitializer(Zeros).VariableWithShape("bias", shapes.Make(variableDType, 2*half)).NodeValue(g)
	}
	part := func(i int) *Node {
		r := AxisRange(i*half, (i+1)*half)
		var bi *Node
		if b != nil {
			bi = Slice(b, r)
		}
		return hf.Compute(&c.Base).Dense(x, Slice(w, r), bi)
	}
	lo, hi = part(0), part(1)
	whole := Concatenate([]*Node{lo, hi}, -1)
	if updated := c.Adapter().Linear(s, x, whole); updated != whole {
		last := updated.Rank() - 1
		return SliceAxis(updated, last, AxisRange(0, half)), SliceAxis(updated, last, AxisRange(half, 2*half))
	}
	return lo, hi
}

// layerNorm is torch.nn.LayerNorm over the last axis (eps norm_eps) with HF variable names:
// weight, and bias when norm_bias; float32 whatever x's dtype.
func (c *Classifier) layerNorm(s *model.Scope, x *Node) *Node {
	g := x.Graph()
	width := x.Shape().Dimensions[x.Rank()-1]
	gamma := s.WithInitializer(Ones).VariableWithShape("weight", shapes.Make(variableDType, width)).NodeValue(g)
	var beta *Node
	if c.Config.NormBias {
		beta = s.WithInitializer(Zeros).VariableWithShape("bias", shapes.Make(variableDType, width)).NodeValue(g)
	}
	return nn.LayerNorm(ConvertDType(x, variableDType), []int{x.Rank() - 1}, c.Config.NormEps, gamma, beta, nil)
}

// truncRedraws is how many times truncNormal redraws the values outside the cutoff before
// clamping what is left (a fraction of about 0.05^5 at 2 standard deviations).
const truncRedraws = 4

// truncNormal draws N(0, std²) values truncated at ±cutoff·std (transformers'
// trunc_normal_ with initializer_cutoff_factor) from the Store's random state, by redrawing
// the values outside the interval.
func (c *Classifier) truncNormal(std float64) model.VariableInitializer {
	cutoff := c.Config.InitializerCutoffFactor
	if cutoff == 0 {
		cutoff = 3
	}
	return func(g *Graph, shape shapes.Shape) *Node {
		x := c.Store().RandomNormal(g, shape)
		limit := Scalar(g, shape.DType, cutoff)
		for range truncRedraws {
			x = Where(GreaterThan(Abs(x), limit), c.Store().RandomNormal(g, shape), x)
		}
		return MulScalar(ClipScalar(x, -cutoff, cutoff), std)
	}
}

// at returns the scope of a dotted HF module path under s: at(s, "model.layers").
func at(s *model.Scope, dotted string) *model.Scope {
	for part := range strings.SplitSeq(dotted, ".") {
		s = s.At("%s", part)
	}
	return s
}
