package data

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// ranksOf is 0..r-1: every replica local to one process.
func ranksOf(r int) []int {
	out := make([]int, r)
	for i := range out {
		out[i] = i
	}
	return out
}

// makeSource makes a Loader, or a StreamLoader if stream, over values(n).
func makeSource(stream bool, n int, cfg LoaderConfig[int]) (source, error) {
	if stream {
		return NewStreamLoader[int](values(n), cfg)
	}
	return NewLoader[int](values(n), cfg)
}

// newSource is makeSource that fails the test on an error.
func newSource(t *testing.T, stream bool, n int, cfg LoaderConfig[int]) source {
	t.Helper()
	src, err := makeSource(stream, n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// realPositions lists the epoch-order positions and dataset indices of the real examples of
// the global batches, global batch after global batch, each sorted by position.
func realPositions(batches []*GlobalBatch) (positions, indices []int) {
	for _, gb := range batches {
		type slot struct{ p, i int }
		var slots []slot
		for _, b := range gb.Shards {
			for k, r := range b.Real {
				if r {
					slots = append(slots, slot{b.Positions[k], b.Indices[k]})
				}
			}
		}
		slices.SortFunc(slots, func(a, b slot) int { return a.p - b.p })
		for _, s := range slots {
			positions, indices = append(positions, s.p), append(indices, s.i)
		}
	}
	return positions, indices
}

// TestResumeOnAnotherReplicaCount: a position saved mid-epoch on R replicas continues on R'
// with the rest of the epoch, each remaining example exactly once and in the epoch's order,
// for both loaders, per-device batches (BatchSize) and global batches (GlobalBatchSize).
func TestResumeOnAnotherReplicaCount(t *testing.T) {
	const n = 53
	for _, global := range []int{0, 8} {
		for _, stream := range []bool{false, true} {
			for _, r := range []int{1, 2, 3, 4} {
				for _, r2 := range []int{1, 2, 3, 5} {
					if r == r2 {
						continue
					}
					t.Run(fmt.Sprintf("global=%d/stream=%v/%d->%d", global, stream, r, r2), func(t *testing.T) {
						mk := func() source {
							cfg := LoaderConfig[int]{BatchSize: 3, Shuffle: !stream, Seed: 4, Collate: intCollate}
							if global > 0 {
								cfg.BatchSize, cfg.GlobalBatchSize = 0, global
							}
							return newSource(t, stream, n, cfg)
						}
						ref := mk()
						ref.Distribute(r, ranksOf(r))
						ref.SetEpoch(1)
						full, _ := collectEpoch(t, ref)
						_, wantIndices := realPositions(full)

						first := mk()
						first.Distribute(r, ranksOf(r))
						first.SetEpoch(1)
						var got []*GlobalBatch
						for gb, err := range first.Epoch() {
							if err != nil {
								t.Fatal(err)
							}
							if got = append(got, gb); len(got) == 2 {
								break
							}
						}
						raw, _ := json.Marshal(first.State())
						var st LoaderState
						if err := json.Unmarshal(raw, &st); err != nil {
							t.Fatal(err)
						}
						resumed := mk()
						if err := resumed.Restore(st); err != nil {
							t.Fatal(err)
						}
						if err := resumed.Distribute(r2, ranksOf(r2)); err != nil {
							t.Fatalf("Distribute(%d) after a position saved on %d replicas (%s): %v", r2, r, raw, err)
						}
						rest, _ := collectEpoch(t, resumed)
						if len(rest) == 0 || rest[0].Epoch != 1 || rest[0].Index != 2 {
							t.Fatalf("the resumed pass starts at %+v, want epoch 1 global batch 2", rest)
						}
						for _, gb := range rest {
							if len(gb.Shards) != r2 {
								t.Fatalf("%d shards, want %d", len(gb.Shards), r2)
							}
						}
						positions, indices := realPositions(append(got, rest...))
						if !slices.Equal(indices, wantIndices) {
							t.Fatalf("saved on %d, resumed on %d: real examples\n got %v\nwant %v", r, r2, indices, wantIndices)
						}
						for i, p := range positions {
							if p != i {
								t.Fatalf("positions %v, want 0..%d in order", positions, n-1)
							}
						}
						if st := resumed.State(); st.Epoch != 2 || st.BatchesConsumed != 0 {
							t.Errorf("after the resumed epoch: %+v, want the start of epoch 2", st)
						}
						if global > 0 {
							// The same global batches as the uninterrupted run, whatever the count.
							if len(got)+len(rest) != len(full) {
								t.Fatalf("%d + %d global batches, want %d", len(got), len(rest), len(full))
							}
							for i, gb := range append(got, rest...) {
								a, _ := realPositions([]*GlobalBatch{gb})
								b, _ := realPositions(full[i : i+1])
								if !slices.Equal(a, b) {
									t.Fatalf("global batch %d: positions %v, uninterrupted %v", i+1, a, b)
								}
							}
						}
					})
				}
			}
		}
	}
}

// TestGlobalBatchShares: the share of every replica in a global batch, the masked slots and
// the global batches themselves, on several replica counts (the same examples on all).
func TestGlobalBatchShares(t *testing.T) {
	cases := []struct {
		n, g, r  int
		dropLast bool
		want     [][]int // per global batch, the real examples of each replica (no shuffle)
	}{
		// The example: 16 on 3 replicas is 6 + 6 + 4, 2 masked slots.
		{16, 16, 3, false, [][]int{{6, 6, 4}}},
		{20, 8, 3, false, [][]int{{3, 3, 2}, {3, 3, 2}, {3, 1, 0}}},
		{20, 8, 3, true, [][]int{{3, 3, 2}, {3, 3, 2}}},
		{20, 8, 2, false, [][]int{{4, 4}, {4, 4}, {4, 0}}},
		{20, 8, 1, false, [][]int{{8}, {8}, {4}}},
		{20, 8, 8, false, [][]int{{1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 0, 0, 0, 0}}},
		{7, 4, 4, false, [][]int{{1, 1, 1, 1}, {1, 1, 1, 0}}},
	}
	for _, c := range cases {
		for _, stream := range []bool{false, true} {
			name := fmt.Sprintf("n=%d/G=%d/R=%d/droplast=%v/stream=%v", c.n, c.g, c.r, c.dropLast, stream)
			cfg := LoaderConfig[int]{GlobalBatchSize: c.g, DropLast: c.dropLast, Collate: intCollate}
			src := newSource(t, stream, c.n, cfg)
			if err := src.Distribute(c.r, ranksOf(c.r)); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			share := (c.g + c.r - 1) / c.r
			if src.BatchSize() != share || src.BatchesPerEpoch() != len(c.want) {
				t.Errorf("%s: BatchSize %d, BatchesPerEpoch %d; want %d, %d", name, src.BatchSize(), src.BatchesPerEpoch(), share, len(c.want))
			}
			batches, _ := collectEpoch(t, src)
			if len(batches) != len(c.want) {
				t.Fatalf("%s: %d global batches, want %d", name, len(batches), len(c.want))
			}
			for i, gb := range batches {
				var got []int
				next := i * c.g // contiguous shares: the positions of the global batch in order
				for _, b := range gb.Shards {
					if b.Size() != share || b.Inputs[0].Shape().Dim(0) != share {
						t.Fatalf("%s: a batch of %d slots, want %d", name, b.Size(), share)
					}
					got = append(got, b.NumReal())
					for k, real := range b.Real {
						if !real {
							continue
						}
						if b.Positions[k] != next || b.Indices[k] != next {
							t.Fatalf("%s: global batch %d: slot at position %d (index %d), want %d", name, i+1, b.Positions[k], b.Indices[k], next)
						}
						next++
					}
				}
				if !slices.Equal(got, c.want[i]) {
					t.Errorf("%s: global batch %d: real examples per replica %v, want %v", name, i+1, got, c.want[i])
				}
			}
		}
	}
}

// TestGlobalBatchSameOnAnyReplicaCount: with a shuffle, global batch t holds the same
// examples on 1 to 6 replicas, and the epoch covers the dataset once.
func TestGlobalBatchSameOnAnyReplicaCount(t *testing.T) {
	const n, g = 45, 6
	var ref [][]int
	for r := 1; r <= g; r++ {
		l, err := NewLoader[int](values(n), LoaderConfig[int]{GlobalBatchSize: g, Shuffle: true, Seed: 9, Collate: intCollate})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Distribute(r, ranksOf(r)); err != nil {
			t.Fatal(err)
		}
		batches, _ := collectEpoch(t, l)
		checkEpochCoverage(t, batches, n, r, (g+r-1)/r, false)
		var sets [][]int
		for _, gb := range batches {
			_, idx := realPositions([]*GlobalBatch{gb})
			sets = append(sets, idx)
		}
		if r == 1 {
			ref = sets
		} else if !slices.EqualFunc(sets, ref, slices.Equal[[]int]) {
			t.Errorf("R=%d: global batches %v, R=1: %v", r, sets, ref)
		}
	}
}

// TestGlobalBatchBadInput: a zero or negative global batch, both sizes, a global batch
// smaller than the replica count, and a resume whose global batch differs from the state's.
func TestGlobalBatchBadInput(t *testing.T) {
	for _, c := range []struct {
		cfg  LoaderConfig[int]
		want string
	}{
		{LoaderConfig[int]{GlobalBatchSize: -4, Collate: intCollate}, "GlobalBatchSize = -4, want > 0"},
		{LoaderConfig[int]{Collate: intCollate}, "BatchSize = 0, want > 0 (or set GlobalBatchSize instead)"},
		{LoaderConfig[int]{BatchSize: 2, GlobalBatchSize: 8, Collate: intCollate}, "BatchSize = 2 and GlobalBatchSize = 8 are both set"},
		{LoaderConfig[int]{BatchSize: -1, GlobalBatchSize: 8, Collate: intCollate}, "BatchSize = -1, want 0 with GlobalBatchSize"},
		{LoaderConfig[int]{GlobalBatchSize: 20, DropLast: true, Collate: intCollate}, "no full batch of 20"},
	} {
		if _, err := NewLoader[int](values(10), c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewLoader(%+v): %v, want %q", c.cfg, err, c.want)
		}
		if _, err := NewStreamLoader[int](values(10), c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewStreamLoader(%+v): %v, want %q", c.cfg, err, c.want)
		}
	}
	mk := func(g int) *Loader[int] {
		l, err := NewLoader[int](values(40), LoaderConfig[int]{GlobalBatchSize: g, Collate: intCollate})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := mk(3)
	if err := l.Distribute(4, ranksOf(4)); err == nil ||
		!strings.Contains(err.Error(), "GlobalBatchSize = 3 is smaller than the 4 replicas") {
		t.Errorf("Distribute(4) with GlobalBatchSize 3: %v", err)
	}
	// A mid-epoch position saved with GlobalBatchSize 16 does not continue with 12 (nor with
	// per-device batches); an epoch boundary does.
	saved := LoaderState{Epoch: 1, BatchesConsumed: 1, ExamplesConsumed: 16, NumReplicas: 4, GlobalBatchSize: 16}
	l = mk(12)
	if err := l.Restore(saved); err != nil { // checked by Distribute
		t.Fatal(err)
	}
	if err := l.Distribute(2, ranksOf(2)); err == nil ||
		!strings.Contains(err.Error(), "was saved with GlobalBatchSize 16 but this loader has GlobalBatchSize 12") {
		t.Errorf("Distribute after a GlobalBatchSize 16 position on GlobalBatchSize 12: %v", err)
	}
	pd, _ := NewLoader[int](values(40), LoaderConfig[int]{BatchSize: 4, Collate: intCollate})
	pd.Distribute(4, ranksOf(4))
	if err := pd.Restore(saved); err == nil || !strings.Contains(err.Error(), "GlobalBatchSize 16 but this loader has per-device batches") {
		t.Errorf("Restore of a GlobalBatchSize 16 position on per-device batches: %v", err)
	}
	if err := pd.Restore(LoaderState{Epoch: 2, NumReplicas: 4, GlobalBatchSize: 16}); err != nil {
		t.Errorf("Restore at an epoch boundary: %v", err)
	}
	// A state saved before ExamplesConsumed existed keeps its rule: the same replica count
	// only, and never GlobalBatchSize mid-epoch.
	old := LoaderState{Epoch: 1, BatchesConsumed: 2, NumReplicas: 4}
	g := mk(8)
	g.Distribute(2, ranksOf(2))
	if err := g.Restore(old); err == nil || !strings.Contains(err.Error(), "saved by an older goaccel") {
		t.Errorf("old state with GlobalBatchSize: %v", err)
	}
	// On its replica count it yields the global batches of the uninterrupted run.
	mkpd := func() *Loader[int] {
		l, err := NewLoader[int](values(40), LoaderConfig[int]{BatchSize: 3, Shuffle: true, Collate: intCollate})
		if err != nil {
			t.Fatal(err)
		}
		l.Distribute(4, ranksOf(4))
		return l
	}
	ref := mkpd()
	ref.SetEpoch(1)
	_, full := collectEpoch(t, ref)
	pd = mkpd()
	if err := pd.Restore(old); err != nil {
		t.Fatal(err)
	}
	if _, rest := collectEpoch(t, pd); !slices.Equal(rest, full[2:]) {
		t.Errorf("old state resumed on its replica count:\n got %q\nwant %q", rest, full[2:])
	}
}
