package bert

import (
	"math"
	"slices"
	"strings"

	"github.com/goaccel/goaccel/models/internal/half"
	"github.com/goaccel/goaccel/models/internal/hf"
	rematerialise "github.com/goaccel/goaccel/models/internal/remat"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/layers/attention"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/nn"
	"github.com/gomlx/gomlx/support/exceptions"
)

// The graph functions below build the BERT encoder with GoMLX's own building blocks, each
// checked against a plain-ops reference in the tests: nn.Dense (fused dense), nn.LayerNorm
// (fused layer norm; eps inside the square root, biased variance, as torch.nn.LayerNorm),
// activation.Gelu (exact erf GELU), attention.Core (fused scaled-dot-product attention where
// the backend has it; in training with attention dropout selfAttention writes it out)
// and this package's dropout (active only when the Store marks the graph as training).
// Variables are created here, under HF names (see names.go), instead of through
// layers.Dense / norm.LayerNorm, whose variable names ("dense/weights",
// "layer_normalization/gain") and weight layout ([in, out]) differ from HF's.

// variableDType is the dtype of every variable (the master weights, also under mixed
// precision); activations use the Classifier's compute dtype.
const variableDType = dtypes.Float32

// Encoder builds the encoder's forward pass (BertModel, RobertaModel, DistilBertModel or
// ElectraModel, by the Config's family) under the family's scope ("bert", "roberta",
// "distilbert", "electra"): it returns the last hidden states [B, L, hidden] and, for BERT's
// sequence classifier, the pooled output [B, hidden] (tanh dense on the [CLS] state; nil for
// the families without a pooler and for token classifiers), both float32 (computed in the Classifier's compute dtype, see SetComputeDType).
//
// inputIDs, attentionMask and tokenTypeIDs are integer [B, L] nodes; attentionMask is 1 for
// real tokens and 0 for padding (padding keys get no attention). tokenTypeIDs may be nil
// (all zeros); DistilBERT ignores them. Dropout is applied only when s.IsTraining(g). L must
// not exceed max_position_embeddings (less pad_token_id+1 for RoBERTa). It panics (as GoMLX
// graph functions do) on inputs of the wrong rank, dtype or length; model.Exec turns the
// panic into an error.
func (c *Classifier) Encoder(s *model.Scope, inputIDs, attentionMask, tokenTypeIDs *Node) (hidden, pooled *Node) {
	cfg := c.Config
	f := cfg.family()
	checkInputs(cfg, inputIDs, attentionMask, tokenTypeIDs)
	s = s.At("%s", f.prefix)
	x := embeddings(s, cfg, inputIDs, tokenTypeIDs, c.dtype())

	// Boolean key mask, materialised to the full [B, 1, L, L] score layout (BHSD): the
	// pure-Go fused attention kernel documents its mask as dense [L, L] rows per head.
	batch, seqLen := inputIDs.Shape().Dimensions[0], inputIDs.Shape().Dimensions[1]
	keep := NotEqual(attentionMask, ScalarZero(attentionMask.Graph(), attentionMask.DType()))
	mask := BroadcastToDims(Reshape(keep, batch, 1, 1, seqLen), batch, 1, seqLen, seqLen)

	layerScope := at(s, f.layers)
	remat := cfg.GradientCheckpointing && s.IsTraining(x.Graph())
	for i := range cfg.NumHiddenLayers {
		x = encoderLayer(layerScope.At("%d", i), cfg, rematerialise.Begin(s.Store(), cfg.dropout(), x, remat), mask)
	}
	hidden = rematerialise.End(s.Store(), cfg.dropout(), x, remat)
	if cfg.hasPooler() {
		pooled = Tanh(linear(s.At("pooler").At("dense"), cfg, firstToken(hidden), cfg.HiddenSize))
	}
	return ConvertDType(hidden, variableDType), pooled
}

// firstToken is x[:, 0, :] of a [B, L, H] node: the [CLS] (or <s>) state, [B, H].
func firstToken(x *Node) *Node {
	dims := x.Shape().Dimensions
	return Reshape(Slice(x, AxisRange(), AxisRange(0, 1), AxisRange()), dims[0], dims[2])
}

