package modernbert

import (
	"fmt"
	"strings"

	"github.com/goaccel/goaccel/models/internal/hf"
)

// Variable names follow transformers' ModernBertForSequenceClassification one to one: the
// tensor "model.layers.3.attn.Wqkv.weight" is the variable "/model/layers/3/attn/Wqkv/weight"
// (dots become scope separators), and dense weights keep PyTorch's [out, in] layout.

// TensorSpec names one tensor of the model in Hugging Face layout: its name
// ("model.layers.0.attn.Wqkv.weight") and PyTorch shape. It is the one every family shares, so that code
// over several families lists tensors the same way.
type TensorSpec = hf.TensorSpec

// EncoderTensors lists the tensors of the encoder (ModernBertModel, under "model."): token
// embeddings and their norm, each layer's attn_norm (not layer 0's), Wqkv, Wo, mlp_norm, Wi and
// Wo, and final_norm. Biases appear as the config's norm_bias, attention_bias and mlp_bias say.
func (c Config) EncoderTensors() []TensorSpec {
	h := c.HiddenSize
	var l hf.TensorList
	l.Add("model.embeddings.tok_embeddings.weight", c.VocabSize, h)
	l.Norm("model.embeddings.norm", h, c.NormBias)
	for i := range c.NumHiddenLayers {
		p := fmt.Sprintf("model.layers.%d.", i)
		if i > 0 {
			l.Norm(p+"attn_norm", h, c.NormBias)
		}
		l.Linear(p+"attn.Wqkv", 3*h, h, c.AttentionBias)
		l.Linear(p+"attn.Wo", h, h, c.AttentionBias)
		l.Norm(p+"mlp_norm", h, c.NormBias)
		l.Linear(p+"mlp.Wi", 2*c.IntermediateSize, h, c.MLPBias)
		l.Linear(p+"mlp.Wo", h, c.IntermediateSize, c.MLPBias)
	}
	l.Norm("model.final_norm", h, c.NormBias)
	return l
}

// PredictionHeadTensors lists the tensors of the prediction head that the sequence
// classifier shares with ModernBertForMaskedLM ("head.dense", "head.norm"): a masked-LM
// checkpoint such as answerdotai/ModernBERT-base has them, and transformers starts a
// classifier from them.
func (c Config) PredictionHeadTensors() []TensorSpec {
	var l hf.TensorList
	l.Linear("head.dense", c.HiddenSize, c.HiddenSize, c.ClassifierBias)
	l.Norm("head.norm", c.HiddenSize, c.NormBias)
	return l
}

// ClassifierTensors lists the final classifier's tensors, "classifier.weight" [num_labels,
// hidden] and "classifier.bias" [num_labels].
func (c Config) ClassifierTensors() []TensorSpec {
	var l hf.TensorList
	l.Linear("classifier", c.NumLabels, c.HiddenSize, true)
	return l
}

// Tensors lists every tensor of the classifier, the same for both heads (the token
// classifier runs the sequence classifier's head on every token): EncoderTensors,
// PredictionHeadTensors, ClassifierTensors.
func (c Config) Tensors() []TensorSpec {
	return append(append(c.EncoderTensors(), c.PredictionHeadTensors()...), c.ClassifierTensors()...)
}

// names are the modules of the classifier's tensors: the encoder, the prediction head, the classifier.
var names = hf.Names{Modules: []string{"model", "head", "classifier"}}

// VarPath returns the model.Store variable path (with a leading "/") of a HF tensor name:
// "model.final_norm.weight" -> "/model/final_norm/weight"; false for a name outside the
// classifier's modules (model, head, classifier).
func VarPath(hfName string) (string, bool) { return names.VarPath(hfName) }

// HFName is the inverse of VarPath: the HF tensor name of a variable path, with or without
// the leading "/"; false for a path outside the classifier's modules (optimizer state, the
// random state, another model's variables).
func HFName(varPath string) (string, bool) { return names.HFName(varPath) }

// canonicalName adds the "model." prefix to the encoder tensors of a bare ModernBertModel
// checkpoint, whose names start at "embeddings.", "layers." or "final_norm.".
func canonicalName(name string) string {
	for _, top := range []string{"embeddings.", "layers.", "final_norm."} {
		if strings.HasPrefix(name, top) {
			return "model." + name
		}
	}
	return name
}
