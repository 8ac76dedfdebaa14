// Package half multiplies on half-precision operands (bf16, fp16) with float32 results and
// gradients of the same kind, for the model families' mixed precision: see Product.
package half

import (
	"slices"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/support/exceptions"
	"github.com/gomlx/gomlx/support/xslices"
)

// Matrix products under mixed precision (bf16, fp16).
//
// GoMLX's Dot gives half-precision operands a float32 accumulator, which go-xla v0.4.1 turns
// into a dot algorithm of float32 operand precision: XLA's CPU plugin then converts both
// operands to float32 and multiplies there. GoMLX's gradient of a dot does the same for the
// two backward products (docs/performance.md, "bf16 on XLA's CPU plugin"). So under bf16 not
// one product ran on bf16 operands, and bf16 was slower than fp32.
//
// Product multiplies the operands in their own half-precision dtype with a float32 result (a
// plain dot_general of bf16 operands and an f32 result type, which XLA's CPU plugin runs on
// YNNPACK's bf16 kernels, the CPU's bf16 dot instructions where it has them, when the product
// comes in the form mixedProduct gives it; GPUs run it on their tensor cores), and
// gives it a gradient of the same kind: the two backward products take the incoming gradient
// rounded to the operands' dtype and the other operand, and return float32, rounded to the
// operand's dtype only where the operand is one (an activation); a float32 operand (a master
// weight, converted inside) gets its gradient in float32, never rounded to 16 bits.
//
// The gradient goes in with GoMLX's IdentityWithCustomGradient, which takes one input: an
// identity on each operand and one on the product. Autodiff reaches the product's identity
// before the operands' (they come before it in the graph), so its function records the
// incoming gradient and the product's operands, and theirs compute their gradients from
// that record. The operands are read from the product node autodiff hands over, which under
// activation checkpointing is the recomputed one, so the backward products read the
// recomputed activations, not the forward pass's. GoMLX's own gradient of the dot between
// the identities is built too, and never used: XLA drops it as dead code.

// Axes describes one product for Product: the contracting and batch axes of the
// forward dot_general (the batch axes lead both operands, as many of them in each), and how
// each operand's gradient is one dot_general of the result's gradient and the other operand.
type Axes struct {
	lhsContract, rhsContract []int
	batch                    int // the number of leading batch axes
	gradLHS, gradRHS         backProduct
}

// backProduct is a backward product: the result's gradient contracted on gradContract with
// the other operand on otherContract (batch axes as the forward product's), the other operand
// the left one when otherFirst, so that the product comes out in the operand's layout.
type backProduct struct {
	gradContract, otherContract []int
	otherFirst                  bool
}

// LinearAxes is the product of x [rows, in] by a weight [out, in] (torch.nn.Linear's
// layout): [rows, out]; dx = dy·w, dw = dyᵀ·x.
var LinearAxes = Axes{
	lhsContract: []int{1}, rhsContract: []int{1},
	gradLHS: backProduct{gradContract: []int{1}, otherContract: []int{0}},
	gradRHS: backProduct{gradContract: []int{0}, otherContract: []int{0}},
}

// ScoreAxes is the product of queries [..., Lq, D] by keys [..., Lk, D], with batch leading
// batch axes in both (2 for [B, heads, L, D]): the scores [..., Lq, Lk]; dq = ds·k,
// dk = dsᵀ·q.
func ScoreAxes(batch int) Axes {
	return Axes{
		lhsContract: []int{batch + 1}, rhsContract: []int{batch + 1}, batch: batch,
		gradLHS: backProduct{gradContract: []int{batch + 1}, otherContract: []int{batch}},
		gradRHS: backProduct{gradContract: []int{batch}, otherContract: []int{batch}},
	}
}

// MixAxes is the product of probabilities [..., Lq, Lk] by values [..., Lk, D], with batch
// leading batch axes in both: [..., Lq, D]; dp = do·vᵀ, dv = pᵀ·do.
func MixAxes(batch int) Axes {
	return Axes{
		lhsContract: []int{batch + 1}, rhsContract: []int{batch}, batch: batch,
		gradLHS: backProduct{gradContract: []int{batch + 1}, otherContract: []int{batch + 1}},
		gradRHS: backProduct{gradContract: []int{batch}, otherContract: []int{batch}, otherFirst: true},
	}
}

// mixedProduct is the dot_general of half-precision lhs and rhs with a float32 result (the
// operands' dtype, no accumulator dtype: see above); batch leading batch axes. The result's
// axes are dot_general's: batch, lhs's free axes, rhs's free axes, each in their order.
//
// It hands XLA's CPU plugin the forms of product it multiplies in 16 bits (YNNPACK's; XLA
// converts the operands of any other form to float32 first): lhs laid out [batch, free,
// contracted], rhs [batch, contracted, free] or [batch, free, contracted], both row-major in
// memory. So the operands are transposed to such an order where they are not in one, and each
// is flattened to one axis and shaped back across an optimisation barrier: XLA would otherwise
// fold a transpose into the product's dimension numbers or into the operand's memory layout
// (a weight's gradient contracts the rows of both operands; attention's operands are
// transposes of the projections), and either form makes it multiply in float32. Where an
// operand is already in such an order and row-major, the flattening is a bitcast and costs
// nothing; else it is the one copy XLA would make anyway. The forward products of LinearAxes,
// ScoreAxes and MixAxes need no transpose, so Product's record holds the operands as given.
func mixedProduct(lhs, rhs *Node, lhsContract, rhsContract []int, batch int) *Node {
	nc := len(lhsContract)
	if !slices.Equal(lhsContract, xslices.Iota(lhs.Rank()-nc, nc)) {
		lhs = TransposeAllAxes(lhs, axesOrder(lhs.Rank(), batch, lhsContract, false)...)
		lhsContract = xslices.Iota(lhs.Rank()-nc, nc)
	}
	if !slices.Equal(rhsContract, xslices.Iota(rhs.Rank()-nc, nc)) && !slices.Equal(rhsContract, xslices.Iota(batch, nc)) {
		rhs = TransposeAllAxes(rhs, axesOrder(rhs.Rank(), batch, rhsContract, true)...)
		rhsContract = xslices.Iota(batch, nc)
	}
	ops := rowMajor(lhs, rhs)
	batchAxes := xslices.Iota(0, batch)
	return Dot(ops[0], ops[1]).WithAccumulatorDType(dtypes.InvalidDType).WithOutputDType(dtypes.Float32).
		General(lhsContract, batchAxes, rhsContract, batchAxes)
}

