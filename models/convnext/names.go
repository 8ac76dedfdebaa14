package convnext

import (
	"fmt"
	"strings"

	"github.com/goaccel/goaccel/models/internal/hf"
)

// Variable names follow transformers' ConvNextForImageClassification (and
// ConvNextV2ForImageClassification) one to one: the tensor
// "convnext.encoder.stages.0.layers.1.pwconv1.weight" is the variable
// "/convnext/encoder/stages/0/layers/1/pwconv1/weight" (dots become scope separators).
// Linear weights keep PyTorch's [out, in] layout; convolution kernels (patch_embeddings,
// downsampling_layer.1 and dwconv) are HWIO in the Store and OIHW in the files, transposed
// once by LoadPretrained and SavePretrained.

// TensorSpec names one tensor of the model in Hugging Face layout: its name and PyTorch shape.
type TensorSpec = hf.TensorSpec

// prefix is the base model's tensor prefix: "convnext." or "convnextv2.".
func (c Config) prefix() string { return c.ModelType + "." }

// downsamples reports whether stage i starts with a downsampling layer (LayerNorm and a 2x2
// convolution with stride 2): every stage but the first, and the first too if it changed
// the width (it cannot: the stem gives it hidden_sizes[0]).
func (c Config) downsamples(i int) bool { return i > 0 }

// EncoderTensors lists the tensors of the base model (under "convnext." or "convnextv2."):
// the stem (patch_embeddings and its LayerNorm), each stage's downsampling layer and blocks
// (dwconv, layernorm, pwconv1, pwconv2, and layer_scale_parameter for V1 or grn for V2), and
// the final LayerNorm of the pooled features.
func (c Config) EncoderTensors() []TensorSpec {
	p := c.prefix()
	var l hf.TensorList
	h0 := c.HiddenSizes[0]
	l.Add(p+"embeddings.patch_embeddings.weight", h0, c.NumChannels, c.PatchSize, c.PatchSize)
	l.Add(p+"embeddings.patch_embeddings.bias", h0)
	l.Norm(p+"embeddings.layernorm", h0, true)
	in := h0
	for i, d := range c.HiddenSizes {
		s := fmt.Sprintf("%sencoder.stages.%d.", p, i)
		if c.downsamples(i) {
			l.Norm(s+"downsampling_layer.0", in, true)
			l.Add(s+"downsampling_layer.1.weight", d, in, 2, 2)
			l.Add(s+"downsampling_layer.1.bias", d)
		}
		for j := range c.Depths[i] {
			b := fmt.Sprintf("%slayers.%d.", s, j)
			l.Add(b+"dwconv.weight", d, 1, 7, 7)
			l.Add(b+"dwconv.bias", d)
			l.Norm(b+"layernorm", d, true)
			l.Linear(b+"pwconv1", 4*d, d, true)
			if c.ModelType == V2 {
				l.Add(b+"grn.weight", 1, 1, 1, 4*d)
				l.Add(b+"grn.bias", 1, 1, 1, 4*d)
			}
			l.Linear(b+"pwconv2", d, 4*d, true)
			if c.layerScale() {
				l.Add(b+"layer_scale_parameter", d)
			}
		}
		in = d
	}
	l.Norm(p+"layernorm", in, true)
	return l
}

// ClassifierTensors lists the classifier's tensors, "classifier.weight" [num_labels,
// hidden_sizes[-1]] and "classifier.bias".
func (c Config) ClassifierTensors() []TensorSpec {
	var l hf.TensorList
	l.Linear("classifier", c.NumLabels, c.HiddenSizes[len(c.HiddenSizes)-1], true)
	return l
}

// Tensors lists every tensor of the classifier: EncoderTensors, then ClassifierTensors.
func (c Config) Tensors() []TensorSpec { return append(c.EncoderTensors(), c.ClassifierTensors()...) }

// isKernel reports whether a tensor is a convolution's kernel.
func isKernel(name string) bool {
	for _, k := range []string{".patch_embeddings.weight", ".downsampling_layer.1.weight", ".dwconv.weight"} {
		if strings.HasSuffix(name, k) {
			return true
		}
	}
	return false
}

// FLOPs counts the floating-point operations of one forward pass over one side x side image
// (2 per multiply-add): the stem, downsampling and depthwise convolutions, the blocks' linear
// layers and the classifier.
func (c Config) FLOPs(side int) float64 {
	n := side / c.PatchSize
	in := c.HiddenSizes[0]
	total := 2 * float64(n*n) * float64(c.PatchSize*c.PatchSize*c.NumChannels*in)
	for i, d := range c.HiddenSizes {
		if c.downsamples(i) {
			n /= 2
			total += 2 * float64(n*n) * float64(4*in*d)
		}
		pixels := float64(n * n)
		total += float64(c.Depths[i]) * 2 * pixels * float64(49*d+8*d*d)
		in = d
	}
	return total + 2*float64(in*c.NumLabels)
}

// CheckImageSize refuses an image side the model cannot take: one its patchify stem and
// downsampling layers leave no pixel of (less than patch_size·2^(num_stages-1)).
func (c Config) CheckImageSize(side int) error {
	least := c.PatchSize << max(c.NumStages-1, 0)
	if side < least {
		return fmt.Errorf("convnext: image side %d is below patch_size·2^(num_stages-1) = %d, which the model's strides need", side, least)
	}
	return nil
}
