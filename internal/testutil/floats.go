package testutil

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"testing"
)

// DecodeF32 decodes the base64 little-endian float32 values of a fixture (as the scripts in
// scripts/ write numpy arrays) and checks that there are as many as shape holds; what names
// the array in a failure.
func DecodeF32(t testing.TB, what, b64 string, shape []int) []float32 {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	n := 1
	for _, d := range shape {
		n *= d
	}
	if len(raw) != 4*n {
		t.Fatalf("%s: %d bytes for shape %v, want %d", what, len(raw), shape, 4*n)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

// MaxAbsDiff is the largest |a[i]-b[i]|, +Inf when one is NaN; it fails the test when the
// lengths differ.
func MaxAbsDiff(t testing.TB, what string, a, b []float32) float64 {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: lengths differ: %d vs %d", what, len(a), len(b))
	}
	worst := 0.0
	for i := range a {
		d := math.Abs(float64(a[i]) - float64(b[i]))
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		worst = max(worst, d)
	}
	return worst
}
