package bert

import (
	"fmt"

	"github.com/goaccel/goaccel/models/internal/half"
	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Classifier is a sequence classifier of the BERT family with the semantics of Hugging
// Face's BertForSequenceClassification, RobertaForSequenceClassification,
// DistilBertForSequenceClassification or ElectraForSequenceClassification (the Config's
// family): the encoder, then the family's head (see Head). With Config.Head
// TokenClassification it is the family's token classifier instead
// (BertForTokenClassification, ...: see TokenHead), whose Logits are per token.
//
// Its variables live in a model.Store (Store returns it), under paths that map one to one to
// HF tensor names (see HFName): "/bert/..." for BERT's encoder ("/roberta/...", ...) and
// "/classifier/{weight,bias}" for its head. Variables that are not in the Store yet (a random
// model, or the head of a pretrained one) are created on first use and initialised like HF
// does: N(0, 0.02²) weights, zero biases, unit LayerNorm gains, from the Store's random state
// (accelerator Prepare seeds it from accelerator.Config.Seed, for reproducible runs).
//
// A Classifier is a model.StoreProvider, so it can be handed to the accelerator's Prepare.
type Classifier struct {
	// Config is the model's configuration; do not change it after variables were created,
	// GradientCheckpointing aside (read when a training graph is built).
	Config Config

	store   *model.Store
	compute half.Compute
}

// NewClassifier returns a classifier for cfg whose variables live in store (a new Store when
// nil). Variables already in the Store under the classifier's paths (for instance loaded by
// LoadPretrained) are used as they are; the others are initialised on first use.
func NewClassifier(cfg Config, store *model.Store) (*Classifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("bert: invalid config: %w", err)
	}
	if store == nil {
		store = model.NewStore()
	}
	return &Classifier{Config: cfg, store: store}, nil
}

// Store returns the model.Store that holds the classifier's variables.
func (c *Classifier) Store() *model.Store { return c.store }

// SetComputeDType selects the dtype of the activations and matrix products: Float32 (the
// default), or BFloat16 / Float16 for mixed precision. Variables stay float32 (the master
// weights the optimizer updates) and are converted where used; LayerNorm runs in float32,
// and Encoder and Logits return float32. Call it before building any graph.
func (c *Classifier) SetComputeDType(dtype dtypes.DType) error { return c.compute.Set("bert", dtype) }

// ComputeDType returns the dtype of the activations (Float32 unless SetComputeDType changed it).
func (c *Classifier) ComputeDType() dtypes.DType { return c.dtype() }

// dtype is the compute dtype, Float32 when unset.
func (c *Classifier) dtype() dtypes.DType { return c.compute.DType() }

// Logits builds the classifier's forward pass: inputs are [input_ids, attention_mask,
// token_type_ids] (integer [B, L] nodes, as produced by Tokenizer.Collate; token_type_ids
// may be omitted) and the result is the float32 [B, num_labels] logits, or with Config.Head
// TokenClassification the float32 [B, L, num_labels] logits of every token (padding
// included: the caller masks them out of a loss or a metric). s is the scope the
// model lives in, normally the root scope handed over by model.Exec or the accelerator.
// Dropout is active only when the Store marks the graph as training.
//
// Like every GoMLX graph function it panics on invalid inputs (model.Exec and the
// accelerator turn the panic into an error).
func (c *Classifier) Logits(s *model.Scope, inputs []*Node) *Node {
	if len(inputs) < 2 || len(inputs) > 3 {
		exceptions.Panicf("bert: Classifier.Logits wants [input_ids, attention_mask, token_type_ids], got %d inputs",
			len(inputs))
	}
	var tokenTypeIDs *Node
	if len(inputs) == 3 {
		tokenTypeIDs = inputs[2]
	}
	// The variables this graph created (a fresh head, LoRA's) get the adapter's trainable
	// flags before a training step takes the trainable ones (nothing without an adapter).
	defer c.Config.adapter.Freeze(c.store)
	hidden, pooled := c.Encoder(s, inputs[0], inputs[1], tokenTypeIDs)
	if c.Config.Head == TokenClassification {
		return c.TokenHead(s, hidden)
	}
	if pooled == nil {
		pooled = firstToken(hidden)
	}
	return c.Head(s, pooled)
}

