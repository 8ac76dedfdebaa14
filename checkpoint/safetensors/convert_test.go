package safetensors

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/dtypes/float16"
	"github.com/gomlx/gomlx/core/tensors"
)

func TestConvertFloat(t *testing.T) {
	inf := float32(math.Inf(1))
	cases := []struct {
		name string
		in   *tensors.Tensor
		to   dtypes.DType
		want any // flat values
	}{
		{"F16 to F32", tensors.FromValue([][]float16.Float16{{float16.FromFloat32(0.25), float16.FromFloat32(-7)}}),
			dtypes.Float32, [][]float32{{0.25, -7}}},
		{"BF16 to F32", tensors.FromValue([]bfloat16.BFloat16{bfloat16.FromFloat32(1.5), bfloat16.FromFloat32(-3e38)}),
			dtypes.Float32, []float32{1.5, bfloat16.FromFloat32(-3e38).Float32()}},
		{"F64 to F32", tensors.FromValue([]float64{0.1, 1e300}), dtypes.Float32, []float32{0.1, inf}},
		{"F32 to F64", tensors.FromValue([]float32{0.1, -2}), dtypes.Float64, []float64{float64(float32(0.1)), -2}},
		{"F32 to F16", tensors.FromValue([]float32{1.0009765625, 1e6}), dtypes.Float16,
			[]float16.Float16{float16.FromFloat32(1.0009765625), float16.FromFloat32(inf)}},
		// 1 + 2^-8 is halfway between two bfloat16 values: ties go to the even one, 1.
		{"F32 to BF16", tensors.FromValue([]float32{1 + 1.0/256, 1 + 3.0/256}), dtypes.BFloat16,
			[]bfloat16.BFloat16{bfloat16.FromFloat32(1), bfloat16.FromFloat32(1 + 4.0/256)}},
		{"BF16 to F16", tensors.FromValue([]bfloat16.BFloat16{bfloat16.FromFloat32(-0.5)}), dtypes.Float16,
			[]float16.Float16{float16.FromFloat32(-0.5)}},
		{"scalar", tensors.FromScalar(float16.FromFloat32(2)), dtypes.Float64, 2.0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ConvertFloat(c.in, c.to)
			if err != nil {
				t.Fatal(err)
			}
			if got.Shape().DType != c.to || !slices.Equal(got.Shape().Dimensions, c.in.Shape().Dimensions) {
				t.Errorf("shape %s, want %s with dims %v", got.Shape(), c.to, c.in.Shape().Dimensions)
			}
			value, err := got.ValueSafe()
			if err != nil || !reflect.DeepEqual(value, c.want) {
				t.Errorf("values %v (%v), want %v", value, err, c.want)
			}
		})
	}
}

func TestConvertFloatSameAndErrors(t *testing.T) {
	x := tensors.FromValue([]float32{1, 2})
	if got, err := ConvertFloat(x, dtypes.Float32); err != nil || got != x {
		t.Errorf("same dtype: got %p, %v; want the input %p", got, err, x)
	}
	for _, c := range []struct {
		in *tensors.Tensor
		to dtypes.DType
	}{
		{tensors.FromValue([]int32{1}), dtypes.Float32},
		{x, dtypes.Int64},
		{x, dtypes.Complex64},
	} {
		if _, err := ConvertFloat(c.in, c.to); err == nil || !strings.Contains(err.Error(), "cannot convert") {
			t.Errorf("ConvertFloat(%s, %s): error %v, want cannot convert", c.in.Shape(), c.to, err)
		}
	}
}
