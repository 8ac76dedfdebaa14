package data

import (
	"errors"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
)

// augmented runs 2 epochs of a shuffled loader over 23 examples whose Augment replaces each
// example by a draw of its key's generator, on the given replicas (all of them fed by this
// process) and workers, and returns the draw of each real example by epoch and index.
func augmented(t *testing.T, replicas, workers int, global bool) map[[2]int]int {
	t.Helper()
	cfg := LoaderConfig[int]{Shuffle: true, Seed: 7, Workers: workers, Collate: intCollate,
		Augment: func(ex int, key ExampleKey) (int, error) {
			if ex-1000 != key.Index {
				return 0, errors.New("the key's index is not the example's")
			}
			return key.Index*1000000 + key.Rand().IntN(1000000), nil
		}}
	if global {
		cfg.GlobalBatchSize = 6
	} else {
		cfg.BatchSize = 2
	}
	l, err := NewLoader[int](values(23), cfg)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]int, replicas)
	for i := range all {
		all[i] = i
	}
	if err := l.Distribute(replicas, all); err != nil {
		t.Fatal(err)
	}
	got := map[[2]int]int{}
	for epoch := range 2 {
		for gb, err := range l.Epoch() {
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range gb.Shards {
				v := tensors.MustCopyFlatData[int32](b.Inputs[0])
				for k, real := range b.Real {
					if !real {
						continue
					}
					if int(v[k])/1000000 != b.Indices[k] {
						t.Fatalf("slot %d holds the draw of example %d, its index is %d", k, v[k]/1000000, b.Indices[k])
					}
					got[[2]int{epoch, b.Indices[k]}] = int(v[k])
				}
			}
		}
	}
	return got
}

// TestAugmentIsKeyedByExample: every example gets the same random draw in an epoch whatever
// the replica count and the workers, with per-device batches and with a global batch, and
// another draw in the next epoch.
func TestAugmentIsKeyedByExample(t *testing.T) {
	for _, global := range []bool{false, true} {
		ref := augmented(t, 1, 0, global)
		if len(ref) != 46 {
			t.Fatalf("%d draws for 2 epochs of 23 examples", len(ref))
		}
		for _, c := range [][2]int{{3, 0}, {3, 2}, {2, 4}, {1, 3}} {
			got := augmented(t, c[0], c[1], global)
			for k, v := range ref {
				if got[k] != v {
					t.Fatalf("global batch %v, %d replicas, %d workers: epoch %d example %d drew %d, on 1 replica %d",
						global, c[0], c[1], k[0], k[1], got[k], v)
				}
			}
		}
		same := 0
		for i := range 23 {
			if ref[[2]int{0, i}] == ref[[2]int{1, i}] {
				same++
			}
		}
		if same > 1 {
			t.Errorf("%d of 23 examples drew the same in epochs 1 and 2", same)
		}
	}
}

// TestAugmentErrorNamesTheExample: an Augment error stops the epoch naming the example, and a
// panic in it becomes an error.
func TestAugmentErrorNamesTheExample(t *testing.T) {
	for name, fn := range map[string]func(int, ExampleKey) (int, error){
		"error": func(ex int, key ExampleKey) (int, error) {
			if key.Index == 5 {
				return 0, errors.New("bad pixels")
			}
			return ex, nil
		},
		"panic": func(ex int, key ExampleKey) (int, error) { panic("boom") },
	} {
		l, err := NewLoader[int](values(8), LoaderConfig[int]{BatchSize: 4, Collate: intCollate, Augment: fn})
		if err != nil {
			t.Fatal(err)
		}
		var last error
		for _, err := range l.Epoch() {
			if err != nil {
				last = err
				break
			}
		}
		want := map[string]string{"error": "augmenting example 5: bad pixels", "panic": "augment panicked: boom"}[name]
		if last == nil || !strings.Contains(last.Error(), want) {
			t.Errorf("%s: %v, want %q", name, last, want)
		}
	}
}
