package convnet

import (
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/models/internal/familytest"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
)

// TestPadHasNoGradient pins the GoMLX v0.28.3 bug zeroPad works around: the gradient of Pad
// is not defined. When it fails, GoMLX computes Pad's gradient: Depthwise can pad with Pad.
func TestPadHasNoGradient(t *testing.T) {
	backend := familytest.Go(t)
	_, err := ExecOnce(backend, func(x *Node) *Node {
		y := Pad(x, ScalarZero(x.Graph(), dtypes.Float32), PadAxis{Start: 1, End: 1})
		return Gradient(ReduceAllSum(Square(y)), x)[0]
	}, tensors.FromValue([]float32{1, 2}))
	if err == nil || !strings.Contains(err.Error(), "no gradient is defined") {
		t.Fatalf("Pad's gradient: err %v, want GoMLX's \"no gradient is defined\" (fixed upstream? then Depthwise may use Pad)", err)
	}
}

// TestStridedEvenKernelGradient pins the GoMLX v0.28.3 bug patches works around: the
// gradient with respect to the input of a convolution with a 2x2 kernel and stride 2 (no
// padding) is wrong. The reference is the same gradient through patches, a product whose
// gradient is right (and equal to PyTorch's: the parity tests train through it). When this
// test fails, GoMLX's is right too: Conv2D may convolve tiling windows again.
func TestStridedEvenKernelGradient(t *testing.T) {
	backend := familytest.Go(t)
	x := make([]float32, 4*4*2)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	k := make([]float32, 2*2*2*3)
	for i := range k {
		k[i] = float32(i%5) - 2
	}
	grads := func(conv func(x, k *Node) *Node) []float32 {
		out, err := ExecOnce(backend, func(x, k *Node) *Node {
			y := conv(x, k)
			w := ConvertDType(IotaFull(x.Graph(), y.Shape()), y.DType())
			return Gradient(ReduceAllSum(Mul(y, w)), x)[0]
		}, tensors.FromFlatDataAndDimensions(x, 1, 4, 4, 2), tensors.FromFlatDataAndDimensions(k, 2, 2, 2, 3))
		if err != nil {
			t.Fatal(err)
		}
		return tensors.MustCopyFlatData[float32](out)
	}
	gomlx := grads(func(x, k *Node) *Node { return Convolve(x, k).Strides(2).NoPadding().Done() })
	want := grads(func(x, k *Node) *Node { return patches(x, k) })
	if slices.Equal(gomlx, want) {
		t.Fatalf("GoMLX's gradient of a 2x2 stride-2 convolution is right now (%v): fixed upstream, Conv2D may use Convolve for tiling windows", gomlx)
	}
	t.Logf("GoMLX's input gradient %v, the product's (PyTorch's) %v", gomlx[:8], want[:8])
}
