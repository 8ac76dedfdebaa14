package data

import (
	"slices"
	"testing"
)

func TestSliceAndSubset(t *testing.T) {
	s := FromSlice([]string{"a", "b", "c"})
	if s.Len() != 3 {
		t.Fatalf("Len = %d", s.Len())
	}
	for _, i := range []int{-1, 3} {
		if _, err := s.Get(i); err == nil {
			t.Errorf("Get(%d): no error", i)
		}
	}
	got, err := Collect[string](s)
	if err != nil || !slices.Equal(got, s) {
		t.Errorf("Collect = %v, %v", got, err)
	}
	sub := Subset[string]{Dataset: s, Indices: []int{2, 0}}
	if v, err := sub.Get(0); err != nil || v != "c" {
		t.Errorf("Subset.Get(0) = %q, %v", v, err)
	}
	if _, err := sub.Get(2); err == nil {
		t.Errorf("Subset.Get(2): no error")
	}
	// Stopping an iteration early is honoured.
	n := 0
	for range s.All() {
		n++
		break
	}
	if n != 1 {
		t.Errorf("break did not stop All")
	}
}

func TestSplit(t *testing.T) {
	ds := make(Slice[int], 10662)
	for i := range ds {
		ds[i] = i
	}
	train, test, err := Split[int](ds, 0.1, 7)
	if err != nil {
		t.Fatal(err)
	}
	if train.Len() != 9595 || test.Len() != 1067 {
		t.Fatalf("split sizes %d/%d, want 9595/1067", train.Len(), test.Len())
	}
	seen := make([]int, len(ds))
	for _, i := range slices.Concat(train.Indices, test.Indices) {
		seen[i]++
	}
	for i, k := range seen {
		if k != 1 {
			t.Fatalf("index %d in %d subsets", i, k)
		}
	}
	if !slices.IsSorted(train.Indices) || !slices.IsSorted(test.Indices) {
		t.Errorf("subset indices not sorted")
	}
	train2, test2, _ := Split[int](ds, 0.1, 7)
	if !slices.Equal(test.Indices, test2.Indices) || !slices.Equal(train.Indices, train2.Indices) {
		t.Errorf("same seed, different split")
	}
	_, test3, _ := Split[int](ds, 0.1, 8)
	if slices.Equal(test.Indices, test3.Indices) {
		t.Errorf("different seeds, same split")
	}
	// A test part that is not just the start or the end of the data.
	if test.Indices[0] == 0 && test.Indices[len(test.Indices)-1] == 1066 {
		t.Errorf("test split is the first examples: not shuffled")
	}

	cases := []struct {
		n        int
		frac     float64
		wantTest int
	}{
		{10, 0.3, 3}, {10, 0, 0}, {10, 1, 10}, {3, 0.5, 2}, {1, 0.1, 1},
	}
	for _, c := range cases {
		_, te, err := Split[int](make(Slice[int], c.n), c.frac, 1)
		if err != nil || te.Len() != c.wantTest {
			t.Errorf("N=%d frac=%v: test size %d (%v), want %d", c.n, c.frac, te.Len(), err, c.wantTest)
		}
	}
	for _, bad := range []struct {
		ds   Dataset[int]
		frac float64
	}{{Slice[int]{}, 0.1}, {nil, 0.1}, {ds, -0.1}, {ds, 1.5}} {
		if _, _, err := Split(bad.ds, bad.frac, 1); err == nil {
			t.Errorf("Split(%v, %v): no error", bad.ds, bad.frac)
		}
	}
}

func TestPadToAndBucketLength(t *testing.T) {
	for _, c := range []struct {
		ids    []int32
		length int
		want   []int32
	}{
		{[]int32{1, 2, 3}, 5, []int32{1, 2, 3, 0, 0}},
		{[]int32{1, 2, 3}, 2, []int32{1, 2}},
		{[]int32{1, 2, 3}, 3, []int32{1, 2, 3}},
		{nil, 2, []int32{0, 0}},
		{[]int32{1}, -1, []int32{}},
	} {
		got := PadTo(c.ids, c.length, 0)
		if !slices.Equal(got, c.want) {
			t.Errorf("PadTo(%v, %d) = %v, want %v", c.ids, c.length, got, c.want)
		}
	}
	ids := []int32{7, 8}
	out := PadTo(ids, 1, 0)
	out[0] = 99
	if ids[0] != 7 {
		t.Errorf("PadTo shares memory with its input")
	}
	buckets := []int{64, 16, 32, 128}
	for _, c := range []struct{ n, want int }{{1, 16}, {16, 16}, {17, 32}, {100, 128}, {500, 128}, {0, 16}} {
		if got := BucketLength(c.n, buckets); got != c.want {
			t.Errorf("BucketLength(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	if got := BucketLength(37, nil); got != 37 {
		t.Errorf("BucketLength without buckets = %d", got)
	}
	if got := BucketLength(5, []int{0, -3}); got != 5 {
		t.Errorf("BucketLength with no valid bucket = %d", got)
	}
}
