package deberta

import (
	"fmt"

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

// Classifier is a DeBERTa-v2/v3 sequence classifier with the semantics of transformers'
// DebertaV2ForSequenceClassification: the encoder (see Encoder), the ContextPooler (the
// first token's last hidden state, dropout, pooler.dense, pooler_hidden_act), dropout and
// the classifier.
//
// Its variables live in a model.Store (Store returns it) under paths that map one to one to
// the HF tensor names (VarPath): "/deberta/..." for the encoder, "/pooler/..." and
// "/classifier/..." for the head. Variables not in the Store yet (a random model, or the head
// of a pretrained one) are created on first use and initialised as transformers does: normal
// weights with standard deviation initializer_range (embeddings, relative embeddings and
// every dense), the padding token's embedding row zero, zero biases, unit LayerNorm gains,
// drawn from the Store's random state.
//
// With Config.Head TokenClassification it is DebertaV2ForTokenClassification instead: dropout
// and the classifier on every token's last hidden state (see TokenHead), without a pooler.
//
// A Classifier is a model.StoreProvider, so it can be handed to the accelerator's Prepare.
type Classifier struct {
	// Config is the model's configuration; do not change it after variables were created
	// (the dropout rates aside, read when a graph is built).
	Config Config

	// Base holds the Store, the compute dtype and the LoRA adapter: it gives the classifier
	// Store, SetComputeDType (the projections, the content and relative scores, the mix of the values),
	// ComputeDType, NumParameters, AttachLoRA (see LoRABase) and Adapter.
	hf.Base
}

// NewClassifier returns a classifier for cfg whose variables live in store (a new Store when
// nil). Variables already in the Store under the classifier's paths (loaded by
// LoadPretrained) are used as they are; the others are initialised on first use.
func NewClassifier(cfg Config, store *model.Store) (*Classifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("deberta: invalid config: %w", err)
	}
	c := &Classifier{Config: cfg}
	c.Base = hf.NewBase("deberta", store, func() hf.ClassifierConfig { return c.Config })
	return c, nil
}

// Logits builds the classifier's forward pass: inputs are [input_ids, attention_mask,
// token_type_ids] (integer [B, L] nodes, as the text processor's Process makes them (auto.LoadTokenizer);
// attention_mask 1 for real tokens, 0 for padding; token_type_ids may be left out, and are
// not read when type_vocab_size is 0, as in DeBERTa-v3) and the result is the float32
// [B, num_labels] logits, or with Config.Head TokenClassification the float32 [B, L,
// num_labels] logits of every token (padding included: the caller masks them out). s is the
// scope the model lives in, normally the root scope handed
// over by model.Exec or the accelerator. Dropout is active only when the Store marks the
// graph as training. It panics on invalid inputs, as GoMLX graph functions do (model.Exec
// and the accelerator turn the panic into an error).
func (c *Classifier) Logits(s *model.Scope, inputs []*Node) *Node {
	if len(inputs) < 2 || len(inputs) > 3 {
		exceptions.Panicf("deberta: Classifier.Logits wants [input_ids, attention_mask, token_type_ids], got %d inputs", len(inputs))
	}
	var types *Node
	if len(inputs) == 3 {
		types = inputs[2]
	}
	// The variables this graph created (a fresh head, LoRA's) get the adapter's trainable
	// flags before a training step takes the trainable ones (nothing without an adapter).
	defer c.Adapter().Freeze(c.Store())
	hidden := c.Encoder(s, inputs[0], inputs[1], types)
	if c.Config.Head == hf.TokenClassification {
		return c.TokenHead(s, hidden)
	}
	return c.Head(s, hidden)
}

// TokenHead is DebertaV2ForTokenClassification's head on the last hidden states [B, L,
// hidden]: dropout (hidden_dropout_prob; cls_dropout is the sequence classifier's), then the
// classifier (weight [num_labels, hidden], bias [num_labels]) on every token. The result is
// the float32 [B, L, num_labels] logits.
func (c *Classifier) TokenHead(s *model.Scope, hidden *Node) *Node {
	cfg := c.Config
	if hidden.Rank() != 3 || hidden.Shape().Dimensions[2] != cfg.HiddenSize {
		exceptions.Panicf("deberta: Classifier.TokenHead wants last hidden states [batch, seq_len, %d], got %s", cfg.HiddenSize, hidden.Shape())
	}
	x := hf.Dropout(s.At("dropout"), hidden, cfg.HiddenDropoutProb)
	return c.linear(s.At("classifier"), x, cfg.NumLabels, true)
}

