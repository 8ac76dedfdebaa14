package lora

import (
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Conv is one torch.nn.Conv2d of the base model (dense, no groups): its module name (the HF
// name of its weight less ".weight"), its channels and its square kernel's side. Its kernel
// is [Kernel, Kernel, In, Out] in the Store (HWIO), [Out, In, Kernel, Kernel] in PyTorch.
// Stride and padding are the family's: the convolution function it gives Adapter.Conv.
type Conv struct {
	Module          string
	In, Out, Kernel int
}

// ConvLayers returns the convolutions among a model's tensors as the Store holds them: every
// four-dimensional "M.weight" [k, k, in, out] (HWIO) whose kernel is square. For a family
// whose Store keeps every four-dimensional weight as a dense convolution's kernel, and that
// calls Adapter.Conv for each of them.
func ConvLayers(tensors []Tensor) []Conv {
	var out []Conv
	for _, t := range tensors {
		module, ok := strings.CutSuffix(t.Name, ".weight")
		if !ok || len(t.Dims) != 4 || t.Dims[0] != t.Dims[1] {
			continue
		}
		out = append(out, Conv{Module: module, In: t.Dims[2], Out: t.Dims[3], Kernel: t.Dims[0]})
	}
	return out
}

// aDims and bDims are the shapes of a convolution's A and B, PyTorch's OIHW as PEFT saves
// them: A is a Conv2d(in, r) of the base's kernel, stride and padding, B a 1x1 Conv2d(r, out).
func (c Conv) aDims(r int) []int { return []int{r, c.In, c.Kernel, c.Kernel} }
func (c Conv) bDims(r int) []int { return []int{c.Out, r, 1, 1} }

// Conv is the hook a family calls where it builds a convolution: s is the convolution's
// scope (its path is the module name: "/resnet/embedder/embedder/convolution"), x its input
// [B, H, W, in] (channels last), y its output [B, H', W', out], and conv applies the
// layer's convolution (its stride, padding and way of computing) to an input with another
// HWIO kernel [k, k, in, n], returning float32 [B, H', W', n]. For a targeted layer it
// returns y + (alpha/r)·B(A(dropout(x))) as PEFT's Conv2d LoRA computes it: A a
// convolution like the base's to r channels ("lora_A/weight", [r, in, k, k], OIHW,
// kaiming-uniform over in·k·k), B a 1x1 convolution to out channels ("lora_B/weight",
// [out, r, 1, 1], zero), created under s on first use. The input goes to conv as float32
// (conv casts it as the base layer does); the update is added in y's dtype. Other layers,
// and every layer of a nil adapter, get y unchanged.
func (a *Adapter) Conv(s *model.Scope, x, y *Node, conv func(x, kernel *Node) *Node) *Node {
	if a == nil {
		return y
	}
	l, ok := a.targetedConv[moduleOf(s)]
	if !ok {
		return y
	}
	if x.Rank() != 4 || y.Rank() != 4 || x.Shape().Dimensions[3] != l.In || y.Shape().Dimensions[3] != l.Out {
		exceptions.Panicf("lora: convolution %s is [%d -> %d channels] but was given input %s and output %s", l.Module, l.In, l.Out, x.Shape(), y.Shape())
	}
	r := a.cfg.R
	g := x.Graph()
	wa := s.At("lora_A").WithInitializer(kaimingUniform(s.Store(), l.In*l.Kernel*l.Kernel)).
		VariableWithShape("weight", shapes.Make(dtypes.Float32, l.aDims(r)...)).NodeValue(g)
	wb := s.At("lora_B").WithInitializer(Zeros).
		VariableWithShape("weight", shapes.Make(dtypes.Float32, l.bDims(r)...)).NodeValue(g)
	h := ConvertDType(x, dtypes.Float32)
	if a.cfg.Dropout > 0 {
		h = a.dropout(s, h)
	}
	h = conv(h, TransposeAllAxes(wa, 2, 3, 1, 0)) // OIHW -> HWIO [k, k, in, r]
	if got := h.Shape().Dimensions; len(got) != 4 || got[3] != r || got[1] != y.Shape().Dimensions[1] || got[2] != y.Shape().Dimensions[2] {
		exceptions.Panicf("lora: convolution %s: the family's convolution gave %s for A, want [batch, %d, %d, %d]",
			l.Module, h.Shape(), y.Shape().Dimensions[1], y.Shape().Dimensions[2], r)
	}
	d := Einsum("bhwr,or->bhwo", ConvertDType(h, dtypes.Float32), Reshape(wb, l.Out, r))
	return Add(y, ConvertDType(MulScalar(d, a.cfg.Scale()), y.DType()))
}

// foldInConv adds scale·B∘A to the HWIO kernel w [k, k, in, out] of l: B [out, r] (1x1)
// and A [r, in, k, k] (OIHW), so the merged kernel's [kh, kw, i, o] gains
// scale·Σ_r B[o, r]·A[r, i, kh, kw], summed in float64.
func foldInConv(w, wa, wb []float32, l Conv, r int, scale float64) {
	k, in, out := l.Kernel, l.In, l.Out
	for kh := range k {
		for kw := range k {
			for i := range in {
				for o := range out {
					var sum float64
					for q := range r {
						sum += float64(wb[o*r+q]) * float64(wa[((q*in+i)*k+kh)*k+kw])
					}
					w[((kh*k+kw)*in+i)*out+o] += float32(scale * sum)
				}
			}
		}
	}
}
