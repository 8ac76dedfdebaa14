package auto

import (
	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/goaccel/goaccel/models/modernbert"
	"github.com/gomlx/gomlx/ml/model"
)

// modernBERTFamily is models/modernbert as a Family, with the folder's tokenizer
// (tokenizer.json, or vocab.txt). Its Logits takes no token types.
var modernBERTFamily = &hfFamily[modernbert.Config, *modernbert.Classifier]{
	name: "modernbert", ref: "answerdotai/ModernBERT-base", types: []string{"modernbert"}, inputs: 2,
	shape: Shape{Hidden: 768, Layers: 22, Heads: 12, FF: 1152, Vocab: 50368},
	parse: modernbert.ParseConfig, newClf: modernbert.NewClassifier, check: modernbert.Config.CheckMaxLen,
	json:   modernbert.Config.JSON,
	config: func(c *modernbert.Classifier) *modernbert.Config { return &c.Config },
	loadModel: func(dir string, store *model.Store, req LoadRequest) (*modernbert.Classifier, error) {
		return modernbert.LoadPretrained(dir, store, modernbert.LoadOptions{NumLabels: req.NumLabels, LoadHead: req.LoadHead, Head: req.Head})
	},
	saveModel: modernbert.SavePretrained,
	// answerdotai/ModernBERT-base's config.json: GeGLU with the exact GELU, a global layer
	// every 3rd layer, the others a 128-token window, RoPE bases 160000 and 10000, no biases,
	// no dropout, mean pooling; its special tokens' ids where the vocabulary has them.
	reference: func(s Shape, maxLen int) (modernbert.Config, error) {
		f := func(v float64) hf.PyFloat { return hf.PyFloat(v) }
		keys := shapeKeys(s, map[string]any{
			"model_type": "modernbert", "hidden_activation": "gelu", "max_position_embeddings": max(8192, maxLen),
			"initializer_range": f(0.02), "initializer_cutoff_factor": f(2), "norm_eps": f(1e-5), "norm_bias": false,
			"attention_bias": false, "mlp_bias": false, "classifier_bias": false,
			"attention_dropout": f(0), "embedding_dropout": f(0), "mlp_dropout": f(0), "classifier_dropout": f(0),
			"global_attn_every_n_layers": 3, "local_attention": 128,
			"global_rope_theta": f(160000), "local_rope_theta": f(10000),
			"classifier_pooling": "mean", "classifier_activation": "gelu",
		})
		pad, bos, eos := 50283, 50281, 50282
		if s.Vocab <= pad {
			pad, bos, eos = 0, 1, 2
		}
		keys["pad_token_id"], keys["bos_token_id"], keys["eos_token_id"] = pad, bos, eos
		keys["cls_token_id"], keys["sep_token_id"] = bos, eos
		return parseKeys(keys, "modernbert reference", modernbert.ParseConfig)
	},
	facts: func(c *modernbert.Config) Facts {
		return Facts{ModelType: "modernbert", MaxPositions: c.MaxPositionEmbeddings, Inputs: 2,
			Shape: Shape{c.HiddenSize, c.NumHiddenLayers, c.NumAttentionHeads, c.IntermediateSize, c.VocabSize}}
	},
	head: func(c *modernbert.Config) (*int, *[]string, *string) { return &c.NumLabels, &c.Labels, &c.ProblemType },
	dropout: func(c *modernbert.Config, rate float64) {
		c.AttentionDropout, c.EmbeddingDropout, c.MLPDropout, c.ClassifierDropout = rate, rate, rate, rate
	},
	checkpointing: func(c *modernbert.Config) *bool { return &c.GradientCheckpointing },
	// As BERT's, with GeGLU's feed-forward 3 d f (Wi to 2 f, Wo from f) and the head's dense
	// d²; the local layers' scores over all S keys, as both implementations compute them.
	flops: func(c modernbert.Config, b, seq float64) float64 {
		h, l, f := float64(c.HiddenSize), float64(c.NumHiddenLayers), float64(c.IntermediateSize)
		return 2 * (b*seq*l*(4*h*h+3*h*f+2*seq*h) + b*(h*h+2*h))
	},
}
