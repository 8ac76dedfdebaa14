package vit

import (
	"math"

	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
)

// interpolatePositions is ViTEmbeddings.interpolate_pos_encoding on the position embeddings
// pos [1, 1+side², D]: the CLS token's row kept, the patches' rows read as a side x side grid
// and resized to newH x newW by PyTorch's bicubic interpolation (interpolate with
// mode="bicubic", align_corners=False, no antialiasing), rows first. The resize is separable,
// so it is two products with constant matrices (bicubicMatrix), and the gradient reaches
// pos through them.
func interpolatePositions(pos *Node, side, newH, newW int) *Node {
	g := pos.Graph()
	d := pos.Shape().Dimensions[2]
	cls := Slice(pos, AxisRange(), AxisRange(0, 1), AxisRange())
	grid := Reshape(Slice(pos, AxisRange(), AxisRange(1, 1+side*side), AxisRange()), side, side, d)
	rows := Const(g, bicubicMatrix(side, newH)) // [newH, side]
	cols := Const(g, bicubicMatrix(side, newW)) // [newW, side]
	out := Einsum("hi,ijd->hjd", rows, grid)
	out = Einsum("wj,hjd->hwd", cols, out)
	return Concatenate([]*Node{cls, Reshape(out, 1, newH*newW, d)}, 1)
}

// bicubicA is the cubic convolution's parameter in PyTorch's bicubic interpolation.
const bicubicA = -0.75

// bicubicMatrix is the [out][in] matrix of PyTorch's 1-D bicubic resize from in to out
// samples with align_corners=False: output i reads the input at x = (i + 0.5)·in/out − 0.5
// (the scale in/out and x in float32, as PyTorch computes them for float32 tensors), from its
// four neighbours floor(x)−1 .. floor(x)+2, clamped to the edges, with Keys' cubic weights
// (a = −0.75) of the distance t = x − floor(x).
func bicubicMatrix(in, out int) [][]float32 {
	m := make([][]float32, out)
	scale := float32(in) / float32(out)
	for i := range m {
		m[i] = make([]float32, in)
		x := scale*(float32(i)+0.5) - 0.5
		x0 := float32(math.Floor(float64(x)))
		t := x - x0
		w := cubicWeights(t)
		for k := range 4 {
			j := min(max(int(x0)-1+k, 0), in-1)
			m[i][j] += w[k]
		}
	}
	return m
}

// cubicWeights are the weights of the four neighbours at distances t+1, t, 1−t and 2−t.
func cubicWeights(t float32) [4]float32 {
	const a = bicubicA
	near := func(x float32) float32 { return ((a+2)*x-(a+3))*x*x + 1 }
	far := func(x float32) float32 { return ((a*x-5*a)*x+8*a)*x - 4*a }
	return [4]float32{far(t + 1), near(t), near(1 - t), far(2 - t)}
}
