package main

import (
	"fmt"
	"strings"

	"github.com/goaccel/goaccel/checkpoint"
	"github.com/goaccel/goaccel/models/nn"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// torchName is the name in a torch state_dict of the ResNet variable at path (a scope
// path of resnet18.logits): the names of torchvision's ResNet and BasicBlock, which
// scripts/cifar10_torch.py's model uses ("/layer2/0/shortcut_bn/running_var" is
// "layer2.0.downsample.1.running_var", "/fc/dense/weights" is "fc.weight"). ok is false for the
// variables that are not the model's (the optimizer's).
func torchName(path string) (name string, ok bool) {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(parts) < 2 || parts[0] == "optimizers" || strings.HasPrefix(parts[0], "optim") {
		return "", false
	}
	for i, p := range parts {
		switch p {
		case "shortcut":
			parts[i] = "downsample.0"
		case "shortcut_bn":
			parts[i] = "downsample.1"
		}
	}
	if parts[0] == "fc" { // layers.Dense's variables sit in a scope of its own: /fc/dense/weights
		if len(parts) == 3 && parts[1] == "dense" {
			parts = []string{"fc", parts[2]}
		}
		switch parts[len(parts)-1] {
		case "weights":
			parts[len(parts)-1] = "weight"
		case "biases":
			parts[len(parts)-1] = "bias"
		}
	}
	switch last := parts[len(parts)-1]; last {
	case "weight", "bias", nn.BatchNormRunningMean, nn.BatchNormRunningVar, nn.BatchNormTracked:
	default:
		return "", false
	}
	if !strings.HasPrefix(parts[0], "layer") && parts[0] != "conv1" && parts[0] != "bn1" && parts[0] != "fc" {
		return "", false
	}
	return strings.Join(parts, "."), true
}

// toTorchLayout turns a convolution kernel from GoMLX's [kh, kw, in, out] into torch's
// [out, in, kh, kw] and the classifier's [in, out] weights into torch's [out, in]; every
// other tensor is kept as it is.
func toTorchLayout(name string, t *tensors.Tensor) (*tensors.Tensor, error) {
	switch {
	case name == "fc.weight":
		return checkpoint.TransposeMatrix(t)
	case t.Shape().Rank() != 4:
		return t, nil
	}
	d := t.Shape().Dimensions
	var out *tensors.Tensor
	err := t.ConstFlatData(func(a any) {
		switch src := a.(type) {
		case []float32:
			out = kernelToTorch(src, d)
		case []float64:
			out = kernelToTorch(src, d)
		}
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, fmt.Errorf("%s: a %s kernel, want float32 or float64", name, t.Shape().DType)
	}
	return out, nil
}

// kernelToTorch reorders a [kh, kw, in, out] kernel's values to torch's [out, in, kh, kw].
func kernelToTorch[T float32 | float64](src []T, d []int) *tensors.Tensor {
	kh, kw, in, out := d[0], d[1], d[2], d[3]
	dst := make([]T, len(src))
	for y := range kh {
		for x := range kw {
			for i := range in {
				for o := range out {
					dst[((o*in+i)*kh+y)*kw+x] = src[((y*kw+x)*in+i)*out+o]
				}
			}
		}
	}
	return tensors.FromFlatDataAndDimensions(dst, out, in, kh, kw)
}

// exportTorch writes the ResNet's weights and BatchNorm statistics to a safetensors file
// under torch's state_dict names and layouts, for scripts/cifar10_torch.py --init.
func exportTorch(path string, store *model.Store) error {
	return checkpoint.ExportWeights(path, store, torchName, toTorchLayout)
}
