package modernbert

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

// Encoder builds ModernBertModel's forward pass under the scope "model" and returns the last
// hidden states [B, L, hidden], float32:
//
//   - token embeddings, LayerNorm, dropout (embedding_dropout); no position embeddings;
//   - num_hidden_layers pre-norm layers: x + attention(attn_norm(x)) (layer 0 has no
//     attn_norm), then x + mlp(mlp_norm(x));
//   - attention: the fused projection Wqkv split into query, key and value heads, rotary
//     position embeddings on the queries and keys (positions 0..L-1, base global_rope_theta in
//     the global layers and local_rope_theta in the local ones), softmax of the scaled scores
//     over the keys the layer sees (global: the unpadded keys; local: the unpadded keys at
//     most local_attention/2 positions away), dropout on the probabilities, Wo and dropout
//     (attention_dropout);
//   - mlp: Wi's output split into input and gate halves, act(input)·gate (GeGLU with the exact
//     GELU for hidden_activation "gelu"), dropout (mlp_dropout), Wo;
//   - final_norm.
//
// With Config.GradientCheckpointing, training graphs keep only each layer's input for the
// backward pass and recompute the layer there.
//
// inputIDs and attentionMask are integer [B, L] nodes; attentionMask is 1 for real tokens and
// 0 for padding. The scores of the keys a query does not see are replaced by the float32
// lowest value before the softmax, as transformers' eager attention adds it: a query that sees
// no key at all (a padding token far from any real one in a local layer) averages every value,
// as there, so even the padding positions' states are transformers'. Dropout is applied only
// when s.IsTraining(g). L must not exceed max_position_embeddings. It panics on inputs of the
// wrong rank, dtype or length (model.Exec turns the panic into an error).
func (c *Classifier) Encoder(s *model.Scope, inputIDs, attentionMask *Node) *Node {
	cfg := c.Config
	c.checkInputs(inputIDs, attentionMask)
	g := inputIDs.Graph()
	batch, seqLen := inputIDs.Shape().Dimensions[0], inputIDs.Shape().Dimensions[1]
	ms := s.At("model")

	es := ms.At("embeddings")
	table := es.At("tok_embeddings").WithInitializer(c.truncNormal(c.inStd())).
		VariableWithShape("weight", shapes.Make(variableDType, cfg.VocabSize, cfg.HiddenSize)).NodeValue(g)
	x := Gather(table, InsertAxes(ConvertDType(inputIDs, dtypes.Int32), -1)) // [B, L, H]
	x = hf.Dropout(es.At("drop"), c.layerNorm(es.At("norm"), x), cfg.EmbeddingDropout)

	// Which keys each query sees, [B, 1, L, L]: the unpadded ones (global layers), within
	// half the window (local layers).
	keep := NotEqual(attentionMask, ScalarZero(g, attentionMask.DType()))
	global := BroadcastToDims(Reshape(keep, batch, 1, 1, seqLen), batch, 1, seqLen, seqLen)
	q := Iota(g, shapes.Make(dtypes.Int32, seqLen, seqLen), 0)
	k := Iota(g, shapes.Make(dtypes.Int32, seqLen, seqLen), 1)
	near := LessOrEqual(Abs(Sub(q, k)), Scalar(g, dtypes.Int32, cfg.LocalAttention/2))
	local := LogicalAnd(global, BroadcastToDims(Reshape(near, 1, 1, seqLen, seqLen), batch, 1, seqLen, seqLen))

	// With GradientCheckpointing each layer is recomputed from its input in the backward pass.
	checkpoint := cfg.GradientCheckpointing && s.IsTraining(g)
	dropout := cfg.AttentionDropout > 0 || cfg.MLPDropout > 0
	ropes := map[string][2]*Node{}
	for i := range cfg.NumHiddenLayers {
		kind := cfg.LayerTypes[i]
		if _, ok := ropes[kind]; !ok {
			theta := cfg.GlobalRopeTheta
			if kind == SlidingAttention {
				theta = cfg.LocalRopeTheta
			}
			cos, sin := rotaryTables(g, seqLen, cfg.HeadDim(), theta)
			ropes[kind] = [2]*Node{cos, sin}
		}
		mask := global
		if !cfg.IsGlobal(i) {
			mask = local
		}
		x = c.layer(ms.At("layers").At("%d", i), i, remat.Begin(c.Store(), dropout, x, checkpoint), mask, ropes[kind])
	}
	return c.layerNorm(ms.At("final_norm"), remat.End(c.Store(), dropout, x, checkpoint))
}

