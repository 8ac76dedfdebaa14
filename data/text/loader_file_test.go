package text

import (
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/gomlx/core/tensors"
)

// intCollate makes one input tensor of the examples and uses them as labels too.
func intCollate(ex []int) ([]*tensors.Tensor, *tensors.Tensor, error) {
	v := make([]int32, len(ex))
	for i, x := range ex {
		v[i] = int32(x)
	}
	return []*tensors.Tensor{tensors.FromValue(v)}, tensors.FromValue(v), nil
}

// TestStreamLoaderFileChanges: a StreamLoader over a LineFile notices that the file shrank,
// grew or got a malformed line between epochs, and names file:line.
func TestStreamLoaderFileChanges(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "n.txt", "1\n2\n3\n4\n5\n")
	f, err := OpenLines(p, func(s string) (int, error) { v, err := parseInt(s); return 1000 + v - 1, err }, LineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := data.NewStreamLoader[int](f, data.LoaderConfig[int]{BatchSize: 2, Collate: intCollate, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	real := 0
	for gb, err := range l.Epoch() {
		if err != nil {
			t.Fatal(err)
		}
		real += gb.NumReal()
	}
	if real != 5 {
		t.Errorf("one epoch of the 5-line file: %d real examples, want 5", real)
	}
	writeFile(t, dir, "n.txt", "1\n2\n3\n")
	var got error
	for _, err := range l.Epoch() {
		if err != nil {
			got = err
		}
	}
	if got == nil || !strings.Contains(got.Error(), "stream shrank") {
		t.Errorf("shrunk file: %v", got)
	}
	writeFile(t, dir, "n.txt", "1\n2\n3\n4\n5\n6\n7\n")
	got = nil
	for _, err := range l.Epoch() {
		if err != nil {
			got = err
		}
	}
	if got == nil || !strings.Contains(got.Error(), "stream grew") {
		t.Errorf("grown file: %v", got)
	}
	writeFile(t, dir, "n.txt", "1\n2\nthree\n4\n5\n")
	got = nil
	for _, err := range l.Epoch() {
		if err != nil {
			got = err
		}
	}
	if got == nil || !strings.Contains(got.Error(), "n.txt:3:") {
		t.Errorf("malformed line during a pass: %v", got)
	}
	if _, err := data.NewStreamLoader[int](f, data.LoaderConfig[int]{BatchSize: 2, Collate: intCollate}); err == nil ||
		!strings.Contains(err.Error(), "n.txt:3:") {
		t.Errorf("malformed line while counting: %v", err)
	}
}
