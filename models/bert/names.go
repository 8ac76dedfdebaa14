package bert

import (
	"fmt"
	"strconv"
	"strings"
)

// Variable names follow Hugging Face's BertForSequenceClassification one to one: the HF
// tensor "bert.encoder.layer.3.attention.self.query.weight" is the GoMLX variable
// "/bert/encoder/layer/3/attention/self/query/weight" (dots become scope separators), and
// dense weights keep PyTorch's [out, in] layout, so no tensor is transposed or renamed on
// the way in or out.

// layerTemplates lists the per-layer tensors relative to "bert.encoder.layer.<i>.", with a
// function giving each one's dimensions.
var layerTemplates = []struct {
	suffix string
	dims   func(c Config) []int
}{
	{"attention.self.query.weight", func(c Config) []int { return []int{c.HiddenSize, c.HiddenSize} }},
	{"attention.self.query.bias", func(c Config) []int { return []int{c.HiddenSize} }},
	{"attention.self.key.weight", func(c Config) []int { return []int{c.HiddenSize, c.HiddenSize} }},
	{"attention.self.key.bias", func(c Config) []int { return []int{c.HiddenSize} }},
	{"attention.self.value.weight", func(c Config) []int { return []int{c.HiddenSize, c.HiddenSize} }},
	{"attention.self.value.bias", func(c Config) []int { return []int{c.HiddenSize} }},
	{"attention.output.dense.weight", func(c Config) []int { return []int{c.HiddenSize, c.HiddenSize} }},
	{"attention.output.dense.bias", func(c Config) []int { return []int{c.HiddenSize} }},
	{"attention.output.LayerNorm.weight", func(c Config) []int { return []int{c.HiddenSize} }},
	{"attention.output.LayerNorm.bias", func(c Config) []int { return []int{c.HiddenSize} }},
	{"intermediate.dense.weight", func(c Config) []int { return []int{c.IntermediateSize, c.HiddenSize} }},
	{"intermediate.dense.bias", func(c Config) []int { return []int{c.IntermediateSize} }},
	{"output.dense.weight", func(c Config) []int { return []int{c.HiddenSize, c.IntermediateSize} }},
	{"output.dense.bias", func(c Config) []int { return []int{c.HiddenSize} }},
	{"output.LayerNorm.weight", func(c Config) []int { return []int{c.HiddenSize} }},
	{"output.LayerNorm.bias", func(c Config) []int { return []int{c.HiddenSize} }},
}

// encoderTemplates lists the tensors outside the layers (relative to the model root).
var encoderTemplates = []struct {
	name string
	dims func(c Config) []int
}{
	{"bert.embeddings.word_embeddings.weight", func(c Config) []int { return []int{c.VocabSize, c.HiddenSize} }},
	{"bert.embeddings.position_embeddings.weight", func(c Config) []int { return []int{c.MaxPositionEmbeddings, c.HiddenSize} }},
	{"bert.embeddings.token_type_embeddings.weight", func(c Config) []int { return []int{c.TypeVocabSize, c.HiddenSize} }},
	{"bert.embeddings.LayerNorm.weight", func(c Config) []int { return []int{c.HiddenSize} }},
	{"bert.embeddings.LayerNorm.bias", func(c Config) []int { return []int{c.HiddenSize} }},
	{"bert.pooler.dense.weight", func(c Config) []int { return []int{c.HiddenSize, c.HiddenSize} }},
	{"bert.pooler.dense.bias", func(c Config) []int { return []int{c.HiddenSize} }},
}

// headTemplates lists the classification head's tensors.
var headTemplates = []struct {
	name string
	dims func(c Config) []int
}{
	{"classifier.weight", func(c Config) []int { return []int{c.NumLabels, c.HiddenSize} }},
	{"classifier.bias", func(c Config) []int { return []int{c.NumLabels} }},
}

// TensorSpec names one tensor of the model in Hugging Face layout.
type TensorSpec struct {
	// Name is the HF tensor name, e.g. "bert.encoder.layer.0.output.dense.weight".
	Name string
	// Dims is the tensor's shape (PyTorch layout: dense weights are [out, in]).
	Dims []int
}

