package mpi

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDivide: the parallel division equals the plain loop, in place and into another slice.
func TestDivide(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 5, 1 << 18, 3<<18 + 7, 1 << 21} {
		src := make([]float32, n)
		for i := range src {
			src[i] = rng.Float32()*100 - 50
		}
		want := make([]float32, n)
		for i, v := range src {
			want[i] = v / 3
		}
		dst := make([]float32, n)
		divide(dst, src, 3)
		if !slices.Equal(dst, want) {
			t.Errorf("divide into another slice, %d elements: wrong", n)
		}
		divide(src, src, 3)
		if !slices.Equal(src, want) {
			t.Errorf("divide in place, %d elements: wrong", n)
		}
	}
}
