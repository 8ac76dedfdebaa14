package accelerator

import (
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
)

// tokenPart is a Gathered of n rows of per-token logits [n, l, c]: row i, token t, class k holds
// 1000*first + 100*i + 10*t + k as float32, so every value says where it came from.
func tokenPart(first, n, l, c int) *Gathered {
	flat := make([]float32, n*l*c)
	for i := range n {
		for t := range l {
			for k := range c {
				flat[(i*l+t)*c+k] = float32(1000*first + 100*i + 10*t + k)
			}
		}
	}
	g := &Gathered{Outputs: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(flat, n, l, c)}}
	for i := range n {
		g.Real = append(g.Real, true)
		g.Indices = append(g.Indices, first*n+i)
		g.Positions = append(g.Positions, first*n+i)
	}
	return g
}

// TestGatherRaggedOutputs: per-token logits [4, 16, 3] and [4, 32, 3] (two batches padded to
// different bucket lengths) gather into [8, 32, 3], each row's values at their place, the
// tokens a row lacks set to the pad value, and each row's real shape in Lengths.
func TestGatherRaggedOutputs(t *testing.T) {
	t.Parallel()
	short, long := tokenPart(0, 4, 16, 3), tokenPart(1, 4, 32, 3)
	short.Pad, long.Pad = -1, -1
	got, err := GatherForMetrics(short, long)
	if err != nil {
		t.Fatal(err)
	}
	for r := range 8 {
		if want := []int{16 * (1 + r/4), 3}; len(got.Lengths) != 1 || !slices.Equal(got.Lengths[0][r], want) {
			t.Fatalf("Lengths %v: row %d should be %v", got.Lengths, r, want)
		}
	}
	if dims := got.Outputs[0].Shape().Dimensions; !slices.Equal(dims, []int{8, 32, 3}) {
		t.Fatalf("gathered shape %v, want [8 32 3]", dims)
	}
	vals, err := got.Floats(0)
	if err != nil {
		t.Fatal(err)
	}
	for r := range 8 {
		part, i, l := r/4, r%4, 16*(1+r/4)
		for tok := range 32 {
			for k := range 3 {
				want := float64(1000*part + 100*i + 10*tok + k)
				if tok >= l {
					want = -1
				}
				if v := vals[(r*32+tok)*3+k]; v != want {
					t.Fatalf("row %d, token %d, class %d = %g, want %g", r, tok, k, v, want)
				}
			}
		}
	}
}

// TestGatherMismatchNamesOutputAndShapes: outputs that differ in dtype or rank cannot be
// padded into one tensor; the error names the output and both shapes.
func TestGatherMismatchNamesOutputAndShapes(t *testing.T) {
	t.Parallel()
	int32s := &Gathered{Outputs: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(make([]int32, 4*16*3), 4, 16, 3)},
		Real: []bool{true, true, true, true}, Indices: []int{4, 5, 6, 7}, Positions: []int{4, 5, 6, 7}}
	rank2 := &Gathered{Outputs: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(make([]float32, 4*16), 4, 16)},
		Real: []bool{true, true, true, true}, Indices: []int{4, 5, 6, 7}, Positions: []int{4, 5, 6, 7}}
	for name, other := range map[string]*Gathered{"dtype": int32s, "rank": rank2} {
		t.Run(name, func(t *testing.T) {
			_, err := GatherForMetrics(tokenPart(0, 4, 16, 3), other)
			if err == nil {
				t.Fatal("gathered; want an error")
			}
			s0, s1 := tokenPart(0, 4, 16, 3).Outputs[0].Shape().String(), other.Outputs[0].Shape().String()
			for _, want := range []string{"output 0", s0, s1} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
			// The same between processes (what gatherProcesses does with every rank's rows).
			_, err = concatGathered([]*Gathered{tokenPart(0, 4, 16, 3), other}, "rank")
			if want := "accelerator: gathering output 0: rank 1 has shape " + s1 + ", rank 0 has " + s0; err == nil || err.Error() != want {
				t.Errorf("between processes: %v, want %q", err, want)
			}
		})
	}
}

// TestGatherPadValues: the pad value is written in the output's dtype, and one that the dtype
// cannot hold is an error naming it; when nothing needs padding the pad value is not used.
func TestGatherPadValues(t *testing.T) {
	t.Parallel()
	ints := func(l int, pad float64) *Gathered {
		return &Gathered{Outputs: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(make([]int32, 2*l), 2, l)},
			Pad: pad, Real: []bool{true, true}, Indices: []int{l, l + 1}, Positions: []int{l, l + 1}}
	}
	got, err := GatherForMetrics(ints(1, -100), ints(2, -100))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := got.Floats(0); !slices.Equal(v, []float64{0, -100, 0, -100, 0, 0, 0, 0}) {
		t.Errorf("int32 rows padded with -100: %v", v)
	}
	if _, err := GatherForMetrics(ints(1, 0.5), ints(2, 0.5)); err == nil || !strings.Contains(err.Error(), "pad value 0.5 (EvalStep.Pad) is not a value of dtype Int32") {
		t.Errorf("pad 0.5 on int32 rows: %v, want an error naming the value and the dtype", err)
	}
	if _, err := GatherForMetrics(ints(2, 0.5), ints(2, 0.5)); err != nil {
		t.Errorf("rows of one shape with pad 0.5: %v, want no error (nothing is padded)", err)
	}
	if _, err := GatherForMetrics(ints(1, 0), ints(2, -1)); err == nil || !strings.Contains(err.Error(), "part 1 pads with -1, part 0 with 0") {
		t.Errorf("parts with different pads: %v, want an error naming both", err)
	}
}
