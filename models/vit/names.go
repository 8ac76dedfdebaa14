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
// "vit."; Dinov2Model under "dinov2."): the CLS token [1, 1, hidden], the position
// embeddings [1, patches+1, hidden], the patch embedding's convolution (weight [hidden,
// channels, patch, patch], bias), each layer's layernorm_before (DINOv2: norm1), query, key
// and value (biases as qkv_bias says), attention output, layernorm_after (norm2), the
// feed-forward (ViT: intermediate.dense and output.dense; DINOv2: mlp.fc1 and mlp.fc2, or
// SwiGLU's mlp.weights_in [2·width, hidden], gate then up, and mlp.weights_out) and DINOv2's
// layer_scale1 and layer_scale2, and the final layernorm.
func (c Config) EncoderTensors() []TensorSpec {
	h, p, f := c.HiddenSize, c.PatchSize, c.FFNWidth()
	top := c.prefix()
	var l hf.TensorList
	l.Add(top+".embeddings.cls_token", 1, 1, h)
	l.Add(top+".embeddings.position_embeddings", 1, c.NumPatches()+1, h)
	l.Add(top+".embeddings.patch_embeddings.projection.weight", h, c.NumChannels, p, p)
	l.Add(top+".embeddings.patch_embeddings.projection.bias", h)
	if c.keepsMaskToken() {
		l.Add(top+".embeddings.mask_token", 1, h)
	}
	for i := range c.NumHiddenLayers {
		pre := fmt.Sprintf("%s.encoder.layer.%d.", top, i)
		before, after := c.layerNorms()
		l.Norm(pre+before, h, true)
		for _, name := range []string{"query", "key", "value"} {
			l.Linear(pre+"attention.attention."+name, h, h, c.QKVBias)
		}
		l.Linear(pre+"attention.output.dense", h, h, true)
		l.Norm(pre+after, h, true)
		switch {
		case c.ModelType == ViT:
			l.Linear(pre+"intermediate.dense", f, h, true)
			l.Linear(pre+"output.dense", h, f, true)
		case c.UseSwiGLUFFN:
			l.Linear(pre+"mlp.weights_in", 2*f, h, true)
			l.Linear(pre+"mlp.weights_out", h, f, true)
		default:
			l.Linear(pre+"mlp.fc1", f, h, true)
			l.Linear(pre+"mlp.fc2", h, f, true)
		}
		if c.ModelType == DINOv2 {
			l.Add(pre+"layer_scale1.lambda1", h)
			l.Add(pre+"layer_scale2.lambda1", h)
		}
	}
	l.Norm(top+".layernorm", h, true)
	return l
}

// layerNorms are the names of a layer's two LayerNorms.
func (c Config) layerNorms() (before, after string) {
	if c.ModelType == DINOv2 {
		return "norm1", "norm2"
	}
	return "layernorm_before", "layernorm_after"
}

// headWidth is the classifier's input: the CLS token (ViT), or the CLS token and the mean
// patch token side by side (DINOv2).
func (c Config) headWidth() int {
	if c.ModelType == DINOv2 {
		return 2 * c.HiddenSize
	}
	return c.HiddenSize
}

// ClassifierTensors lists the classifier's tensors, "classifier.weight" [num_labels, hidden]
// (DINOv2: [num_labels, 2·hidden]) and "classifier.bias" [num_labels].
func (c Config) ClassifierTensors() []TensorSpec {
	return hf.ImageClassifierTensors(c.NumLabels, c.headWidth())
}

// Tensors lists every tensor of the classifier: EncoderTensors, ClassifierTensors.
func (c Config) Tensors() []TensorSpec { return append(c.EncoderTensors(), c.ClassifierTensors()...) }

// names are the modules of the classifier's tensors: the encoder and the classifier.
var names = hf.Names{Modules: []string{"vit", "dinov2", "classifier"}}

// VarPath returns the model.Store variable path (with a leading "/") of a HF tensor name:
// "vit.layernorm.weight" -> "/vit/layernorm/weight"; false for a name outside the
// classifier's modules (vit, dinov2, classifier).
func VarPath(hfName string) (string, bool) { return names.VarPath(hfName) }

// HFName is the inverse of VarPath: the HF tensor name of a variable path, with or without
// the leading "/"; false for a path outside the classifier's modules (optimizer state, the
// random state, another model's variables).
func HFName(varPath string) (string, bool) { return names.HFName(varPath) }

// canonicalName adds the encoder's prefix ("vit.", "dinov2.") to the tensors of a bare
// ViTModel or Dinov2Model checkpoint (google/vit-base-patch16-224-in21k,
// facebook/dinov2-small), whose names start at "embeddings.", "encoder.", "layernorm." or
// "pooler.".
func (c Config) canonicalName(name string) string {
	for _, top := range []string{"embeddings.", "encoder.", "layernorm.", "pooler."} {
		if strings.HasPrefix(name, top) {
			return c.prefix() + "." + name
		}
	}
	return name
}

// ignoredTensor reports the tensors of other heads that a load passes over: ViTModel's
// pooler, the masked-image-modeling decoder and ViT's mask token (DINOv2's is kept:
// keepsMaskToken).
func (c Config) ignoredTensor(name string) bool {
	top := c.prefix()
	return strings.HasPrefix(name, top+".pooler.") || strings.HasPrefix(name, "decoder.") ||
		(name == top+".embeddings.mask_token" && !c.keepsMaskToken())
}

// keepsMaskToken says whether the classifier keeps the mask token [1, hidden]: DINOv2's with
// use_mask_token, which every Dinov2Model has; the classifier does not use it, but loads it
// and writes it back (frozen), so that a folder goaccel saves has the checkpoint's.
func (c Config) keepsMaskToken() bool { return c.ModelType == DINOv2 && c.UseMaskToken }
