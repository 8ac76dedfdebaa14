package safetensors

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/dtypes/float16"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
)

// ConvertFloat returns a new host tensor with t's values converted to the floating-point dtype
// to, for files whose tensors are stored in another precision than the model's (a checkpoint in
// F16 or BF16 loaded into float32 variables, say). Both dtypes must be one of Float16 (F16),
// BFloat16 (BF16), Float32 (F32) and Float64 (F64); any other is an error. Widening is exact;
// narrowing rounds to the nearest value (from Float64 to a 16-bit type, through float32), and
// values out of range become infinities. If t already has dtype to, t itself is returned.
func ConvertFloat(t *tensors.Tensor, to dtypes.DType) (*tensors.Tensor, error) {
	from := t.Shape().DType
	if !convertible(from) || !convertible(to) {
		return nil, fmt.Errorf("safetensors: cannot convert %s to %s: only F16, BF16, F32 and F64 convert", from, to)
	}
	if from == to {
		return t, nil
	}
	out := tensors.FromShape(shapes.Make(to, t.Shape().Dimensions...))
	var werr error
	err := t.ConstFlatData(func(src any) {
		at := floatAt(src)
		if at == nil {
			werr = fmt.Errorf("unexpected flat data %T", src)
			return
		}
		werr = out.MutableFlatData(func(dst any) {
			switch d := dst.(type) {
			case []float32:
				for i := range d {
					d[i] = float32(at(i))
				}
			case []float64:
				for i := range d {
					d[i] = at(i)
				}
			case []float16.Float16:
				for i := range d {
					d[i] = float16.FromFloat64(at(i))
				}
			case []bfloat16.BFloat16:
				for i := range d {
					d[i] = bfloat16.FromFloat64(at(i))
				}
			}
		})
	})
	if err == nil {
		err = werr
	}
	if err != nil {
		out.FinalizeAll()
		return nil, fmt.Errorf("safetensors: converting %s to %s: %w", from, to, err)
	}
	return out, nil
}

// convertible reports whether ConvertFloat handles dtype.
func convertible(dtype dtypes.DType) bool {
	switch dtype {
	case dtypes.Float16, dtypes.BFloat16, dtypes.Float32, dtypes.Float64:
		return true
	}
	return false
}

// floatAt returns a function giving element i of a flat slice of one of the convertible dtypes
// as a float64 (exact for all of them), or nil for another type.
func floatAt(flat any) func(i int) float64 {
	switch s := flat.(type) {
	case []float32:
		return func(i int) float64 { return float64(s[i]) }
	case []float64:
		return func(i int) float64 { return s[i] }
	case []float16.Float16:
		return func(i int) float64 { return s[i].Float64() }
	case []bfloat16.BFloat16:
		return func(i int) float64 { return s[i].Float64() }
	}
	return nil
}