// axesOrder is the permutation of a rank-axis operand (batch leading batch axes) to [batch,
// free, contract] or, when contractFirst, [batch, contract, free]: free axes in their order,
// contract in contract's.
func axesOrder(rank, batch int, contract []int, contractFirst bool) []int {
	perm := xslices.Iota(0, batch)
	var free []int
	for i := batch; i < rank; i++ {
		if !slices.Contains(contract, i) {
			free = append(free, i)
		}
	}
	if contractFirst {
		return append(append(perm, contract...), free...)
	}
	return append(append(perm, free...), contract...)
}

// rowMajor returns a and b with their values, made row-major in memory: each flattened to one
// axis and shaped back across one optimisation barrier (XLA's CPU plugin ignores a barrier of
// a single value, so the two share one).
func rowMajor(a, b *Node) []*Node {
	ops := OptimizationBarriers(Reshape(a, -1), Reshape(b, -1))
	return []*Node{Reshape(ops[0], a.Shape().Dimensions...), Reshape(ops[1], b.Shape().Dimensions...)}
}

// Product is the product of lhs and rhs (by axes) computed on operands of the half-precision
// dtype dt, lhs and rhs converted to it where they are not; the result is float32. See above.
func Product(lhs, rhs *Node, dt dtypes.DType, axes Axes) *Node {
	if !dt.IsHalfPrecision() {
		exceptions.Panicf("half: Product wants a half-precision dtype, got %s", dt)
	}
	// The record holds the forward product's operands as the backward products' axes describe
	// them: mixedProduct must not transpose them.
	nc := len(axes.lhsContract)
	if !slices.Equal(axes.lhsContract, xslices.Iota(lhs.Rank()-nc, nc)) ||
		(!slices.Equal(axes.rhsContract, xslices.Iota(rhs.Rank()-nc, nc)) && !slices.Equal(axes.rhsContract, xslices.Iota(axes.batch, nc))) {
		exceptions.Panicf("half: Product's forward product contracts lhs axes %v and rhs axes %v of %s and %s: "+
			"it must take them in a form mixedProduct leaves as it is", axes.lhsContract, axes.rhsContract, lhs.Shape(), rhs.Shape())
	}
	var rec struct {
		grad, lhs, rhs *Node // the gradient of the product and its operands, in dt
	}
	operand := func(x *Node, other func() *Node, p backProduct) *Node {
		srcDType := x.DType()
		x = IdentityWithCustomGradient(x, func(_, _ *Node) *Node {
			if rec.grad == nil {
				exceptions.Panicf("half: Product's operand gradient came before its product's (GoMLX's autodiff order changed)")
			}
			var g *Node
			if p.otherFirst {
				g = mixedProduct(other(), rec.grad, p.otherContract, p.gradContract, axes.batch)
			} else {
				g = mixedProduct(rec.grad, other(), p.gradContract, p.otherContract, axes.batch)
			}
			return ConvertDType(g, srcDType)
		})
		return ConvertDType(x, dt)
	}
	l := operand(lhs, func() *Node { return rec.rhs }, axes.gradLHS)
	r := operand(rhs, func() *Node { return rec.lhs }, axes.gradRHS)
	y := mixedProduct(l, r, axes.lhsContract, axes.rhsContract, axes.batch)
	return IdentityWithCustomGradient(y, func(node, v *Node) *Node {
		dot := node.Inputs()[0]
		if dot.Type() != NodeTypeDotGeneral || len(dot.Inputs()) != 2 {
			exceptions.Panicf("half: Product's product is a %s node with %d inputs, want a DotGeneral of 2", dot.Type(), len(dot.Inputs()))
		}
		rec.grad, rec.lhs, rec.rhs = ConvertDType(v, dt), dot.Inputs()[0], dot.Inputs()[1]
		return v
	})
}

// Linear is torch.nn.Linear on x [..., in] with its product on operands of the
// half-precision dtype dt (Product): x·wᵀ + b for a weight w [out, in] and a bias b [out] (nil for
// none), float32 [..., out]. x and w are converted to dt where they are not.
func Linear(x, w, b *Node, dt dtypes.DType) *Node {
	dims := x.Shape().Dimensions
	inDim, outDim := dims[len(dims)-1], w.Shape().Dimensions[0]
	y := Product(Reshape(x, -1, inDim), w, dt, LinearAxes)
	if b != nil {
		y = Add(y, InsertAxes(b, 0))
	}
	return Reshape(y, append(slices.Clone(dims[:len(dims)-1]), outDim)...)
}
