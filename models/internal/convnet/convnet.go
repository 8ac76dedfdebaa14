// Package convnet is what the convolutional families (models/resnet, models/convnext) share:
// torch.nn.Conv2d on goaccel's channels-last images (docs/images.md), with its kernel kept
// HWIO in the Store and OIHW in the Hugging Face files (transposed once at load and once at
// save, not in every graph), a depthwise convolution whose gradient GoMLX computes without
// one convolution per channel, and the folder's tensors in and out with BatchNorm's int64
// num_batches_tracked among them.
package convnet

import (
	"fmt"
	"math"
	"slices"

	"github.com/goaccel/goaccel/models/internal/half"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Conv is one torch.nn.Conv2d: Out output channels, a Kernel x Kernel window moved by Stride,
// Pad zeros on each side of both spatial axes, and a bias when Bias. Groups 0 or 1 is a
// dense convolution; Groups equal to the input's channels (and Out) is depthwise.
type Conv struct {
	Out, Kernel, Stride, Pad, Groups int
	Bias                             bool
}

// KernelDims is the kernel's shape in the Store, HWIO: [Kernel, Kernel, in/Groups, Out].
func (c Conv) KernelDims(in int) []int {
	return []int{c.Kernel, c.Kernel, in / max(c.Groups, 1), c.Out}
}

// FileDims is the kernel's shape in a Hugging Face file, PyTorch's OIHW: [Out, in/Groups,
// Kernel, Kernel].
func (c Conv) FileDims(in int) []int {
	return []int{c.Out, in / max(c.Groups, 1), c.Kernel, c.Kernel}
}

// Init gives a fresh kernel and bias of a convolution their values.
type Init struct {
	// Kernel initialises the HWIO kernel (its shape says the fan-in and fan-out).
	Kernel model.VariableInitializer
	// Bias initialises the bias (nil: zeros).
	Bias model.VariableInitializer
}

// Conv2D applies c to x [B, H, W, in] with the variables "weight" (HWIO) and "bias" in scope
// s, and returns float32 [B, H', W', Out]. Under mixed precision (compute) a dense
// convolution runs on its dtype's operands (depthwise ones and those whose windows tile the
// image stay float32); the result is float32.
func Conv2D(s *model.Scope, x *Node, c Conv, compute *half.Compute, init Init) *Node {
	g := x.Graph()
	in := x.Shape().Dimensions[3]
	depthwise := c.Groups > 1
	if depthwise && (c.Groups != in || c.Out != in) {
		exceptions.Panicf("convnet: grouped convolution of %d groups on %d channels to %d: only depthwise (groups = channels = out) is implemented",
			c.Groups, in, c.Out)
	}
	kernel := s.WithInitializer(init.Kernel).VariableWithShape("weight", shapes.Make(dtypes.Float32, c.KernelDims(in)...)).NodeValue(g)
	y := Apply(x, kernel, c, compute)
	if c.Bias {
		binit := init.Bias
		if binit == nil {
			binit = Zeros
		}
		b := s.WithInitializer(binit).VariableWithShape("bias", shapes.Make(dtypes.Float32, c.Out)).NodeValue(g)
		y = Add(y, Reshape(b, 1, 1, 1, c.Out))
	}
	return y
}

// Apply is c's convolution, no bias, of x [B, H, W, in] by an HWIO kernel [k, k, in/groups,
// n] whose output channels n need not be c.Out (LoRA's A, lora.Adapter.Conv): the way
// Conv2D computes it (depthwise as shifted products, tiling windows as one product over the
// patches, the others by GoMLX's convolution on compute's dtype), float32 [B, H', W', n].
func Apply(x, kernel *Node, c Conv, compute *half.Compute) *Node {
	switch {
	case c.Groups > 1:
		return Depthwise(ConvertDType(x, dtypes.Float32), kernel, c.Pad)
	case c.Kernel > 1 && c.Kernel == c.Stride && c.Pad == 0:
		return patches(x, kernel)
	}
	dt := compute.DType()
	y := Convolve(ConvertDType(x, dt), ConvertDType(kernel, dt)).Strides(max(c.Stride, 1)).
		PaddingPerDim([][2]int{{c.Pad, c.Pad}, {c.Pad, c.Pad}}).Done()
	return ConvertDType(y, dtypes.Float32)
}

// patches is a convolution whose windows tile the image (kernel k = stride, no padding: ViT's
// and ConvNeXt's patchify stems, ConvNeXt's downsampling) as a product of each k x k patch,
// flattened, by the kernel [k·k·in, out]: GoMLX v0.28.3's gradient of a strided convolution
// is wrong for an even kernel (TestStridedEvenKernelGradient). As PyTorch's convolution, it
// leaves out the rows and columns past the last whole patch.
func patches(x, kernel *Node) *Node {
	d := x.Shape().Dimensions
	kd := kernel.Shape().Dimensions
	k, in, out := kd[0], kd[2], kd[3]
	h, w := d[1]/k, d[2]/k
	if h == 0 || w == 0 {
		exceptions.Panicf("convnet: %dx%d patches of an image %dx%d", k, k, d[1], d[2])
	}
	x = Slice(x, AxisRange(), AxisRange(0, h*k), AxisRange(0, w*k), AxisRange())
	x = Reshape(x, d[0], h, k, w, k, in)
	x = Reshape(TransposeAllAxes(x, 0, 1, 3, 2, 4, 5), d[0], h, w, k*k*in) // [B, h, w, (kh, kw, in)]
	// float32 under mixed precision too: the gradient of a half-precision product here is a
	// dot that XLA's CPU plugin refuses (BF16 x BF16 = F32); the stems and downsampling layers
	// are a small share of the model's products.
	weight := Reshape(kernel, k*k*in, out) // [(kh, kw, in), out]
	return Einsum("bhwi,io->bhwo", ConvertDType(x, dtypes.Float32), weight)
}

// Depthwise is a depthwise convolution (stride 1) of x [B, H, W, C] by kernel [k, k, 1, C],
// with pad zeros on every side, as a sum of k² shifted products: GoMLX v0.28.3 computes the
// gradient of a grouped convolution as one convolution per group, C of them here, which this
// form avoids (XLA fuses the sum into one loop, and the gradient too).
func Depthwise(x, kernel *Node, pad int) *Node {
	dims := x.Shape().Dimensions
	k := kernel.Shape().Dimensions[0]
	h, w := dims[1]+2*pad-k+1, dims[2]+2*pad-k+1
	if h <= 0 || w <= 0 {
		exceptions.Panicf("convnet: depthwise %dx%d convolution with padding %d of an image %dx%d", k, k, pad, dims[1], dims[2])
	}
	padded := zeroPad(x, pad)
	var sum *Node
	for i := range k {
		for j := range k {
			window := Slice(padded, AxisRange(), AxisRange(i, i+h), AxisRange(j, j+w), AxisRange())
			tap := Reshape(Slice(kernel, AxisRange(i, i+1), AxisRange(j, j+1)), 1, 1, 1, dims[3])
			term := Mul(window, tap)
			if sum == nil {
				sum = term
			} else {
				sum = Add(sum, term)
			}
		}
	}
	return sum
}

// zeroPad puts pad zeros on both sides of x's axes 1 and 2 (H and W of NHWC), by
// concatenation: GoMLX v0.28.3 defines no gradient for Pad (TestPadHasNoGradient).
func zeroPad(x *Node, pad int) *Node {
	if pad <= 0 {
		return x
	}
	g := x.Graph()
	for _, axis := range []int{1, 2} {
		dims := slices.Clone(x.Shape().Dimensions)
		dims[axis] = pad
		zeros := Zeros(g, shapes.Make(x.DType(), dims...))
		x = Concatenate([]*Node{zeros, x, zeros}, axis)
	}
	return x
}

// KaimingNormalFanOut is torch.nn.init.kaiming_normal_(mode="fan_out", nonlinearity="relu")
// on an HWIO kernel: N(0, 2/fan_out), fan_out = out·k·k, drawn from store's random state.
func KaimingNormalFanOut(store *model.Store) model.VariableInitializer {
	return func(g *Graph, shape shapes.Shape) *Node {
		d := shape.Dimensions
		fanOut := d[len(d)-1]
		for _, v := range d[:len(d)-2] {
			fanOut *= v
		}
		return MulScalar(store.RandomNormal(g, shape), math.Sqrt(2/float64(fanOut)))
	}
}

// Normal is N(0, std²) drawn from store's random state (transformers' normal_ of Linear and
// Conv2d weights with initializer_range).
func Normal(store *model.Store, std float64) model.VariableInitializer {
	return func(g *Graph, shape shapes.Shape) *Node {
		return MulScalar(store.RandomNormal(g, shape), std)
	}
}

// Uniform is U(-bound, bound) drawn from store's random state (torch.nn.Linear's default
// initialisation has bound 1/sqrt(in_features) for the weight and the bias).
func Uniform(store *model.Store, bound float64) model.VariableInitializer {
	return func(g *Graph, shape shapes.Shape) *Node {
		return MulScalar(AddScalar(MulScalar(store.RandomUniform(g, shape), 2), -1), bound)
	}
}

// Checked is fmt.Errorf prefixed with the family, for the load and save errors.
func checked(family, format string, args ...any) error {
	return fmt.Errorf("%s: "+format, append([]any{family}, args...)...)
}
