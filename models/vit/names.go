package vit

import (
	"fmt"
	"strings"

	"github.com/goaccel/goaccel/models/internal/hf"
)

// Variable names follow transformers' ViTForImageClassification one to one: the tensor
// "vit.encoder.layer.3.attention.attention.query.weight" is the variable
// "/vit/encoder/layer/3/attention/attention/query/weight" (dots become scope separators), and
// every tensor keeps PyTorch's layout (dense weights [out, in], the patch embedding's
// convolution kernel OIHW [hidden, channels, patch, patch]), so none is transposed or renamed
// on the way in or out.

// TensorSpec names one tensor of the model in Hugging Face layout, the one every family
// shares.
type TensorSpec = hf.TensorSpec

// EncoderTensors lists the tensors of the encoder (ViTModel without its pooler, under
// "vit."): the CLS token [1, 1, hidden], the position embeddings [1, patches+1, hidden], the
// patch embedding's convolution (weight [hidden, channels, patch, patch], bias), each
// layer's layernorm_before, query, key and value (biases as qkv_bias says), attention
// output, layernorm_after, intermediate and output denses, and the final layernorm.
func (c Config) EncoderTensors() []TensorSpec {
	h, p := c.HiddenSize, c.PatchSize
	var l hf.TensorList
	l.Add("vit.embeddings.cls_token", 1, 1, h)
	l.Add("vit.embeddings.position_embeddings", 1, c.NumPatches()+1, h)
	l.Add("vit.embeddings.patch_embeddings.projection.weight", h, c.NumChannels, p, p)
	l.Add("vit.embeddings.patch_embeddings.projection.bias", h)
	for i := range c.NumHiddenLayers {
		pre := fmt.Sprintf("vit.encoder.layer.%d.", i)
		l.Norm(pre+"layernorm_before", h, true)
		for _, name := range []string{"query", "key", "value"} {
			l.Linear(pre+"attention.attention."+name, h, h, c.QKVBias)
		}
		l.Linear(pre+"attention.output.dense", h, h, true)
		l.Norm(pre+"layernorm_after", h, true)
		l.Linear(pre+"intermediate.dense", c.IntermediateSize, h, true)
		l.Linear(pre+"output.dense", h, c.IntermediateSize, true)
	}
	l.Norm("vit.layernorm", h, true)
	return l
}

// ClassifierTensors lists the classifier's tensors, "classifier.weight" [num_labels, hidden]
// and "classifier.bias" [num_labels].
func (c Config) ClassifierTensors() []TensorSpec {
	return hf.ImageClassifierTensors(c.NumLabels, c.HiddenSize)
}

// Tensors lists every tensor of the classifier: EncoderTensors, ClassifierTensors.
func (c Config) Tensors() []TensorSpec { return append(c.EncoderTensors(), c.ClassifierTensors()...) }

// names are the modules of the classifier's tensors: the encoder and the classifier.
var names = hf.Names{Modules: []string{"vit", "classifier"}}

// VarPath returns the model.Store variable path (with a leading "/") of a HF tensor name:
// "vit.layernorm.weight" -> "/vit/layernorm/weight"; false for a name outside the
// classifier's modules (vit, classifier).
func VarPath(hfName string) (string, bool) { return names.VarPath(hfName) }

// HFName is the inverse of VarPath: the HF tensor name of a variable path, with or without
// the leading "/"; false for a path outside the classifier's modules (optimizer state, the
// random state, another model's variables).
func HFName(varPath string) (string, bool) { return names.HFName(varPath) }

// canonicalName adds the "vit." prefix to the tensors of a bare ViTModel checkpoint
// (google/vit-base-patch16-224-in21k), whose names start at "embeddings.", "encoder.",
// "layernorm." or "pooler.".
func canonicalName(name string) string {
	for _, top := range []string{"embeddings.", "encoder.", "layernorm.", "pooler."} {
		if strings.HasPrefix(name, top) {
			return "vit." + name
		}
	}
	return name
}

// ignoredTensor reports the tensors of other ViT heads that a load passes over: ViTModel's
// pooler and the masked-image-modeling decoder and mask token.
func ignoredTensor(name string) bool {
	return strings.HasPrefix(name, "vit.pooler.") || strings.HasPrefix(name, "decoder.") || name == "vit.embeddings.mask_token"
}
