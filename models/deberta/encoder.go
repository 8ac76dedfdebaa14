package deberta

import (
	"math"

	"github.com/goaccel/goaccel/models/internal/half"
	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/goaccel/goaccel/models/internal/remat"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Encoder builds DebertaV2Model's forward pass under the scope "deberta" and returns the
// last hidden states [B, L, hidden], float32:
//
//   - embeddings: token embeddings (the padding token's row gets no gradient, as
//     transformers' padding_idx), plus absolute position embeddings (position_biased_input)
//     and token-type embeddings (type_vocab_size > 0), embed_proj when embedding_size differs
//     from hidden_size, LayerNorm, multiplied by the attention mask, dropout;
//   - the relative embeddings (encoder.rel_embeddings, normalised by encoder.LayerNorm with
//     norm_rel_ebd "layer_norm"), shared by every layer;
//   - num_hidden_layers post-norm layers: x = LayerNorm(x + dropout(dense(attention(x)))),
//     then x = LayerNorm(x + dropout(dense(act(dense(x)))));
//   - disentangled attention: query, key and value projections; scores q·k plus, with
//     relative attention, c2p (query content · key-projected relative embedding of the
//     distance q-k) and p2c (key content · query-projected relative embedding of the
//     distance seen from the key), each divided by sqrt(head_dim·(1+len(pos_att_type)));
//     share_att_key projects the relative embeddings with query_proj and key_proj, else with
//     pos_query_proj and pos_key_proj. A query sees the keys where both it and the key are
//     real tokens: the other scores are replaced by the float32 lowest value before the
//     softmax, so a padding query averages every value, as in transformers. Dropout on the
//     relative embeddings (hidden_dropout_prob) and on the probabilities
//     (attention_probs_dropout_prob).
//
// With Config.GradientCheckpointing, training graphs keep only each layer's input for the
// backward pass and recompute the layer there.
//
// inputIDs, attentionMask and tokenTypeIDs are integer [B, L] nodes; attentionMask is 1 for
// real tokens and 0 for padding; tokenTypeIDs may be nil (all 0) and is not read when
// type_vocab_size is 0. Dropout is applied only when s.IsTraining(g). It panics on inputs
// of the wrong rank, dtype or length (model.Exec turns the panic into an error).
func (c *Classifier) Encoder(s *model.Scope, inputIDs, attentionMask, tokenTypeIDs *Node) *Node {
	cfg := c.Config
	c.checkInputs(inputIDs, attentionMask, tokenTypeIDs)
	g := inputIDs.Graph()
	batch, seqLen := inputIDs.Shape().Dimensions[0], inputIDs.Shape().Dimensions[1]
	ds := s.At("deberta")
	x := c.embeddings(ds.At("embeddings"), inputIDs, attentionMask, tokenTypeIDs)

	es := ds.At("encoder")
	var rel *Node
	if cfg.RelativeAttention {
		rel = es.At("rel_embeddings").WithInitializer(c.normal).
			VariableWithShape("weight", shapes.Make(variableDType, 2*cfg.attSpan(), cfg.HiddenSize)).NodeValue(g)
	}
	if cfg.normRel() {
		if rel != nil {
			rel = c.layerNorm(es.At("LayerNorm"), rel)
		} else {
			c.normVariables(es.At("LayerNorm"), g, cfg.HiddenSize) // there, unused, as in transformers
		}
	}

	// A score counts where both the query and the key are real tokens: [B, 1, L, L].
	keep := NotEqual(attentionMask, ScalarZero(g, attentionMask.DType()))
	mask := LogicalAnd(Reshape(keep, batch, 1, seqLen, 1), Reshape(keep, batch, 1, 1, seqLen))
	mask = BroadcastToDims(mask, batch, 1, seqLen, seqLen)

	var gathers [2]*Node
	if cfg.RelativeAttention {
		var rows [2]int
		gathers, rows = cfg.relativeGathers(g, seqLen)
		rel = Slice(rel, AxisRange(rows[0], rows[1])) // only the rows some distance reads
	}
	// With GradientCheckpointing each layer is recomputed from its input in the backward pass
	// (the relative embeddings, computed once before the layers, are kept).
	checkpoint := cfg.GradientCheckpointing && s.IsTraining(g)
	dropout := cfg.HiddenDropoutProb > 0 || cfg.AttentionProbsDropoutProb > 0
	for i := range cfg.NumHiddenLayers {
		x = c.layer(es.At("layer").At("%d", i), remat.Begin(c.Store(), dropout, x, checkpoint), mask, rel, gathers)
	}
	return remat.End(c.Store(), dropout, x, checkpoint)
}

// checkInputs panics with a clear message when the encoder inputs do not have the expected
// shapes and dtypes.
func (c *Classifier) checkInputs(inputIDs, attentionMask, tokenTypeIDs *Node) {
	if inputIDs == nil || attentionMask == nil {
		exceptions.Panicf("deberta: input_ids and attention_mask are required, got input_ids=%v attention_mask=%v",
			inputIDs != nil, attentionMask != nil)
	}
	ids := inputIDs.Shape()
	if ids.Rank() != 2 || !ids.DType.IsInt() {
		exceptions.Panicf("deberta: input_ids must be an integer [batch, seq_len] tensor, got %s", ids)
	}
	if err := c.Config.CheckMaxLen(ids.Dimensions[1]); err != nil {
		exceptions.Panicf("deberta: sequence length %d: %v", ids.Dimensions[1], err)
	}
	for _, in := range []struct {
		name string
		node *Node
	}{{"attention_mask", attentionMask}, {"token_type_ids", tokenTypeIDs}} {
		if in.node == nil {
			continue
		}
		if m := in.node.Shape(); !m.DType.IsInt() || m.Rank() != 2 || m.Dimensions[0] != ids.Dimensions[0] || m.Dimensions[1] != ids.Dimensions[1] {
			exceptions.Panicf("deberta: %s must be an integer tensor shaped like input_ids %v, got %s", in.name, ids.Dimensions, m)
		}
	}
}

// embeddings is DebertaV2Embeddings: [B, L, hidden].
func (c *Classifier) embeddings(s *model.Scope, inputIDs, attentionMask, tokenTypeIDs *Node) *Node {
	cfg := c.Config
	g := inputIDs.Graph()
	seqLen := inputIDs.Shape().Dimensions[1]
	ids := ConvertDType(inputIDs, dtypes.Int32)
	table := s.At("word_embeddings").WithInitializer(c.tokenEmbeddingInit).
		VariableWithShape("weight", shapes.Make(variableDType, cfg.VocabSize, cfg.EmbeddingSize)).NodeValue(g)
	x := Gather(table, InsertAxes(ids, -1)) // [B, L, E]
	// padding_idx: the padding token's row is never trained.
	if cfg.PadTokenID != nil {
		isPad := BroadcastToShape(InsertAxes(Equal(ids, Scalar(g, dtypes.Int32, *cfg.PadTokenID)), -1), x.Shape())
		x = Where(isPad, StopGradient(x), x)
	}
	if cfg.PositionBiasedInput {
		pos := s.At("position_embeddings").WithInitializer(c.normal).
			VariableWithShape("weight", shapes.Make(variableDType, cfg.MaxPositionEmbeddings, cfg.EmbeddingSize)).NodeValue(g)
		pos = Slice(pos, AxisRange(0, seqLen), AxisRange())
		x = Add(x, BroadcastToShape(InsertAxes(pos, 0), x.Shape()))
	}
	if cfg.TypeVocabSize > 0 {
		types := tokenTypeIDs
		if types == nil {
			types = ZerosLike(ids)
		}
		typeTable := s.At("token_type_embeddings").WithInitializer(c.normal).
			VariableWithShape("weight", shapes.Make(variableDType, cfg.TypeVocabSize, cfg.EmbeddingSize)).NodeValue(g)
		x = Add(x, Gather(typeTable, InsertAxes(ConvertDType(types, dtypes.Int32), -1)))
	}
	if cfg.EmbeddingSize != cfg.HiddenSize {
		x = c.linear(s.At("embed_proj"), x, cfg.HiddenSize, false)
	}
	x = c.layerNorm(s.At("LayerNorm"), x)
	x = Mul(x, InsertAxes(ConvertDType(attentionMask, x.DType()), -1))
	return hf.Dropout(s.At("dropout"), x, cfg.HiddenDropoutProb)
}

// tokenEmbeddingInit draws fresh token embeddings N(0, initializer_range²) with the padding
// token's row zero.
func (c *Classifier) tokenEmbeddingInit(g *Graph, shape shapes.Shape) *Node {
	values := c.normal(g, shape)
	if c.Config.PadTokenID == nil {
		return values
	}
	rows := Iota(g, shapes.Make(dtypes.Int32, shape.Dimensions[0], 1), 0)
	keep := BroadcastToShape(NotEqual(rows, Scalar(g, dtypes.Int32, *c.Config.PadTokenID)), shape)
	return Where(keep, values, Zeros(g, shape))
}

// layer is one DebertaV2Layer: attention with its output block, then the feed-forward block,
// each closed by a residual LayerNorm.
func (c *Classifier) layer(s *model.Scope, x, mask, rel *Node, gathers [2]*Node) *Node {
	cfg := c.Config
	as := s.At("attention")
	ctx := c.attention(as.At("self"), x, mask, rel, gathers)
	out := as.At("output")
	h := hf.Dropout(out.At("dropout"), c.linear(out.At("dense"), ctx, cfg.HiddenSize, true), cfg.HiddenDropoutProb)
	x = c.layerNorm(out.At("LayerNorm"), Add(h, x))

	// Under mixed precision the intermediate activation is kept in the compute dtype, before
	// and after the activation (computed on float32); keep is the identity in float32.
	keep := func(x *Node) *Node { return ConvertDType(x, hf.Compute(&c.Base).DType()) }
	inter := keep(c.linear(s.At("intermediate").At("dense"), x, cfg.IntermediateSize, true))
	inter = keep(hf.Activate(cfg.HiddenAct, ConvertDType(inter, variableDType)))
	out = s.At("output")
	h = hf.Dropout(out.At("dropout"), c.linear(out.At("dense"), inter, cfg.HiddenSize, true), cfg.HiddenDropoutProb)
	return c.layerNorm(out.At("LayerNorm"), Add(h, x))
}

// heads reshapes [..., n, hidden] into [..., heads, n, head_dim].
func (c *Classifier) heads(x *Node) *Node {
	dims := x.Shape().Dimensions
	r := len(dims)
	split := append(append([]int{}, dims[:r-1]...), c.Config.NumAttentionHeads, c.Config.HeadDim())
	perm := make([]int, 0, r+1)
	for i := range r - 2 {
		perm = append(perm, i)
	}
	perm = append(perm, r-1, r-2, r) // [..., n, heads, d] -> [..., heads, n, d]
	return TransposeAllAxes(Reshape(x, split...), perm...)
}

// attention is DisentangledSelfAttention: the context [B, L, hidden], before the output
// projection. rel is the rows of the (normalised) relative embeddings that relativeGathers
// reads, [rows, hidden], and gathers its c2p and p2c tables, nil without relative attention.
// Under mixed precision every product runs on the compute dtype (see products), the scaling,
// the mask, the softmax and its dropout on float32.
func (c *Classifier) attention(s *model.Scope, x, mask, rel *Node, gathers [2]*Node) *Node {
	cfg := c.Config
	g := x.Graph()
	dims := x.Shape().Dimensions
	batch, seqLen := dims[0], dims[1]
	h := cfg.HiddenSize
	dt := hf.Compute(&c.Base).DType()
	project := func(name string, x *Node) *Node { // [..., heads, n, D], in the compute dtype
		return c.heads(ConvertDType(c.linear(s.At("%s", name), x, h, true), dt))
	}
	q, k, v := project("query_proj", x), project("key_proj", x), project("value_proj", x)
	p := c.products()

	// Every score is divided by sqrt(head_dim · (1 + number of relative terms)), computed in
	// float32 as transformers does; the content scores as q · (k / scale).
	factor := 1 + len(cfg.PosAttType)
	scale := Scalar(g, variableDType, float32(math.Sqrt(float64(float32(cfg.HeadDim()*factor)))))
	scores := p.scores(q, ConvertDType(Div(ConvertDType(k, variableDType), scale), dt))
	if cfg.RelativeAttention && len(cfg.PosAttType) > 0 {
		relDrop := hf.Dropout(s.At("pos_dropout"), rel, cfg.HiddenDropoutProb)
		var relScores *Node
		if cfg.Has(C2P) {
			name := "pos_key_proj"
			if cfg.ShareAttKey {
				name = "key_proj"
			}
			full := p.relative(q, project(name, relDrop)) // [B, heads, L, rows]
			relScores = Div(gatherRelative(full, gathers[0]), scale)
		}
		if cfg.Has(P2C) {
			name := "pos_query_proj"
			if cfg.ShareAttKey {
				name = "query_proj"
			}
			full := p.relative(k, project(name, relDrop))
			term := Div(gatherRelative(full, gathers[1]), scale)
			if relScores == nil {
				relScores = term
			} else {
				relScores = Add(relScores, term)
			}
		}
		scores = Add(scores, relScores)
	}
	scores = Where(BroadcastToShape(mask, scores.Shape()), scores, Scalar(g, scores.DType(), -math.MaxFloat32))
	probs := hf.Dropout(s.At("dropout"), Softmax(scores, -1), cfg.AttentionProbsDropoutProb)
	out := ConvertDType(p.mix(probs, v), dt)
	return Reshape(TransposeAllAxes(out, 0, 2, 1, 3), batch, seqLen, h)
}

// attentionProducts are the three kinds of product of the disentangled attention, each with
// a float32 result: scores (queries [B, heads, L, D] by keys: [B, heads, L, L]), relative
// (the content [B, heads, L, D] by the projected relative embeddings [heads, rows, D]:
// [B, heads, L, rows]) and mix (probabilities by values).
type attentionProducts struct {
	scores, relative, mix func(a, b *Node) *Node
}

// products returns the attention's products in the compute dtype: float32 Einsums, or
// half.Product on half-precision operands. The relative one takes the projected relative
// embeddings broadcast over the batch, the form of the content scores: taken with the heads
// as the one batch axis and the batch's queries as rows, the same product ran at half the
// speed on XLA's CPU plugin (DeBERTa-v3-small's shape, 2 layers: bf16 0.74x fp32's steps/s,
// against 1.55x broadcast; docs/performance.md).
func (c *Classifier) products() attentionProducts {
	if !hf.Compute(&c.Base).Mixed() {
		return attentionProducts{
			scores:   func(a, b *Node) *Node { return Einsum("bhqd,bhkd->bhqk", a, b) },
			relative: func(a, b *Node) *Node { return Einsum("bhqd,hsd->bhqs", a, b) },
			mix:      func(a, b *Node) *Node { return Einsum("bhqk,bhkd->bhqd", a, b) },
		}
	}
	dt := hf.Compute(&c.Base).DType()
	return attentionProducts{
		scores: func(a, b *Node) *Node { return half.Product(a, b, dt, half.ScoreAxes(2)) },
		relative: func(a, b *Node) *Node {
			d, rd := a.Shape().Dimensions, b.Shape().Dimensions // [B, heads, L, D], [heads, rows, D]
			b = BroadcastToDims(InsertAxes(b, 0), d[0], rd[0], rd[1], rd[2])
			return half.Product(a, b, dt, half.ScoreAxes(2))
		},
		mix: func(a, b *Node) *Node { return half.Product(a, b, dt, half.MixAxes(2)) },
	}
}

// relativeGathers returns where each score's relative terms are read, as [L, L, 2] tables of
// (token, column) pairs over the per-token relative scores [L, rows[1]-rows[0]]: for c2p, the
// score of query q and key k reads query q's row at the column of the distance q-k; for p2c,
// key k's row at the column of the distance k-q (see relativeColumns). rows is the range of
// rows of the relative embeddings [2·span, hidden] that the columns read (see readColumns).
func (c Config) relativeGathers(g *Graph, seqLen int) (tables [2]*Node, rows [2]int) {
	c2p, p2c, rows := c.readColumns(seqLen)
	q := Iota(g, shapes.Make(dtypes.Int32, seqLen, seqLen), 0)
	k := Iota(g, shapes.Make(dtypes.Int32, seqLen, seqLen), 1)
	column := func(columns []int32, from, to *Node) *Node { // columns[to - from + L-1]
		d := AddScalar(Sub(to, from), seqLen-1)
		return Reshape(Gather(Const(g, columns), InsertAxes(d, -1)), seqLen, seqLen)
	}
	tables = [2]*Node{
		Stack([]*Node{q, column(c2p, k, q)}, -1),
		Stack([]*Node{k, column(p2c, q, k)}, -1),
	}
	return tables, rows
}

// gatherRelative picks, from per-token relative scores full [B, heads, L, rows], the score
// of each (query, key) pair at the (token, column) pair the table [L, L, 2] gives:
// [B, heads, L, L].
func gatherRelative(full, table *Node) *Node {
	picked := Gather(TransposeAllAxes(full, 2, 3, 0, 1), table) // [L, L, B, heads]
	return TransposeAllAxes(picked, 2, 3, 0, 1)
}
