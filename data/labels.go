package data

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/core/tensors"
)

// Labels are a batch's targets as a task collates them, whatever the inputs are (texts,
// images): one class id per example (single-label classification), or K numbers per example
// (regression, K = 1; multi-label classification, one 0/1 flag per class). They are checked
// here, once for every input kind, so that a processor never sees them.

// ClassLabels makes the int32 [N] labels of N examples' class ids. A negative id is an error
// naming the example: its index, and quote(i) (a short form of its input, such as the text;
// nil quotes nothing).
func ClassLabels(classes []int, quote func(i int) string) (*tensors.Tensor, error) {
	out := make([]int32, len(classes))
	for i, c := range classes {
		if c < 0 || c > math.MaxInt32 {
			return nil, fmt.Errorf("example %d%s has negative label %d", i, quoted(quote, i), c)
		}
		out[i] = int32(c)
	}
	return tensors.FromFlatDataAndDimensions(out, len(classes)), nil
}

// ValueLabels makes the float32 [N, K] labels of N examples with K values each. An empty
// batch, an example with no values or another count than example 0's, or a value that is
// NaN or infinite, is an error naming the example (see ClassLabels for quote).
func ValueLabels(values [][]float32, quote func(i int) string) (*tensors.Tensor, error) {
	if len(values) == 0 {
		return nil, fmt.Errorf("an empty batch")
	}
	k := len(values[0])
	if k == 0 {
		return nil, fmt.Errorf("example 0%s has an empty Values: want at least one value", quoted(quote, 0))
	}
	flat := make([]float32, 0, len(values)*k)
	for i, v := range values {
		if len(v) != k {
			return nil, fmt.Errorf("example %d%s has %d values, example 0 has %d: every example of a batch needs as many",
				i, quoted(quote, i), len(v), k)
		}
		for j, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("example %d%s has value %d = %g: targets must be finite", i, quoted(quote, i), j, x)
			}
		}
		flat = append(flat, v...)
	}
	return tensors.FromFlatDataAndDimensions(flat, len(values), k), nil
}

// quoted is " (QUOTE)" of example i, or "" without quote.
func quoted(quote func(int) string, i int) string {
	if quote == nil {
		return ""
	}
	return fmt.Sprintf(" (%s)", quote(i))
}
