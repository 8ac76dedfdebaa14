package bert

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/models/internal/hf"
)

// Variable names follow Hugging Face's sequence classifiers one to one: the HF tensor
// "bert.encoder.layer.3.attention.self.query.weight" is the GoMLX variable
// "/bert/encoder/layer/3/attention/self/query/weight" (dots become scope separators), and
// dense weights keep PyTorch's [out, in] layout, so no tensor is transposed or renamed on
// the way in or out. Each family keeps its own names ("roberta.encoder...",
// "distilbert.transformer.layer.0.attention.q_lin.weight", "classifier.out_proj.weight").

// EncoderTensors lists the tensors of the encoder (embeddings, layers, and the pooler for
// BERT's sequence classifier: its token classifier has none) for this configuration, in a fixed order, with HF names (the family's prefix,
// "bert.", "roberta.", "distilbert." or "electra.").
func (c Config) EncoderTensors() []TensorSpec {
	f := c.family()
	h, e := c.HiddenSize, c.embeddingSize()
	var l hf.TensorList
	emb := joinName(f.prefix, "embeddings")
	l.Add(emb+".word_embeddings.weight", c.VocabSize, e)
	l.Add(emb+".position_embeddings.weight", c.MaxPositionEmbeddings, e)
	if f.tokenTypes {
		l.Add(emb+".token_type_embeddings.weight", c.TypeVocabSize, e)
	}
	l.Norm(emb+".LayerNorm", e, true)
	if c.projectsEmbeddings() {
		l.Linear(f.prefix+".embeddings_project", h, e, true)
	}
	for i := range c.NumHiddenLayers {
		p := fmt.Sprintf("%s.%s.%d.", f.prefix, f.layers, i)
		for _, name := range []string{f.layer.query, f.layer.key, f.layer.value, f.layer.attnOut} {
			l.Linear(p+name, h, h, true)
		}
		l.Norm(p+f.layer.attnNorm, h, true)
		l.Linear(p+f.layer.ffnIn, c.IntermediateSize, h, true)
		l.Linear(p+f.layer.ffnOut, h, c.IntermediateSize, true)
		l.Norm(p+f.layer.outNorm, h, true)
	}
	if c.hasPooler() {
		l.Linear(f.prefix+".pooler.dense", h, h, true)
	}
	return l
}

// HeadTensors lists the classification head's tensors. The sequence classifier's are
// "classifier.weight" [num_labels, hidden] and its bias for BERT; "pre_classifier.*" [hidden,
// hidden] before them for DistilBERT; "classifier.dense.*" [hidden, hidden] and
// "classifier.out_proj.*" [num_labels, hidden] for RoBERTa and ELECTRA. The token
// classifier's (Head TokenClassification) are "classifier.weight" [num_labels, hidden] and
// "classifier.bias" in every family.
func (c Config) HeadTensors() []TensorSpec {
	var l hf.TensorList
	if c.Head == TokenClassification {
		l.Linear("classifier", c.NumLabels, c.HiddenSize, true)
		return l
	}
	switch c.family().head {
	case headPooled:
		l.Linear("classifier", c.NumLabels, c.HiddenSize, true)
	case headPreClassify:
		l.Linear("pre_classifier", c.HiddenSize, c.HiddenSize, true)
		l.Linear("classifier", c.NumLabels, c.HiddenSize, true)
	case headDenseOut:
		l.Linear("classifier.dense", c.HiddenSize, c.HiddenSize, true)
		l.Linear("classifier.out_proj", c.NumLabels, c.HiddenSize, true)
	}
	return l
}

// Tensors lists every tensor of the classifier with the Config's Head: EncoderTensors
// followed by HeadTensors.
func (c Config) Tensors() []TensorSpec {
	return append(c.EncoderTensors(), c.HeadTensors()...)
}

// HFName returns the Hugging Face tensor name of a model variable, given its path in the
// model.Store (with or without the leading "/"), e.g. "/bert/pooler/dense/weight" ->
// "bert.pooler.dense.weight". It returns false for paths that are not classifier variables
// of a supported family (optimizer state, RNG state, other models).
func HFName(varPath string) (string, bool) {
	name, ok := hf.HFName(varPath)
	if !ok || !isModelTensorName(name) {
		return "", false
	}
	return name, true
}

// VarPath is the inverse of HFName: it returns the model.Store variable path (with a leading
// "/") for a Hugging Face tensor name. Names without a family prefix, as written by
// sentence-transformers and BertModel checkpoints ("embeddings.word_embeddings.weight"), are
// taken as BERT's and mapped under "/bert", and the legacy LayerNorm names "gamma"/"beta" to
// "weight"/"bias". It returns false for tensors that are not part of a classifier (the
// pre-training heads "cls.*", the "embeddings.position_ids" buffer, unknown names).
func VarPath(hfName string) (string, bool) {
	return families["bert"].varPath(hfName)
}

// varPath is VarPath for the family f: unprefixed encoder names get f's prefix.
func (f *family) varPath(hfName string) (string, bool) {
	name := f.canonicalName(hfName)
	if !isModelTensorName(name) {
		return "", false
	}
	return hf.VarPath(name), true
}

// canonicalName adds f's prefix to encoder tensors saved without it (BertModel, RobertaModel
// and sentence-transformers folders) and renames legacy LayerNorm gamma/beta, so names from
// any checkpoint of the family compare equal.
func (f *family) canonicalName(hfName string) string {
	name := hfName
	for _, top := range []string{"embeddings.", "embeddings_project.", "encoder.", "pooler.", "transformer."} {
		if strings.HasPrefix(name, top) {
			name = f.prefix + "." + name
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

// fixedNames are the tensor names of every family outside the numbered layers.
var fixedNames = func() map[string]bool {
	names := map[string]bool{}
	for _, f := range families {
		// A configuration with every optional part: no layers, embeddings projected.
		for _, h := range []Head{SequenceClassification, TokenClassification} {
			cfg := Config{ModelType: f.modelType, HiddenSize: 2, EmbeddingSize: 1, NumLabels: 1, Head: h}
			for _, t := range cfg.Tensors() {
				names[t.Name] = true
			}
		}
	}
	return names
}()

// isModelTensorName reports whether name (canonical HF form) is a tensor of one of the
// families' classifiers, for any number of layers.
func isModelTensorName(name string) bool {
	if fixedNames[name] {
		return true
	}
	for _, f := range families {
		rest, ok := strings.CutPrefix(name, f.prefix+"."+f.layers+".")
		if !ok {
			continue
		}
		index, suffix, ok := strings.Cut(rest, ".")
		if !ok {
			return false
		}
		if n, err := strconv.Atoi(index); err != nil || n < 0 || strconv.Itoa(n) != index {
			return false
		}
		module, param, ok := cutLast(suffix)
		if !ok || (param != "weight" && param != "bias") {
			return false
		}
		l := f.layer
		for _, m := range []string{l.query, l.key, l.value, l.attnOut, l.attnNorm, l.ffnIn, l.ffnOut, l.outNorm} {
			if module == m {
				return true
			}
		}
	}
	return false
}

// cutLast splits s at its last dot.
func cutLast(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, '.')
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}