// at returns the scope of a dotted HF module path under s: at(s, "encoder.layer").
func at(s *model.Scope, dotted string) *model.Scope {
	for part := range strings.SplitSeq(dotted, ".") {
		s = s.At("%s", part)
	}
	return s
}

// checkInputs panics with a clear message when the encoder inputs do not have the expected
// shapes and dtypes.
func checkInputs(cfg Config, inputIDs, attentionMask, tokenTypeIDs *Node) {
	if inputIDs == nil || attentionMask == nil {
		exceptions.Panicf("bert: input_ids and attention_mask are required, got input_ids=%v attention_mask=%v",
			inputIDs != nil, attentionMask != nil)
	}
	ids := inputIDs.Shape()
	if ids.Rank() != 2 || !ids.DType.IsInt() {
		exceptions.Panicf("bert: input_ids must be an integer [batch, seq_len] tensor, got %s", ids)
	}
	if seqLen := ids.Dimensions[1]; seqLen+cfg.positionOffset() > cfg.MaxPositionEmbeddings {
		exceptions.Panicf("bert: sequence length %d is above max_position_embeddings (%d, less %d for %s)",
			seqLen, cfg.MaxPositionEmbeddings, cfg.positionOffset(), cfg.Family())
	}
	for _, in := range []struct {
		name string
		node *Node
	}{{"attention_mask", attentionMask}, {"token_type_ids", tokenTypeIDs}} {
		if in.node == nil {
			continue
		}
		if !in.node.DType().IsInt() || !slices.Equal(in.node.Shape().Dimensions, ids.Dimensions) {
			exceptions.Panicf("bert: %s must be an integer tensor shaped like input_ids %v, got %s",
				in.name, ids.Dimensions, in.node.Shape())
		}
	}
}

// embeddings sums word, position and (but for DistilBERT) token-type embeddings, then
// applies LayerNorm (in float32) and dropout (BertEmbeddings), and ELECTRA's projection to
// the hidden size when its embeddings are narrower; s is the family's root scope and the
// result has the compute dtype dt.
//
// Positions are 0..L-1, or for RoBERTa pad_token_id+1+i on the tokens that are not padding
// and pad_token_id on padding (create_position_ids_from_input_ids: a running count of the
// non-padding ids, so it is the input ids, not the attention mask, that decide).
func embeddings(s *model.Scope, cfg Config, inputIDs, tokenTypeIDs *Node, dt dtypes.DType) *Node {
	f := cfg.family()
	es := s.At("embeddings")
	g := inputIDs.Graph()
	batch, seqLen := inputIDs.Shape().Dimensions[0], inputIDs.Shape().Dimensions[1]
	normal := normalInitializer(s.Store(), cfg.InitializerRange)
	width := cfg.embeddingSize()

	lookup := func(name string, rows int, ids *Node) *Node {
		table := es.At("%s", name).WithInitializer(normal).
			VariableWithShape("weight", shapes.Make(variableDType, rows, width)).NodeValue(g)
		return Gather(table, InsertAxes(ConvertDType(ids, dtypes.Int32), -1))
	}
	x := lookup("word_embeddings", cfg.VocabSize, inputIDs) // [B, L, E]
	if f.paddingOffset {
		ids := ConvertDType(inputIDs, dtypes.Int32)
		real := ConvertDType(NotEqual(ids, Scalar(g, dtypes.Int32, cfg.PadTokenID)), dtypes.Int32)
		positions := AddScalar(Mul(CumSum(real, 1), real), float64(cfg.PadTokenID))
		x = Add(x, lookup("position_embeddings", cfg.MaxPositionEmbeddings, positions))
	} else {
		positions := Iota(g, shapes.Make(dtypes.Int32, seqLen), 0)
		x = Add(x, InsertAxes(lookup("position_embeddings", cfg.MaxPositionEmbeddings, positions), 0))
	}
	if f.tokenTypes {
		if tokenTypeIDs == nil {
			tokenTypeIDs = Zeros(g, shapes.Make(dtypes.Int32, batch, seqLen))
		}
		x = Add(x, lookup("token_type_embeddings", cfg.TypeVocabSize, tokenTypeIDs))
	}
	x = ConvertDType(layerNorm(es.At("LayerNorm"), cfg, x), dt)
	x = hf.Dropout(es, x, cfg.HiddenDropoutProb)
	if cfg.projectsEmbeddings() {
		x = ConvertDType(linear(s.At("embeddings_project"), cfg, x, cfg.HiddenSize), dt)
	}
	return x
}