// Head applies the family's classification head to the pooled output [B, hidden]: BERT's
// pooler output, or the first token's last hidden state for the families without a pooler.
// Dropout has rate classifier_dropout, or hidden_dropout_prob when unset (DistilBERT:
// seq_classif_dropout). The head is
//
//	bert        dropout, classifier                                  ("/classifier/weight" [num_labels, hidden])
//	distilbert  pre_classifier, ReLU, dropout, classifier            ("/pre_classifier/...", "/classifier/...")
//	roberta     dropout, classifier.dense, tanh, dropout, out_proj   ("/classifier/dense/...", "/classifier/out_proj/...")
//	electra     the same with the exact GELU instead of tanh
//
// and the result is float32 [B, num_labels] logits.
func (c *Classifier) Head(s *model.Scope, pooled *Node) *Node {
	cfg := c.Config
	if pooled.Rank() != 2 || pooled.Shape().Dimensions[1] != cfg.HiddenSize {
		exceptions.Panicf("bert: Classifier.Head wants a pooled output [batch, %d], got %s", cfg.HiddenSize, pooled.Shape())
	}
	dt := c.dtype()
	x := ConvertDType(pooled, dt)
	rate := cfg.classifierDropout()
	cs := s.At("classifier")
	switch f := cfg.family(); f.head {
	case headPreClassify:
		x = activation.Relu(linear(s.At("pre_classifier"), cfg, x, cfg.HiddenSize))
		x = hf.Dropout(cs, x, rate)
		x = linear(cs, cfg, ConvertDType(x, dt), cfg.NumLabels)
	case headDenseOut:
		x = hf.Dropout(cs, x, rate)
		x = linear(cs.At("dense"), cfg, x, cfg.HiddenSize)
		if f.modelType == "electra" {
			x = activation.Gelu(x)
		} else {
			x = Tanh(x)
		}
		x = hf.Dropout(cs.At("out_proj"), x, rate)
		x = linear(cs.At("out_proj"), cfg, ConvertDType(x, dt), cfg.NumLabels)
	default:
		x = hf.Dropout(cs, x, rate)
		x = linear(cs, cfg, x, cfg.NumLabels)
	}
	return x
}

// TokenHead applies the family's token-classification head to the last hidden states
// [B, L, hidden], as transformers' *ForTokenClassification does: dropout (classifier_dropout,
// or hidden_dropout_prob when unset; DistilBERT: its dropout, not seq_classif_dropout), then
// "classifier" (weight [num_labels, hidden], bias [num_labels]) on every token. The result
// is the float32 [B, L, num_labels] logits. Its variables are those of HeadTensors with
// Head TokenClassification; fresh ones are N(0, initializer_range²) weights and zero biases.
func (c *Classifier) TokenHead(s *model.Scope, hidden *Node) *Node {
	cfg := c.Config
	if hidden.Rank() != 3 || hidden.Shape().Dimensions[2] != cfg.HiddenSize {
		exceptions.Panicf("bert: Classifier.TokenHead wants last hidden states [batch, seq_len, %d], got %s", cfg.HiddenSize, hidden.Shape())
	}
	cs := s.At("classifier")
	x := hf.Dropout(cs, ConvertDType(hidden, c.dtype()), cfg.tokenDropout())
	return linear(cs, cfg, x, cfg.NumLabels)
}

// NumParameters is the number of scalar weights of the classifier (encoder and head).
func (c *Classifier) NumParameters() int {
	n := 0
	for _, t := range c.Config.Tensors() {
		n += shapes.Make(variableDType, t.Dims...).Size()
	}
	return n
}
