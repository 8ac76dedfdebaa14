package text

import (
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
)

// TestCollator: the processor sees the texts only; the labels are collated and checked here
// (classes, values, and the batches refused with the example named and its text quoted).
func TestCollator(t *testing.T) {
	var seen []string
	process := func(texts []string) ([]*tensors.Tensor, error) {
		seen = texts
		return []*tensors.Tensor{tensors.FromFlatDataAndDimensions(make([]int32, len(texts)), len(texts), 1)}, nil
	}
	inputs, labels, err := Collator(process)([]Labeled{{Text: "a", Label: 1}, {Text: "b", Label: 0}})
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) != 1 || strings.Join(seen, ",") != "a,b" || tensors.MustCopyFlatData[int32](labels)[0] != 1 {
		t.Errorf("inputs %v, texts %q, labels %v", inputs, seen, labels)
	}
	_, values, err := Collator(process)([]Labeled{{Text: "a", Values: []float32{0.5}}, {Text: "b", Values: []float32{2}}})
	if err != nil || values.Shape().Dimensions[1] != 1 {
		t.Errorf("values %v, %v", values, err)
	}
	for _, c := range []struct {
		batch []Labeled
		want  string
	}{
		{nil, "empty batch"},
		{[]Labeled{{Text: "fine", Label: -2}}, `example 0 ("fine") has negative label -2`},
		{[]Labeled{{Text: "a"}, {Text: "b", Values: []float32{1}}}, `example 1 ("b") has Values but example 0 has a class`},
		{[]Labeled{{Text: "a", Values: []float32{1}}, {Text: "b"}}, `example 1 ("b") has a class but example 0 has Values`},
		{[]Labeled{{Text: strings.Repeat("x", 100), Label: -1}}, `"` + strings.Repeat("x", 60) + `..."`},
	} {
		if _, _, err := Collator(process)(c.batch); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.batch, err, c.want)
		}
	}
}