// encoderLayer is one layer (BertLayer, DistilBERT's TransformerBlock): self-attention and
// feed-forward blocks, each followed by dropout, a residual connection and LayerNorm
// (post-LN), with the family's module names.
//
// Under mixed precision what the layer keeps for the backward pass is in the compute dtype
// (its input, the attention's projections, the residual sums LayerNorm reads, the
// feed-forward's inner activation before and after GELU, its output), and the arithmetic
// between the products is float32: dropout and the residual sums on the products' float32
// results, LayerNorm and GELU on their inputs widened to float32.
func encoderLayer(s *model.Scope, cfg Config, x, mask *Node) *Node {
	n := cfg.family().layer
	dt := x.DType()
	keep := func(x *Node) *Node { return ConvertDType(x, dt) }
	wide := func(x *Node) *Node { return ConvertDType(x, variableDType) }
	a := selfAttention(s, n, cfg, x, mask)
	a = linear(at(s, n.attnOut), cfg, a, cfg.HiddenSize)
	a = hf.Dropout(at(s, n.attnOut), a, cfg.HiddenDropoutProb)
	x = keep(layerNorm(at(s, n.attnNorm), cfg, keep(Add(a, wide(x)))))

	h := keep(linear(at(s, n.ffnIn), cfg, x, cfg.IntermediateSize))
	h = keep(activation.Gelu(wide(h)))
	h = linear(at(s, n.ffnOut), cfg, h, cfg.HiddenSize)
	h = hf.Dropout(at(s, n.ffnOut), h, cfg.HiddenDropoutProb)
	return keep(layerNorm(at(s, n.outNorm), cfg, keep(Add(h, wide(x)))))
}

// selfAttention is BertSelfAttention (DistilBERT's MultiHeadSelfAttention computes the
// same): query/key/value projections split into heads, scaled dot-product attention over the
// unmasked keys (scale 1/sqrt(head_dim), passed explicitly), dropout on the attention
// probabilities, heads merged back to [B, L, hidden]. s is the layer's scope.
func selfAttention(s *model.Scope, n layerNames, cfg Config, x, mask *Node) *Node {
	dims := x.Shape().Dimensions
	batch, seqLen := dims[0], dims[1]
	heads, headDim := cfg.NumAttentionHeads, cfg.HeadDim()
	project := func(name string) *Node {
		return ConvertDType(linear(at(s, name), cfg, x, cfg.HiddenSize), x.DType())
	}
	ps := []*Node{project(n.query), project(n.key), project(n.value)}
	if x.DType() != variableDType {
		// Under mixed precision the projections are rounded to the compute dtype before they
		// are split into heads: across the barrier the bias, the rounding and the transpose to
		// [B, heads, L, D] are two loops (one elementwise, one plain copy) where XLA otherwise
		// fuses them into one loop that transposes while it converts, about 3x slower per
		// element on XLA's CPU plugin (docs/performance.md, "MiniLM-shaped bf16 steps"). In
		// float32 the barrier made the step slower, so it is left out there.
		ps = OptimizationBarriers(ps...)
	}
	heads4 := func(p *Node) *Node {
		return TransposeAllAxes(Reshape(p, batch, seqLen, heads, headDim), 0, 2, 1, 3) // [B, heads, L, D]
	}
	q, k, v := heads4(ps[0]), heads4(ps[1]), heads4(ps[2])
	opts := attention.CoreOptions{
		Scale:         1 / math.Sqrt(float64(headDim)),
		AttentionMask: mask,
	}
	var out *Node
	rate := cfg.AttentionProbsDropoutProb
	if !s.IsTraining(x.Graph()) {
		rate = 0
	}
	switch {
	case x.DType() != variableDType:
		// Reduced precision: both products on x's dtype (half.Product), the softmax and dropout
		// on their float32 results (as torch.autocast keeps softmax in float32).
		scores := MulScalar(half.Product(q, k, x.DType(), half.ScoreAxes(2)), opts.Scale)
		out = ConvertDType(half.Product(hf.Dropout(s, attentionProbs(scores, mask), rate), v, x.DType(), half.MixAxes(2)), x.DType())
	case rate > 0:
		// attention.Core's own dropout would draw 32 bits per probability; with dropout
		// it computes the attention decomposed anyway, as here.
		scores := MulScalar(Einsum("bhqd,bhkd->bhqk", q, k), opts.Scale)
		out = Einsum("bhqk,bhkd->bhqd", hf.Dropout(s, attentionProbs(scores, mask), rate), v)
	default:
		out, _ = attention.Core(q, k, v, attention.LayoutBHSD, opts)
	}
	return Reshape(TransposeAllAxes(out, 0, 2, 1, 3), batch, seqLen, cfg.HiddenSize)
}

