package bench

import (
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
)

// The MLP's layers under mixed precision (docs/performance.md, "The MLP's bf16 step").
//
// GoMLX's Dot gives 16-bit operands a float32 accumulator, which go-xla turns into a dot
// algorithm of float32 operand precision, and its gradient of a dot computes both backward
// products in that accumulator's dtype: XLA's CPU plugin then multiplies every product of the
// step in float32 and the step only adds conversions to fp32's. mixedDense multiplies 16-bit
// operands with a float32 result in the forward product and in both backward ones (the way
// models/internal/half does for the model families, which this package cannot import), so a
// CPU with bfloat16 dot instructions runs them there.

// mixedDense is x [rows, in] (bfloat16 or float16) times the float32 weight w [in, out], plus
// the float32 bias b [out]: float32 [rows, out]. The product runs on x's dtype (w rounded to it),
// and so do the two products of its gradient: dx = dy·wᵀ, rounded to x's dtype, and dw = xᵀ·dy,
// kept float32 (the master weight's gradient is never rounded to 16 bits).
//
// The gradients go in through GoMLX's IdentityWithCustomGradient on each operand and on the
// product: autodiff reaches the product's identity first (it comes after the operands in the
// graph), which records the incoming gradient; the operands' identities multiply it. GoMLX's own
// gradient of the dot between them is built too, never used, and dropped by XLA as dead code.
func mixedDense(x, w, b *Node) *Node {
	dt := x.DType()
	var dy *Node // the product's gradient, rounded to dt
	var xs, ws *Node
	xIn := IdentityWithCustomGradient(x, func(_, _ *Node) *Node {
		return ConvertDType(product16(dy, ws, true), dt)
	})
	wIn := IdentityWithCustomGradient(w, func(_, _ *Node) *Node {
		return product16(Transpose(xs, 0, 1), dy, false)
	})
	xs, ws = xIn, ConvertDType(wIn, dt)
	y := IdentityWithCustomGradient(product16(xs, ws, false), func(_, v *Node) *Node {
		dy = ConvertDType(v, dt)
		return v
	})
	return Add(y, InsertAxes(b, 0))
}

// product16 is a·b, or a·bᵀ when bT, for 16-bit matrices a [m, k] and b [k, n] ([n, k] when bT),
// with a float32 result [m, n] and no accumulator dtype (so no float32 dot algorithm). XLA's CPU
// plugin keeps 16-bit operands only in the products YNNPACK takes: the contracted axis last in a,
// first or last in b, both row-major in memory. Both are in that order here; the flattening of
// both across one optimisation barrier keeps XLA from folding a transpose (dw's xᵀ) into the
// dot's dimensions or the operand's layout, either of which makes it multiply in float32 (a
// single-value barrier is dropped by go-xla on CPU, so the two share one).
func product16(a, b *Node, bT bool) *Node {
	ops := OptimizationBarriers(Reshape(a, -1), Reshape(b, -1))
	a, b = Reshape(ops[0], a.Shape().Dimensions...), Reshape(ops[1], b.Shape().Dimensions...)
	rhsContract := 0
	if bT {
		rhsContract = 1
	}
	return Dot(a, b).WithAccumulatorDType(dtypes.InvalidDType).WithOutputDType(dtypes.Float32).
		General([]int{1}, nil, []int{rhsContract}, nil)
}
