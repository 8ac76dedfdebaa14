package resnet

import (
	"fmt"

	"github.com/goaccel/goaccel/models/internal/convnet"
	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/goaccel/goaccel/models/nn"
)

// Variable names follow transformers' ResNetForImageClassification one to one: the tensor
// "resnet.encoder.stages.0.layers.1.layer.0.convolution.weight" is the variable
// "/resnet/encoder/stages/0/layers/1/layer/0/convolution/weight" (dots become scope
// separators). Convolution kernels are HWIO in the Store ([kh, kw, in, out], the layout of
// GoMLX's channels-last convolutions) and OIHW in the files: LoadPretrained and
// SavePretrained transpose them once.

// TensorSpec names one tensor of the model in Hugging Face layout: its name and PyTorch
// shape (kernels OIHW; num_batches_tracked, an int64 scalar, with no dims).
type TensorSpec = hf.TensorSpec

// stage is one stage's layers as the model builds them.
type layerPlan struct {
	prefix        string // "resnet.encoder.stages.0.layers.1."
	in, out       int
	stride        int
	shortcut      bool
	convs         []convnet.Conv // layer.K.convolution
	convActivated []bool         // ReLU after layer.K's BatchNorm (the last: none; the block's output act after the sum)
}

// layers lists every residual layer of the encoder, in order.
func (c Config) layers() []layerPlan {
	var out []layerPlan
	in := c.EmbeddingSize
	for i, width := range c.HiddenSizes {
		for j := range c.Depths[i] {
			stride := 1
			if j == 0 && (i > 0 || c.DownsampleInFirstStage) {
				stride = 2
			}
			p := layerPlan{prefix: fmt.Sprintf("resnet.encoder.stages.%d.layers.%d.", i, j), in: in, out: width, stride: stride,
				shortcut: in != width || stride != 1}
			if c.LayerType == Basic {
				p.convs = []convnet.Conv{{Out: width, Kernel: 3, Stride: stride, Pad: 1}, {Out: width, Kernel: 3, Stride: 1, Pad: 1}}
				p.convActivated = []bool{true, false}
			} else {
				reduced := width / 4
				s1, s3 := 1, stride
				if c.DownsampleInBottleneck {
					s1, s3 = stride, 1
				}
				p.convs = []convnet.Conv{{Out: reduced, Kernel: 1, Stride: s1}, {Out: reduced, Kernel: 3, Stride: s3, Pad: 1},
					{Out: width, Kernel: 1, Stride: 1}}
				p.convActivated = []bool{true, true, false}
			}
			out = append(out, p)
			in = width
		}
	}
	return out
}

// stem is the stem's convolution: 7x7, stride 2, padding 3, no bias.
func (c Config) stem() convnet.Conv {
	return convnet.Conv{Out: c.EmbeddingSize, Kernel: 7, Stride: 2, Pad: 3}
}

// convNorm appends a ResNetConvLayer's tensors: convolution.weight (OIHW) and its BatchNorm's.
func convNorm(l *hf.TensorList, prefix string, conv convnet.Conv, in int) {
	l.Add(prefix+"convolution.weight", conv.FileDims(in)...)
	batchNorm(l, prefix+"normalization", conv.Out)
}

// batchNorm appends a BatchNorm2d's tensors.
func batchNorm(l *hf.TensorList, prefix string, width int) {
	for _, n := range []string{nn.BatchNormWeight, nn.BatchNormBias, nn.BatchNormRunningMean, nn.BatchNormRunningVar} {
		l.Add(prefix+"."+n, width)
	}
	l.Add(prefix + convnet.TrackedSuffix)
}

// EncoderTensors lists the tensors of ResNetModel (under "resnet."): the stem's convolution
// and BatchNorm, and each layer's convolutions and BatchNorms (layer.K), with its
// projection shortcut (shortcut) where the width or the stride changes.
func (c Config) EncoderTensors() []TensorSpec {
	var l hf.TensorList
	convNorm(&l, "resnet.embedder.embedder.", c.stem(), c.NumChannels)
	for _, p := range c.layers() {
		if p.shortcut {
			convNorm(&l, p.prefix+"shortcut.", convnet.Conv{Out: p.out, Kernel: 1, Stride: p.stride}, p.in)
		}
		in := p.in
		for k, conv := range p.convs {
			convNorm(&l, fmt.Sprintf("%slayer.%d.", p.prefix, k), conv, in)
			in = conv.Out
		}
	}
	return l
}

// ClassifierTensors lists the classifier's tensors, "classifier.1.weight" [num_labels,
// hidden_sizes[-1]] and "classifier.1.bias" (transformers' head is Sequential(Flatten,
// Linear)).
func (c Config) ClassifierTensors() []TensorSpec {
	var l hf.TensorList
	l.Linear("classifier.1", c.NumLabels, c.HiddenSizes[len(c.HiddenSizes)-1], true)
	return l
}

// Tensors lists every tensor of the classifier: EncoderTensors, then ClassifierTensors.
func (c Config) Tensors() []TensorSpec { return append(c.EncoderTensors(), c.ClassifierTensors()...) }

// FLOPs counts the floating-point operations of one forward pass over one side x side image
// (2 per multiply-add): the convolutions (each output pixel's k²·in·out) and the classifier.
func (c Config) FLOPs(side int) float64 {
	out := func(n int, conv convnet.Conv) int { return (n+2*conv.Pad-conv.Kernel)/max(conv.Stride, 1) + 1 }
	conv := func(n, in int, cv convnet.Conv) float64 {
		m := float64(out(n, cv))
		return 2 * m * m * float64(cv.Kernel*cv.Kernel*in*cv.Out)
	}
	stem := c.stem()
	total := conv(side, c.NumChannels, stem)
	n := (out(side, stem)+2-3)/2 + 1 // the 3x3 max-pool, stride 2, padding 1
	for _, p := range c.layers() {
		if p.shortcut {
			total += conv(n, p.in, convnet.Conv{Out: p.out, Kernel: 1, Stride: p.stride})
		}
		in, m := p.in, n
		for _, cv := range p.convs {
			total += conv(m, in, cv)
			in, m = cv.Out, out(m, cv)
		}
		n = m
	}
	return total + 2*float64(c.HiddenSizes[len(c.HiddenSizes)-1]*c.NumLabels)
}