// attentionProbs is the softmax of float32 scores [B, H, L, L] over the keys that mask
// (broadcast to scores) keeps, as HF's BERT computes it: maskBias added to the scores, then a
// plain softmax. exp underflows to exactly 0 for a masked key, so a row with at least one kept
// key is MaskedSoftmax's bit for bit, in under half its time on XLA's CPU plugin
// (MaskedSoftmax selects with the mask in the maximum, the exponentials and the gradient); a
// row with no kept key (an example of padding only) gets the softmax of all its scores, where
// HF (whose bias is the dtype's lowest value) gives equal weights and MaskedSoftmax zeros:
// finite either way, and such an example has no weight in a loss.
func attentionProbs(scores, mask *Node) *Node {
	g := scores.Graph()
	bias := Where(mask, ScalarZero(g, scores.DType()), Scalar(g, scores.DType(), maskBias))
	return Softmax(Add(scores, BroadcastToShape(bias, scores.Shape())), -1)
}

// maskBias is what attentionProbs adds to a masked key's score: far below any score a
// trained model makes, representable in float16, and with exp(maskBias) = 0 in every
// floating-point type.
const maskBias = -30000

// linear is torch.nn.Linear with HF variable names: weight [out, in], bias [out], plus the
// update of the Config's LoRA adapter on the layers it targets (see Classifier.AttachLoRA). The product
// runs on x's dtype (the compute dtype); the result is float32 whatever x's dtype: under mixed
// precision the product's float32 result plus the bias, for the caller to round to the compute
// dtype where it keeps an activation.
func linear(s *model.Scope, cfg Config, x *Node, outDim int) *Node {
	g := x.Graph()
	inDim := x.Shape().Dimensions[x.Rank()-1]
	w := s.WithInitializer(normalInitializer(s.Store(), cfg.InitializerRange)).
		VariableWithShape("weight", shapes.Make(variableDType, outDim, inDim)).NodeValue(g)
	b := s.WithInitializer(Zeros).VariableWithShape("bias", shapes.Make(variableDType, outDim)).NodeValue(g)
	var y *Node
	if x.DType() == variableDType {
		y = nn.Dense(x, w, b, compute.DenseLayoutOutputsInput)
	} else {
		// Reduced precision: plain ops, as some backends' fused kernels only take float32.
		y = half.Linear(x, w, b, x.DType())
	}
	return cfg.adapter.Linear(s, x, y) // LoRA's update on the layers it targets (none without an adapter)
}

// layerNorm is torch.nn.LayerNorm over the last axis with HF variable names weight/bias,
// computed and returned in float32 whatever x's dtype.
func layerNorm(s *model.Scope, cfg Config, x *Node) *Node {
	g := x.Graph()
	width := x.Shape().Dimensions[x.Rank()-1]
	gamma := s.WithInitializer(Ones).VariableWithShape("weight", shapes.Make(variableDType, width)).NodeValue(g)
	beta := s.WithInitializer(Zeros).VariableWithShape("bias", shapes.Make(variableDType, width)).NodeValue(g)
	return nn.LayerNorm(ConvertDType(x, variableDType), []int{x.Rank() - 1}, cfg.LayerNormEps, gamma, beta, nil)
}

// normalInitializer draws N(0, stddev²) values from the Store's random state (HF's
// _init_weights for Linear and Embedding weights).
func normalInitializer(store *model.Store, stddev float64) model.VariableInitializer {
	return func(g *Graph, shape shapes.Shape) *Node {
		return MulScalar(store.RandomNormal(g, shape), stddev)
	}
}