// checkInputs panics with a clear message when the encoder inputs do not have the expected
// shapes and dtypes.
func (c *Classifier) checkInputs(inputIDs, attentionMask *Node) {
	if inputIDs == nil || attentionMask == nil {
		exceptions.Panicf("modernbert: input_ids and attention_mask are required, got input_ids=%v attention_mask=%v",
			inputIDs != nil, attentionMask != nil)
	}
	ids := inputIDs.Shape()
	if ids.Rank() != 2 || !ids.DType.IsInt() {
		exceptions.Panicf("modernbert: input_ids must be an integer [batch, seq_len] tensor, got %s", ids)
	}
	if seqLen := ids.Dimensions[1]; seqLen > c.Config.MaxPositionEmbeddings {
		exceptions.Panicf("modernbert: sequence length %d is above max_position_embeddings (%d)", seqLen, c.Config.MaxPositionEmbeddings)
	}
	if m := attentionMask.Shape(); !m.DType.IsInt() || m.Rank() != 2 || m.Dimensions[0] != ids.Dimensions[0] || m.Dimensions[1] != ids.Dimensions[1] {
		exceptions.Panicf("modernbert: attention_mask must be an integer tensor shaped like input_ids %v, got %s", ids.Dimensions, m)
	}
}

// layer is one ModernBertEncoderLayer (pre-norm attention and GeGLU blocks with residuals).
func (c *Classifier) layer(s *model.Scope, index int, x, mask *Node, rope [2]*Node) *Node {
	cfg := c.Config
	h := x
	if index > 0 {
		h = c.layerNorm(s.At("attn_norm"), x)
	}
	x = Add(x, c.attention(s.At("attn"), h, mask, rope))

	// Under mixed precision Wi's output is kept in the compute dtype and widened for GeGLU,
	// whose output is rounded to it for Wo (keep is the identity in float32).
	dt := hf.Compute(&c.Base).DType()
	keep := func(x *Node) *Node { return ConvertDType(x, dt) }
	wide := func(x *Node) *Node { return ConvertDType(x, variableDType) }
	ms := s.At("mlp")
	input, gate := c.linearHalves(ms.At("Wi"), c.layerNorm(s.At("mlp_norm"), x), cfg.IntermediateSize, cfg.MLPBias, c.inStd())
	input, gate = wide(keep(input)), wide(keep(gate))
	y := hf.Dropout(ms.At("drop"), Mul(hf.Activate(cfg.HiddenActivation, input), gate), cfg.MLPDropout)
	return Add(x, c.linear(ms.At("Wo"), keep(y), cfg.HiddenSize, cfg.MLPBias, c.outStd()))
}

