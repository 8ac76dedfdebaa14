package data

import (
	"math"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
)

// TestClassLabels: class ids become int32 [N]; a negative one is refused naming the example.
func TestClassLabels(t *testing.T) {
	l, err := ClassLabels([]int{2, 0, 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := tensors.MustCopyFlatData[int32](l); l.Shape().Dimensions[0] != 3 || got[0] != 2 || got[2] != 1 {
		t.Errorf("labels %v of shape %s", got, l.Shape())
	}
	_, err = ClassLabels([]int{0, -1}, func(i int) string { return "cat.png" })
	if err == nil || !strings.Contains(err.Error(), "example 1 (cat.png) has negative label -1") {
		t.Errorf("negative label: %v", err)
	}
}

// TestValueLabels: K values each become float32 [N, K]; a ragged, empty or non-finite one is
// refused naming the example.
func TestValueLabels(t *testing.T) {
	l, err := ValueLabels([][]float32{{1, 0}, {0, 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := l.Shape().Dimensions; d[0] != 2 || d[1] != 2 {
		t.Errorf("shape %s", l.Shape())
	}
	q := func(i int) string { return []string{`"a"`, `"b"`}[i] }
	for _, c := range []struct {
		values [][]float32
		want   string
	}{
		{nil, "empty batch"},
		{[][]float32{{}, {}}, `example 0 ("a") has an empty Values`},
		{[][]float32{{1}, {1, 2}}, `example 1 ("b") has 2 values, example 0 has 1`},
		{[][]float32{{1}, {float32(math.NaN())}}, `example 1 ("b") has value 0 = NaN: targets must be finite`},
		{[][]float32{{float32(math.Inf(1))}}, "targets must be finite"},
	} {
		if _, err := ValueLabels(c.values, q); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.values, err, c.want)
		}
	}
}
