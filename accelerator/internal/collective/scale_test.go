package collective

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestScaleBitIdentical: Scale, and ScaleTo into another slice, give, bit for bit, what multiplying one element at a time
// gives (the loop it replaced), on every length up to 9 (the tail after the groups of four),
// random values of every exponent, and zeros, infinities, NaN and subnormals.
func TestScaleBitIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.SmallestNonzeroFloat32, -1e-40, math.MaxFloat32}
	for _, s := range []float32{1, 0.5, 1 / float32(3), float32(1 / 7.0), 1e-30, 3e30} {
		for n := range 10 {
			x := make([]float32, n+len(special))
			for i := range x {
				x[i] = math.Float32frombits(rng.Uint32())
			}
			copy(x[n:], special)
			got := append([]float32(nil), x...)
			Scale(got, s)
			to := make([]float32, len(x)+1) // longer than src: only len(src) is written
			to[len(x)] = 42
			ScaleTo(to, x, s)
			for i := range x {
				want := x[i] * s
				for name, g := range map[string]float32{"Scale": got[i], "ScaleTo": to[i]} {
					if math.Float32bits(g) != math.Float32bits(want) && !(math.IsNaN(float64(want)) && math.IsNaN(float64(g))) {
						t.Errorf("%s by %g, length %d, element %d (%g): %g, want %g", name, s, len(x), i, x[i], g, want)
					}
				}
			}
			if to[len(x)] != 42 {
				t.Errorf("ScaleTo wrote past len(src)")
			}
		}
	}
}
