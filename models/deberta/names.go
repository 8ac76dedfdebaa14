package deberta

import (
	"fmt"
	"strings"

	"github.com/goaccel/goaccel/models/internal/hf"
)

// Variable names follow transformers' DebertaV2ForSequenceClassification one to one: the
// tensor "deberta.encoder.layer.3.attention.self.query_proj.weight" is the variable
// "/deberta/encoder/layer/3/attention/self/query_proj/weight" (dots become scope separators),
// and dense weights keep PyTorch's [out, in] layout.

// TensorSpec names one tensor of the model in Hugging Face layout: its name
// ("deberta.encoder.rel_embeddings.weight") and PyTorch shape. It is the one every family shares, so that
// code over several families lists tensors the same way.
type TensorSpec = hf.TensorSpec

// EncoderTensors lists the tensors of the encoder (DebertaV2Model, under "deberta."):
//
//   - embeddings: word_embeddings [vocab, embedding_size], position_embeddings
//     [max_position_embeddings, embedding_size] with position_biased_input,
//     token_type_embeddings [type_vocab_size, embedding_size] when type_vocab_size > 0,
//     embed_proj [hidden, embedding_size] (no bias) when embedding_size differs from
//     hidden_size, LayerNorm;
//   - each layer: attention.self's query_proj, key_proj and value_proj (and, with relative
//     attention but without share_att_key, pos_key_proj for c2p and pos_query_proj for p2c),
//     attention.output's dense and LayerNorm, intermediate.dense, output's dense and LayerNorm;
//   - encoder.rel_embeddings [2·span, hidden] with relative attention (span: position_buckets,
//     or max_relative_positions) and encoder.LayerNorm with norm_rel_ebd "layer_norm".
func (c Config) EncoderTensors() []TensorSpec {
	h, e := c.HiddenSize, c.EmbeddingSize
	var l hf.TensorList
	l.Add("deberta.embeddings.word_embeddings.weight", c.VocabSize, e)
	if c.PositionBiasedInput {
		l.Add("deberta.embeddings.position_embeddings.weight", c.MaxPositionEmbeddings, e)
	}
	if c.TypeVocabSize > 0 {
		l.Add("deberta.embeddings.token_type_embeddings.weight", c.TypeVocabSize, e)
	}
	if e != h {
		l.Add("deberta.embeddings.embed_proj.weight", h, e)
	}
	l.Norm("deberta.embeddings.LayerNorm", h, true)
	for i := range c.NumHiddenLayers {
		p := fmt.Sprintf("deberta.encoder.layer.%d.", i)
		for _, proj := range []string{"query_proj", "key_proj", "value_proj"} {
			l.Linear(p+"attention.self."+proj, h, h, true)
		}
		if c.RelativeAttention && !c.ShareAttKey {
			if c.Has(C2P) {
				l.Linear(p+"attention.self.pos_key_proj", h, h, true)
			}
			if c.Has(P2C) {
				l.Linear(p+"attention.self.pos_query_proj", h, h, true)
			}
		}
		l.Linear(p+"attention.output.dense", h, h, true)
		l.Norm(p+"attention.output.LayerNorm", h, true)
		l.Linear(p+"intermediate.dense", c.IntermediateSize, h, true)
		l.Linear(p+"output.dense", h, c.IntermediateSize, true)
		l.Norm(p+"output.LayerNorm", h, true)
	}
	if c.RelativeAttention {
		l.Add("deberta.encoder.rel_embeddings.weight", 2*c.attSpan(), h)
	}
	if c.normRel() {
		l.Norm("deberta.encoder.LayerNorm", h, true)
	}
	return l
}

// PoolerTensors lists the tensors of the ContextPooler, "pooler.dense.weight" [hidden, hidden]
// and "pooler.dense.bias".
func (c Config) PoolerTensors() []TensorSpec {
	var l hf.TensorList
	l.Linear("pooler.dense", c.HiddenSize, c.HiddenSize, true)
	return l
}

// ClassifierTensors lists the final classifier's tensors, "classifier.weight" [num_labels,
// hidden] and "classifier.bias" [num_labels].
func (c Config) ClassifierTensors() []TensorSpec {
	var l hf.TensorList
	l.Linear("classifier", c.NumLabels, c.HiddenSize, true)
	return l
}

// Tensors lists every tensor of the classifier: EncoderTensors, PoolerTensors and
// ClassifierTensors for the sequence classifier; EncoderTensors and ClassifierTensors for the
// token classifier (Head TokenClassification), which has no pooler.
func (c Config) Tensors() []TensorSpec {
	if c.Head == hf.TokenClassification {
		return append(c.EncoderTensors(), c.ClassifierTensors()...)
	}
	return append(append(c.EncoderTensors(), c.PoolerTensors()...), c.ClassifierTensors()...)
}

// names are the modules of the classifier's tensors: the encoder, the ContextPooler, the classifier.
var names = hf.Names{Modules: []string{"deberta", "pooler", "classifier"}}

// VarPath returns the model.Store variable path (with a leading "/") of a HF tensor name:
// "deberta.encoder.LayerNorm.weight" -> "/deberta/encoder/LayerNorm/weight"; false for a name outside the
// classifier's modules (deberta, pooler, classifier).
func VarPath(hfName string) (string, bool) { return names.VarPath(hfName) }

// HFName is the inverse of VarPath: the HF tensor name of a variable path, with or without
// the leading "/"; false for a path outside the classifier's modules (optimizer state, the
// random state, another model's variables).
func HFName(varPath string) (string, bool) { return names.HFName(varPath) }

// canonicalName adds the "deberta." prefix to the encoder tensors of a bare DebertaV2Model
// checkpoint, whose names start at "embeddings." or "encoder.".
func canonicalName(name string) string {
	if strings.HasPrefix(name, "embeddings.") || strings.HasPrefix(name, "encoder.") {
		return "deberta." + name
	}
	return name
}

// otherHeads are the name prefixes of the heads of DeBERTa's other tasks, which a
// checkpoint may hold and LoadPretrained passes over: the masked-LM head (legacy "cls." and
// "lm_predictions."), the replaced-token-detection head of the v3 pre-training checkpoints
// ("mask_predictions.") and the question-answering head ("qa_outputs.").
var otherHeads = []string{"cls.", "lm_predictions.", "mask_predictions.", "qa_outputs."}
