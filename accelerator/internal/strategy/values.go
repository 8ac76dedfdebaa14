package strategy

import (
	"slices"

	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/dtypes/float16"
)

// AsFloat64s converts a tensor's flat data of any numeric dtype to float64s (false: not a
// numeric dtype it knows).
func AsFloat64s(flat any) ([]float64, bool) {
	conv := func(n int, at func(i int) float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = at(i)
		}
		return out
	}
	switch v := flat.(type) {
	case []float32:
		return conv(len(v), func(i int) float64 { return float64(v[i]) }), true
	case []float64:
		return slices.Clone(v), true
	case []int32:
		return conv(len(v), func(i int) float64 { return float64(v[i]) }), true
	case []int64:
		return conv(len(v), func(i int) float64 { return float64(v[i]) }), true
	case []int:
		return conv(len(v), func(i int) float64 { return float64(v[i]) }), true
	case []uint8:
		return conv(len(v), func(i int) float64 { return float64(v[i]) }), true
	case []bfloat16.BFloat16:
		return conv(len(v), func(i int) float64 { return float64(v[i].Float32()) }), true
	case []float16.Float16:
		return conv(len(v), func(i int) float64 { return float64(v[i].Float32()) }), true
	}
	return nil, false
}
