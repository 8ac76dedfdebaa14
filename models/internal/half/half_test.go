package half

import (
	"math"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
)

// TestProduct checks Product's result and both gradients against GoMLX's own float32 Einsum
// and its autodiff, on operands and an incoming gradient that bfloat16 holds exactly (so the
// only differences are float32 summation order and, for a bfloat16 operand, its gradient's
// final rounding), for the three products the encoder uses, on every available backend: a
// bfloat16 operand's gradient is bfloat16, a float32 operand's (a master weight, a softmax's
// probabilities) float32 and as exact as float32 summation.
func TestProduct(t *testing.T) {
	cases := []struct {
		name           string
		axes           Axes
		eq             string
		lhs, rhs       []int
		lhsF32, rhsF32 bool // the operand enters as float32 (else bfloat16)
	}{
		{"linear", LinearAxes, "mi,oi->mo", []int{64, 384}, []int{96, 384}, false, true},
		{"scores", ScoreAxes(2), "bhqd,bhkd->bhqk", []int{2, 4, 64, 32}, []int{2, 4, 48, 32}, false, false},
		{"mix", MixAxes(2), "bhqk,bhkd->bhqd", []int{2, 4, 64, 48}, []int{2, 4, 48, 32}, true, false},
		// One batch axis: DeBERTa's relative scores, heads by (batch·query) rows.
		{"scores1", ScoreAxes(1), "hqd,hkd->hqk", []int{4, 96, 32}, []int{4, 40, 32}, false, false},
		{"mix1", MixAxes(1), "hqk,hkd->hqd", []int{4, 64, 40}, []int{4, 40, 32}, true, false},
	}
	for name, backend := range testBackends(t) {
		for _, c := range cases {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				lhs := bf16Exact(c.lhs, 1)
				rhs := bf16Exact(c.rhs, 2)
				yShape := MustNewExec(backend, func(a, b *Node) *Node { return Einsum(c.eq, a, b) }).MustExec(lhs, rhs)[0].Shape()
				gy := bf16Exact(yShape.Dimensions, 3)
				run := func(half bool) []*tensors.Tensor {
					return MustNewExec(backend, func(a, b, g *Node) []*Node {
						var y *Node
						if half {
							aa, bb := a, b
							if !c.lhsF32 {
								aa = ConvertDType(a, dtypes.BFloat16)
							}
							if !c.rhsF32 {
								bb = ConvertDType(b, dtypes.BFloat16)
							}
							y = Product(aa, bb, dtypes.BFloat16, c.axes)
							grads := Gradient(ReduceAllSum(Mul(y, g)), aa, bb)
							if y.DType() != dtypes.Float32 {
								t.Errorf("Product's result is %s, want float32", y.DType())
							}
							for i, want := range []bool{c.lhsF32, c.rhsF32} {
								if wantDT := map[bool]dtypes.DType{true: dtypes.Float32, false: dtypes.BFloat16}[want]; grads[i].DType() != wantDT {
									t.Errorf("operand %d's gradient is %s, want %s", i, grads[i].DType(), wantDT)
								}
							}
							return []*Node{y, ConvertDType(grads[0], dtypes.Float32), ConvertDType(grads[1], dtypes.Float32)}
						}
						y = Einsum(c.eq, a, b)
						grads := Gradient(ReduceAllSum(Mul(y, g)), a, b)
						return []*Node{y, grads[0], grads[1]}
					}).MustExec(lhs, rhs, gy)
				}
				got, want := run(true), run(false)
				for i, what := range []string{"product", "lhs gradient", "rhs gradient"} {
					g, w := tensors.MustCopyFlatData[float32](got[i]), tensors.MustCopyFlatData[float32](want[i])
					if !got[i].Shape().Equal(want[i].Shape()) {
						t.Fatalf("%s: shape %s, want %s", what, got[i].Shape(), want[i].Shape())
					}
					tol := 1e-5 * maxAbs(w)
					if (i == 1 && !c.lhsF32) || (i == 2 && !c.rhsF32) {
						tol = math.Ldexp(maxAbs(w), -8) // one bfloat16 rounding
					}
					if d := testutil.MaxAbsDiff(t, what, g, w); d > tol {
						t.Errorf("%s differs from float32's by %g (tolerance %g)", what, d, tol)
					}
				}
			})
		}
	}
}

// bf16Exact is a float32 tensor of the given dimensions whose values bfloat16 holds exactly,
// varied by seed.
func bf16Exact(dims []int, seed int) *tensors.Tensor {
	t := tensors.FromShape(shapes.Make(dtypes.Float32, dims...))
	tensors.MutableFlatData(t, func(flat []float32) {
		for i := range flat {
			v := float32(math.Sin(float64(i*(seed+3)+seed)) * 2)
			flat[i] = bfloat16.FromFloat32(v).Float32()
		}
	})
	return t
}

// TestGoMLXEinsumIgnoresDotConfig pins a GoMLX v0.28.3 behaviour that mixedProduct works
// around: DotBuilder.Einsum builds its product with the package's DotGeneral, which starts a
// new DotBuilder, so the output dtype (and accumulator) set on the builder are dropped: bf16
// operands give a bf16 result, not the float32 asked for; General keeps them. If this test
// fails, Einsum honours the builder's configuration.
func TestGoMLXEinsumIgnoresDotConfig(t *testing.T) {
	exec := MustNewExec(mustGoBackend(t), func(a, b *Node) []*Node {
		a, b = ConvertDType(a, dtypes.BFloat16), ConvertDType(b, dtypes.BFloat16)
		cfg := func() *DotBuilder {
			return Dot(a, b).WithAccumulatorDType(dtypes.InvalidDType).WithOutputDType(dtypes.Float32)
		}
		return []*Node{cfg().Einsum("ij,kj->ik"), cfg().General([]int{1}, nil, []int{1}, nil)}
	})
	out := exec.MustExec(bf16Exact([]int{3, 4}, 1), bf16Exact([]int{5, 4}, 2))
	if got := out[0].DType(); got != dtypes.BFloat16 {
		t.Errorf("Einsum with WithOutputDType(Float32) gives %s: GoMLX now honours the builder's config", got)
	}
	if got := out[1].DType(); got != dtypes.Float32 {
		t.Errorf("General with WithOutputDType(Float32) gives %s, want Float32", got)
	}
}

// TestProductRefusesATransposedForwardProduct: Product's gradients read the forward product's
// operands as given, so a forward product that mixedProduct would transpose is refused when
// the graph is built, not computed with the gradients of the wrong axes.
func TestProductRefusesATransposedForwardProduct(t *testing.T) {
	weightGrad := Axes{lhsContract: []int{0}, rhsContract: []int{0}, gradLHS: LinearAxes.gradLHS, gradRHS: LinearAxes.gradRHS}
	exec, err := NewExec(mustGoBackend(t), func(a, b *Node) *Node { return Product(a, b, dtypes.BFloat16, weightGrad) })
	if err != nil {
		t.Fatal(err)
	}
	_, err = exec.Exec(bf16Exact([]int{6, 4}, 1), bf16Exact([]int{6, 5}, 2)) // the graph is built here
	if err == nil || !strings.Contains(err.Error(), "form mixedProduct leaves as it is") {
		t.Errorf("a forward product contracting the rows of both operands: got %v, want Product's refusal", err)
	}
}