// Head is the sequence-classification head on the last hidden states [B, L, hidden]: the
// ContextPooler (the first token's state, dropout pooler_dropout, pooler.dense,
// pooler_hidden_act), dropout (cls_dropout, or hidden_dropout_prob when unset) and the
// classifier. The result is the float32 [B, num_labels] logits.
func (c *Classifier) Head(s *model.Scope, hidden *Node) *Node {
	cfg := c.Config
	dims := hidden.Shape().Dimensions
	if hidden.Rank() != 3 || dims[2] != cfg.HiddenSize {
		exceptions.Panicf("deberta: Classifier.Head wants last hidden states [batch, seq_len, %d], got %s", cfg.HiddenSize, hidden.Shape())
	}
	ps := s.At("pooler")
	x := Reshape(Slice(hidden, AxisRange(), AxisRange(0, 1), AxisRange()), dims[0], dims[2])
	x = hf.Dropout(ps.At("dropout"), x, cfg.PoolerDropout)
	x = hf.Activate(cfg.PoolerHiddenAct, c.linear(ps.At("dense"), x, cfg.HiddenSize, true))
	x = hf.Dropout(s.At("dropout"), x, cfg.clsDropout())
	return c.linear(s.At("classifier"), x, cfg.NumLabels, true)
}

// normal draws fresh weights N(0, initializer_range²) from the Store's random state
// (initializer_range 0 means 0.02, as in transformers).
func (c *Classifier) normal(g *Graph, shape shapes.Shape) *Node {
	std := c.Config.InitializerRange
	if std == 0 {
		std = 0.02
	}
	return MulScalar(c.Store().RandomNormal(g, shape), std)
}

// linear is torch.nn.Linear with HF variable names: weight [out, in] (fresh: normal), and
// bias [out] (fresh: zeros) when bias is set, plus the update of the LoRA adapter on the
// layers it targets (see AttachLoRA). The result is float32; under mixed precision
// the product runs on the compute dtype (half.Compute.Dense), x converted to it where it is not.
func (c *Classifier) linear(s *model.Scope, x *Node, outDim int, bias bool) *Node {
	g := x.Graph()
	inDim := x.Shape().Dimensions[x.Rank()-1]
	w := s.WithInitializer(c.normal).VariableWithShape("weight", shapes.Make(variableDType, outDim, inDim)).NodeValue(g)
	var b *Node
	if bias {
		b = s.WithInitializer(Zeros).VariableWithShape("bias", shapes.Make(variableDType, outDim)).NodeValue(g)
	}
	return c.Adapter().Linear(s, x, hf.Compute(&c.Base).Dense(x, w, b)) // LoRA's update on the layers it targets (none without an adapter)
}

// layerNorm is torch.nn.LayerNorm over the last axis (eps layer_norm_eps) with HF variable
// names, weight and bias; float32 whatever x's dtype.
func (c *Classifier) layerNorm(s *model.Scope, x *Node) *Node {
	gamma, beta := c.normVariables(s, x.Graph(), x.Shape().Dimensions[x.Rank()-1])
	return nn.LayerNorm(ConvertDType(x, variableDType), []int{x.Rank() - 1}, c.Config.LayerNormEps, gamma, beta, nil)
}

// normVariables returns a LayerNorm's weight (fresh: ones) and bias (fresh: zeros) of the
// given width.
func (c *Classifier) normVariables(s *model.Scope, g *Graph, width int) (gamma, beta *Node) {
	gamma = s.WithInitializer(Ones).VariableWithShape("weight", shapes.Make(variableDType, width)).NodeValue(g)
	beta = s.WithInitializer(Zeros).VariableWithShape("bias", shapes.Make(variableDType, width)).NodeValue(g)
	return gamma, beta
}
