package data

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
)

// brokenSet is a dataset of 1000+i whose examples in bad fail to read: with a Skip error when
// skip is set, else with a plain one.
type brokenSet struct {
	n    int
	bad  map[int]bool
	skip bool
}

func (d brokenSet) Len() int { return d.n }

func (d brokenSet) Get(i int) (int, error) {
	if d.bad[i] {
		err := fmt.Errorf("img_%d.png: truncated png file", i)
		if d.skip {
			return 0, Skip(err)
		}
		return 0, err
	}
	return 1000 + i, nil
}

// skipRun runs one epoch of 10 examples in batches of 4 on 2 replicas (so global batches of
// 8) and returns the real indices seen, the slots left out, the loader and the OnSkip calls.
func skipRun(t *testing.T, ds Dataset[int], workers int, augment func(int, ExampleKey) (int, error)) (real, masked []int, l *Loader[int], calls []string, err error) {
	t.Helper()
	var mu sync.Mutex
	l, err = NewLoader[int](ds, LoaderConfig[int]{BatchSize: 4, Workers: workers, Collate: intCollate, Augment: augment,
		OnSkip: func(index int, err error) {
			mu.Lock()
			calls = append(calls, fmt.Sprintf("%d: %v", index, err))
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Distribute(2, []int{0, 1}); err != nil {
		t.Fatal(err)
	}
	for gb, e := range l.Epoch() {
		if e != nil {
			return real, masked, l, calls, e
		}
		for _, b := range gb.Shards {
			in := tensors.MustCopyFlatData[int32](b.Inputs[0])
			mask := b.Mask.Value().([]bool)
			for k := range b.Indices {
				if in[k] < 1000 {
					t.Fatalf("slot %d (index %d) holds %d: a broken example's zero value was collated", k, b.Indices[k], in[k])
				}
				switch {
				case b.Real[k] && mask[k]:
					real = append(real, b.Indices[k])
				case b.Positions[k] == -1 && !mask[k] && b.Indices[k] >= 0:
					masked = append(masked, b.Indices[k])
				default:
					t.Fatalf("slot %d: real %v mask %v position %d", k, b.Real[k], mask[k], b.Positions[k])
				}
			}
		}
	}
	slices.Sort(real)
	return real, masked, l, calls, nil
}

// TestSkipLeavesOutBrokenExamples: an example whose Get (or Augment) returns a Skip error is
// a masked slot, never trained on, counted by Skipped and reported to OnSkip; a plain error
// still ends the pass; a global batch with no readable example is an error.
func TestSkipLeavesOutBrokenExamples(t *testing.T) {
	for _, workers := range []int{0, 2} {
		ds := brokenSet{n: 10, bad: map[int]bool{0: true, 3: true, 9: true}, skip: true}
		real, masked, l, calls, err := skipRun(t, ds, workers, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := []int{1, 2, 4, 5, 6, 7, 8}; !slices.Equal(real, want) {
			t.Errorf("workers %d: real examples %v, want %v", workers, real, want)
		}
		if l.Skipped() != 3 || len(calls) != 3 {
			t.Errorf("workers %d: Skipped %d, OnSkip calls %q", workers, l.Skipped(), calls)
		}
		slices.Sort(calls)
		if !strings.Contains(calls[0], "0: ") || !strings.Contains(calls[0], "img_0.png: truncated png file") {
			t.Errorf("OnSkip got %q", calls)
		}
		_ = masked
	}
	// Augment's Skip errors too.
	real, _, l, _, err := skipRun(t, values(10), 2, func(ex int, key ExampleKey) (int, error) {
		if key.Index == 5 {
			return 0, Skip(errors.New("img_5.jpg: corrupt"))
		}
		return ex, nil
	})
	if err != nil || slices.Contains(real, 5) || len(real) != 9 || l.Skipped() != 1 {
		t.Errorf("Augment's skip: real %v, skipped %d, %v", real, l.Skipped(), err)
	}
	// Without Skip, the broken example ends the pass naming it.
	_, _, _, _, err = skipRun(t, brokenSet{n: 10, bad: map[int]bool{3: true}}, 2, nil)
	if err == nil || !strings.Contains(err.Error(), "img_3.png: truncated png file") {
		t.Errorf("plain error: %v", err)
	}
	// Every example of a global batch broken: no stand-in for the slots.
	all := map[int]bool{}
	for i := range 8 {
		all[i] = true
	}
	_, _, _, _, err = skipRun(t, brokenSet{n: 10, bad: all, skip: true}, 0, nil)
	if err == nil || !strings.Contains(err.Error(), "all 8 examples of the global batch were left out") {
		t.Errorf("all broken: %v", err)
	}
	if !errors.Is(Skip(errors.New("x")), ErrSkipped) || Skip(nil) != nil {
		t.Error("Skip's error is not ErrSkipped")
	}
}
