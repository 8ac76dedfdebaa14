package auto

import (
	"github.com/goaccel/goaccel/models/deberta"
	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/gomlx/gomlx/ml/model"
)

// debertaFamily is models/deberta (DeBERTa-v2 and -v3) as a Family, with the folder's
// tokenizer (spm.model, or tokenizer.json).
var debertaFamily = &hfFamily[deberta.Config, *deberta.Classifier]{
	name: "deberta", ref: "microsoft/deberta-v3-small", types: []string{"deberta-v2"}, inputs: 3,
	shape: Shape{Hidden: 768, Layers: 6, Heads: 12, FF: 3072, Vocab: 128100},
	parse: deberta.ParseConfig, newClf: deberta.NewClassifier, check: deberta.Config.CheckMaxLen, json: deberta.Config.JSON,
	config: func(c *deberta.Classifier) *deberta.Config { return &c.Config },
	loadModel: func(dir string, store *model.Store, req LoadRequest) (*deberta.Classifier, error) {
		return deberta.LoadPretrained(dir, store, deberta.LoadOptions{NumLabels: req.NumLabels, LoadHead: req.LoadHead, Head: req.Head})
	},
	saveModel: deberta.SavePretrained,
	// microsoft/deberta-v3-small's config.json: relative attention with p2c and c2p over 256
	// log buckets, shared keys, the relative embeddings LayerNorm'd, no absolute positions,
	// no token types, dropout 0.1.
	reference: func(s Shape, maxLen int) (deberta.Config, error) {
		f := func(v float64) hf.PyFloat { return hf.PyFloat(v) }
		return parseKeys(shapeKeys(s, map[string]any{
			"model_type": "deberta-v2", "hidden_act": "gelu", "hidden_dropout_prob": f(0.1),
			"attention_probs_dropout_prob": f(0.1), "max_position_embeddings": 512, "type_vocab_size": 0,
			"initializer_range": f(0.02), "layer_norm_eps": f(1e-7), "relative_attention": true,
			"max_relative_positions": -1, "position_buckets": 256, "pos_att_type": "p2c|c2p", "share_att_key": true,
			"norm_rel_ebd": "layer_norm", "position_biased_input": false, "pad_token_id": 0,
		}), "deberta reference", deberta.ParseConfig)
	},
	facts: func(c *deberta.Config) Facts {
		return Facts{ModelType: "deberta-v2", MaxPositions: c.MaxPositionEmbeddings, Inputs: 3,
			Shape: Shape{c.HiddenSize, c.NumHiddenLayers, c.NumAttentionHeads, c.IntermediateSize, c.VocabSize}}
	},
	head: func(c *deberta.Config) (*int, *[]string, *string) { return &c.NumLabels, &c.Labels, &c.ProblemType },
	dropout: func(c *deberta.Config, rate float64) {
		c.HiddenDropoutProb, c.AttentionProbsDropoutProb, c.PoolerDropout, c.ClsDropout = rate, rate, rate, &rate
	},
	checkpointing: func(c *deberta.Config) *bool { return &c.GradientCheckpointing },
	// As BERT's, with per token and layer the c2p and p2c scores against the 2 P relative
	// embeddings (P: position_buckets, else the relative span), 2 x 2 P d, and per layer the
	// projection of those 2 P embeddings by key_proj and query_proj, 2 x 2 P d²; the
	// ContextPooler's dense is the d².
	flops: func(c deberta.Config, b, seq float64) float64 {
		h, l, f := float64(c.HiddenSize), float64(c.NumHiddenLayers), float64(c.IntermediateSize)
		p := float64(c.PositionBuckets)
		if c.PositionBuckets <= 0 {
			p = float64(c.MaxRelativePositions)
			if c.MaxRelativePositions < 1 {
				p = float64(c.MaxPositionEmbeddings)
			}
		}
		if !c.RelativeAttention {
			p = 0
		}
		return 2 * (b*seq*l*(4*h*h+2*h*f+2*seq*h+4*p*h) + l*4*p*h*h + b*(h*h+2*h))
	},
}