// attention is ModernBertAttention with eager attention: fused Wqkv, RoPE on queries and
// keys, masked softmax of the scores scaled by 1/sqrt(head_dim), dropout, Wo, dropout.
func (c *Classifier) attention(s *model.Scope, x, mask *Node, rope [2]*Node) *Node {
	cfg := c.Config
	dims := x.Shape().Dimensions
	batch, seqLen := dims[0], dims[1]
	heads, headDim := cfg.NumAttentionHeads, cfg.HeadDim()
	qkv := c.linear(s.At("Wqkv"), x, 3*cfg.HiddenSize, cfg.AttentionBias, c.inStd())
	qkv = TransposeAllAxes(Reshape(qkv, batch, seqLen, 3, heads, headDim), 2, 0, 3, 1, 4) // [3, B, heads, L, D]
	part := func(i int) *Node {
		return Reshape(Slice(qkv, AxisRange(i, i+1)), batch, heads, seqLen, headDim)
	}
	q, k, v := applyRotary(part(0), rope), applyRotary(part(1), rope), part(2)

	// Under mixed precision both products run on the compute dtype (half.Product), the
	// rotary embeddings, the softmax and its dropout on float32.
	g := x.Graph()
	dt := hf.Compute(&c.Base).DType()
	product := func(a, b *Node, eq string, axes half.Axes) *Node {
		if hf.Compute(&c.Base).Mixed() {
			return half.Product(a, b, dt, axes)
		}
		return Einsum(eq, a, b)
	}
	scores := MulScalar(product(q, k, "bhqd,bhkd->bhqk", half.ScoreAxes(2)), 1/math.Sqrt(float64(headDim)))
	scores = Where(BroadcastToShape(mask, scores.Shape()), scores, Scalar(g, scores.DType(), -math.MaxFloat32))
	probs := Softmax(scores, -1)
	rate := cfg.AttentionDropout
	probs = hf.Dropout(s, probs, rate)
	out := ConvertDType(product(probs, v, "bhqk,bhkd->bhqd", half.MixAxes(2)), dt)
	out = Reshape(TransposeAllAxes(out, 0, 2, 1, 3), batch, seqLen, cfg.HiddenSize)
	out = c.linear(s.At("Wo"), out, cfg.HiddenSize, cfg.AttentionBias, c.outStd())
	return hf.Dropout(s.At("out_drop"), out, rate)
}

// rotaryTables returns RoPE's cos and sin [1, 1, L, headDim] for positions 0..L-1 and base theta,
// computed as transformers does in float32: inverse frequencies 1/theta^(2i/headDim) rounded
// to float32, angles position·frequency in float32, each frequency twice (the two halves).
//
// The tables are computed here and enter the graph as constants: built from Iota in the graph,
// XLA fused Cos and Sin into every rotary product that reads them, so each layer's forward and
// backward passes evaluated them again for every element of [B, heads, L, D] (8.5% of a
// ModernBERT-base bf16 training step's CPU samples; docs/performance.md).
func rotaryTables(g *Graph, seqLen, headDim int, theta float64) (cos, sin *Node) {
	half := headDim / 2
	inv := make([]float32, half)
	for i := range inv {
		exponent := float32(2*i) / float32(headDim)
		inv[i] = float32(1 / float64(float32(math.Pow(theta, float64(exponent)))))
	}
	cosT, sinT := make([]float32, seqLen*half), make([]float32, seqLen*half)
	for p := range seqLen {
		for i, f := range inv {
			angle := float64(float32(p) * f) // the product rounded to float32, as in transformers
			cosT[p*half+i], sinT[p*half+i] = float32(math.Cos(angle)), float32(math.Sin(angle))
		}
	}
	table := func(t []float32) *Node {
		n := Reshape(Const(g, t), seqLen, half)
		return Reshape(Concatenate([]*Node{n, n}, -1), 1, 1, seqLen, headDim)
	}
	return table(cosT), table(sinT)
}

// applyRotary is transformers' apply_rotary_pos_emb on x [B, heads, L, D]:
// x·cos + rotate_half(x)·sin, where rotate_half(x) = concat(-x[D/2:], x[:D/2]).
func applyRotary(x *Node, rope [2]*Node) *Node {
	d := x.Shape().Dimensions[3]
	lo := SliceAxis(x, 3, AxisRange(0, d/2))
	hi := SliceAxis(x, 3, AxisRange(d/2, d))
	rotated := Concatenate([]*Node{Neg(hi), lo}, -1)
	cos, sin := BroadcastToShape(rope[0], x.Shape()), BroadcastToShape(rope[1], x.Shape())
	return Add(Mul(x, cos), Mul(rotated, sin))
}
