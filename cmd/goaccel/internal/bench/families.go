package bench

import (
	"encoding/json"
	"fmt"

	"github.com/goaccel/goaccel/models/bert"
	"github.com/goaccel/goaccel/models/deberta"
	"github.com/goaccel/goaccel/models/modernbert"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/ml/model"
)

// The works of the other model families, "modernbert" and "deberta": random sequence
// classifiers (2 labels) of a released model's shape, trained as the BERT works are (Adam,
// a fixed batch of random tokens, no padding), goaccel through the family's package and
// PyTorch through transformers' class for the family. Both sides build the model from one
// config.json: the family's Config, parsed from the keys below, written back by its JSON
// method (the file its SavePretrained writes) and handed to scripts/bench_torch.py, which
// reads it with the family's configuration class.

// debertaBuckets is DeBERTa-v3's position_buckets: relative distances in 256 log buckets on
// each side, 512 relative embeddings.
const debertaBuckets = 256

// Families are the model packages of the works that are not BERT: the work's name is the
// family's.
var Families = []string{"modernbert", "deberta"}

// family is the model package the spec's work trains: "bert" (tiny, minilm, base),
// "modernbert", "deberta", or "" for the MLP.
func (s Spec) family() string {
	switch s.Work {
	case "mlp":
		return ""
	case "modernbert", "deberta":
		return s.Work
	}
	return "bert"
}

// configKeys are the config.json keys of a family work at the spec's shape: ModernBERT-base's
// values (answerdotai/ModernBERT-base's config.json: GeGLU with the exact GELU, a global layer
// every 3rd layer, the others a 128-token window, RoPE bases 160000 and 10000, no biases, no
// dropout, mean pooling) and DeBERTa-v3-small's (microsoft/deberta-v3-small: relative
// attention with p2c and c2p over 256 log buckets, shared keys, the relative embeddings
// LayerNorm'd, no absolute positions, no token types, dropout 0.1), with the spec's hidden
// size, layers, heads, feed-forward width and vocabulary, and 2 labels.
func (s Spec) configKeys() map[string]any {
	keys := map[string]any{"vocab_size": s.Vocab, "hidden_size": s.Hidden, "num_hidden_layers": s.Layers,
		"num_attention_heads": s.Heads, "intermediate_size": s.FF, "num_labels": 2}
	f := func(v float64) bert.PyFloat { return bert.PyFloat(v) }
	switch s.Work {
	case "modernbert":
		for k, v := range map[string]any{
			"model_type": "modernbert", "hidden_activation": "gelu", "max_position_embeddings": max(8192, s.Seq),
			"initializer_range": f(0.02), "initializer_cutoff_factor": f(2), "norm_eps": f(1e-5), "norm_bias": false,
			"attention_bias": false, "mlp_bias": false, "classifier_bias": false,
			"attention_dropout": f(0), "embedding_dropout": f(0), "mlp_dropout": f(0), "classifier_dropout": f(0),
			"global_attn_every_n_layers": 3, "local_attention": 128,
			"global_rope_theta": f(160000), "local_rope_theta": f(10000),
			"classifier_pooling": "mean", "classifier_activation": "gelu",
		} {
			keys[k] = v
		}
		// The special tokens' ids (read by neither model but for the padding row of
		// transformers' embedding table), ModernBERT-base's where the vocabulary has them.
		pad, bos, eos := 50283, 50281, 50282
		if s.Vocab <= pad {
			pad, bos, eos = 0, 1, 2
		}
		keys["pad_token_id"], keys["bos_token_id"], keys["eos_token_id"] = pad, bos, eos
		keys["cls_token_id"], keys["sep_token_id"] = bos, eos
	case "deberta":
		for k, v := range map[string]any{
			"model_type": "deberta-v2", "hidden_act": "gelu", "hidden_dropout_prob": f(0.1),
			"attention_probs_dropout_prob": f(0.1), "max_position_embeddings": 512, "type_vocab_size": 0,
			"initializer_range": f(0.02), "layer_norm_eps": f(1e-7), "relative_attention": true,
			"max_relative_positions": -1, "position_buckets": debertaBuckets, "pos_att_type": "p2c|c2p", "share_att_key": true,
			"norm_rel_ebd": "layer_norm", "position_biased_input": false, "pad_token_id": 0,
		} {
			keys[k] = v
		}
	}
	return keys
}

// familyConfig returns the config.json of a family work (see configKeys), as the family's
// Config.JSON writes it after ParseConfig read and validated the keys.
func (s Spec) familyConfig() ([]byte, error) {
	keys, err := json.Marshal(s.configKeys())
	if err != nil {
		return nil, err
	}
	name := s.Work + " work"
	switch s.Work {
	case "modernbert":
		cfg, err := modernbert.ParseConfig(keys, name)
		if err != nil {
			return nil, err
		}
		return cfg.JSON()
	case "deberta":
		cfg, err := deberta.ParseConfig(keys, name)
		if err != nil {
			return nil, err
		}
		return cfg.JSON()
	}
	return nil, fmt.Errorf("bench: %s is not a model family's work (%v)", s.Work, Families)
}

// classifier is what the step needs of a sequence classifier: its Store and its logits of
// the batch's inputs.
type classifier interface {
	model.StoreProvider
	Logits(s *model.Scope, inputs []*Node) *Node
}

// newClassifier builds the random classifier of a BERT or family work: models/bert's for
// tiny, minilm and base (bertConfig), the family's for modernbert and deberta (familyConfig).
func newClassifier(spec Spec) (classifier, error) {
	if spec.family() == "bert" {
		return bert.NewClassifier(bertConfig(spec), nil)
	}
	js, err := spec.familyConfig()
	if err != nil {
		return nil, err
	}
	if spec.Work == "modernbert" {
		cfg, err := modernbert.ParseConfig(js, "modernbert work")
		if err != nil {
			return nil, err
		}
		return modernbert.NewClassifier(cfg, nil)
	}
	cfg, err := deberta.ParseConfig(js, "deberta work")
	if err != nil {
		return nil, err
	}
	return deberta.NewClassifier(cfg, nil)
}