// EncoderTensors lists the tensors of the BERT encoder (embeddings, layers, pooler) for this
// configuration, in a fixed order, with HF names ("bert." prefix).
func (c Config) EncoderTensors() []TensorSpec {
	var specs []TensorSpec
	for _, t := range encoderTemplates[:5] {
		specs = append(specs, TensorSpec{t.name, t.dims(c)})
	}
	for i := range c.NumHiddenLayers {
		for _, t := range layerTemplates {
			specs = append(specs, TensorSpec{fmt.Sprintf("bert.encoder.layer.%d.%s", i, t.suffix), t.dims(c)})
		}
	}
	for _, t := range encoderTemplates[5:] {
		specs = append(specs, TensorSpec{t.name, t.dims(c)})
	}
	return specs
}

// Tensors lists every tensor of the sequence classifier: EncoderTensors followed by the
// classification head ("classifier.weight" [num_labels, hidden], "classifier.bias").
func (c Config) Tensors() []TensorSpec {
	specs := c.EncoderTensors()
	for _, t := range headTemplates {
		specs = append(specs, TensorSpec{t.name, t.dims(c)})
	}
	return specs
}

// HFName returns the Hugging Face tensor name of a model variable, given its path in the
// model.Store (with or without the leading "/"), e.g. "/bert/pooler/dense/weight" ->
// "bert.pooler.dense.weight". It returns false for paths that are not BERT classifier
// variables (optimizer state, RNG state, other models).
func HFName(varPath string) (string, bool) {
	p := strings.TrimPrefix(varPath, "/")
	if p == "" || strings.Contains(p, ".") {
		return "", false
	}
	name := strings.ReplaceAll(p, "/", ".")
	if !isModelTensorName(name) {
		return "", false
	}
	return name, true
}

// VarPath is the inverse of HFName: it returns the model.Store variable path (with a leading
// "/") for a Hugging Face tensor name. Names without the "bert." prefix, as written by
// sentence-transformers and BertModel checkpoints ("embeddings.word_embeddings.weight"), are
// mapped under "/bert", and the legacy LayerNorm names "gamma"/"beta" to "weight"/"bias".
// It returns false for tensors that are not part of the classifier (the pre-training heads
// "cls.*", the "embeddings.position_ids" buffer, unknown names).
func VarPath(hfName string) (string, bool) {
	name := canonicalHFName(hfName)
	if !isModelTensorName(name) {
		return "", false
	}
	return "/" + strings.ReplaceAll(name, ".", "/"), true
}

// canonicalHFName adds the "bert." prefix to encoder tensors saved without it and renames
// legacy LayerNorm gamma/beta, so names from any BERT checkpoint compare equal.
func canonicalHFName(hfName string) string {
	name := hfName
	for _, top := range []string{"embeddings.", "encoder.", "pooler."} {
		if strings.HasPrefix(name, top) {
			name = "bert." + name
			break
		}
	}
	if strings.Contains(name, ".LayerNorm.") {
		if base, ok := strings.CutSuffix(name, ".gamma"); ok {
			name = base + ".weight"
		} else if base, ok := strings.CutSuffix(name, ".beta"); ok {
			name = base + ".bias"
		}
	}
	return name
}

// isModelTensorName reports whether name (canonical HF form) is one of the tensors built by
// this package, for any number of layers.
func isModelTensorName(name string) bool {
	for _, t := range encoderTemplates {
		if name == t.name {
			return true
		}
	}
	for _, t := range headTemplates {
		if name == t.name {
			return true
		}
	}
	rest, ok := strings.CutPrefix(name, "bert.encoder.layer.")
	if !ok {
		return false
	}
	index, suffix, ok := strings.Cut(rest, ".")
	if !ok {
		return false
	}
	if n, err := strconv.Atoi(index); err != nil || n < 0 || strconv.Itoa(n) != index {
		return false
	}
	for _, t := range layerTemplates {
		if suffix == t.suffix {
			return true
		}
	}
	return false
}
