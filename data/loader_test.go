package data

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomlx/gomlx/core/tensors"
)

// intCollate makes one int32 input and int32 labels (the example values) of a batch.
func intCollate(ex []int) ([]*tensors.Tensor, *tensors.Tensor, error) {
	v := make([]int32, len(ex))
	for i, e := range ex {
		v[i] = int32(e)
	}
	return []*tensors.Tensor{tensors.FromValue(v)}, tensors.FromValue(slices.Clone(v)), nil
}

// values makes a dataset whose example i is 1000+i, so collated values reveal the index.
func values(n int) Slice[int] {
	s := make(Slice[int], n)
	for i := range s {
		s[i] = 1000 + i
	}
	return s
}

// record is a comparable summary of a global batch: per shard, the slots and the collated values.
func record(t *testing.T, st *GlobalBatch) string {
	t.Helper()
	var sb strings.Builder
	fmt.Fprintf(&sb, "e%d s%d:", st.Epoch, st.Index)
	for _, b := range st.Shards {
		in := b.Inputs[0].Value().([]int32)
		mask := b.Mask.Value().([]bool)
		for k := range b.Indices {
			if int(in[k]) != 1000+b.Indices[k] {
				t.Fatalf("slot %d: collated value %d for index %d", k, in[k], b.Indices[k])
			}
			if mask[k] != b.Real[k] {
				t.Fatalf("slot %d: Mask %v != Real %v", k, mask[k], b.Real[k])
			}
			fmt.Fprintf(&sb, " %d/%v/%d", b.Indices[k], b.Real[k], b.Positions[k])
		}
		sb.WriteString(" |")
	}
	return sb.String()
}

// source is what both loaders offer, with SetEpoch.
type source interface {
	Source
	SetEpoch(int)
}

func collectEpoch(t *testing.T, src Source) ([]*GlobalBatch, []string) {
	t.Helper()
	var batches []*GlobalBatch
	var recs []string
	for st, err := range src.Epoch() {
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, st)
		recs = append(recs, record(t, st))
	}
	return batches, recs
}

// checkEpochCoverage checks one epoch over all replicas: same shapes everywhere, real examples
// covering the dataset exactly once (or, with dropLast, no padding and no repeat).
func checkEpochCoverage(t *testing.T, batches []*GlobalBatch, n, r, bs int, dropLast bool) {
	t.Helper()
	seen := make([]int, n)
	positions := map[int]bool{}
	real := 0
	for _, st := range batches {
		if len(st.Shards) != r {
			t.Fatalf("global batch %d: %d shards, want %d", st.Index, len(st.Shards), r)
		}
		for _, b := range st.Shards {
			if b.Size() != bs || len(b.Real) != bs || len(b.Positions) != bs {
				t.Fatalf("global batch %d: batch of %d slots, want %d", st.Index, b.Size(), bs)
			}
			if dims := b.Inputs[0].Shape().Dimensions; !slices.Equal(dims, []int{bs}) {
				t.Fatalf("global batch %d: input shape %v", st.Index, dims)
			}
			for k := range bs {
				if b.Real[k] {
					seen[b.Indices[k]]++
					real++
					if positions[b.Positions[k]] || b.Positions[k] < 0 || b.Positions[k] >= n {
						t.Fatalf("bad or repeated position %d", b.Positions[k])
					}
					positions[b.Positions[k]] = true
				} else {
					if dropLast {
						t.Fatalf("padding slot with DropLast")
					}
					if b.Positions[k] != -1 {
						t.Fatalf("padding slot with position %d", b.Positions[k])
					}
				}
			}
		}
	}
	for i, k := range seen {
		if k > 1 || (!dropLast && k != 1) {
			t.Fatalf("index %d appears %d times among the real examples", i, k)
		}
	}
	if dropLast && real != len(batches)*r*bs {
		t.Fatalf("DropLast: %d real slots of %d", real, len(batches)*r*bs)
	}
}

func TestLoaderCoversDatasetOnce(t *testing.T) {
	for _, n := range []int{1, 2, 7, 10, 33} {
		for _, r := range []int{1, 2, 3, 4, 8} {
			for _, bs := range []int{1, 3, 4} {
				for _, shuffle := range []bool{false, true} {
					for _, dropLast := range []bool{false, true} {
						for _, stream := range []bool{false, true} {
							if stream && shuffle {
								continue
							}
							name := fmt.Sprintf("N=%d/R=%d/B=%d/shuffle=%v/drop=%v/stream=%v", n, r, bs, shuffle, dropLast, stream)
							cfg := LoaderConfig[int]{BatchSize: bs, Shuffle: shuffle, Seed: 3, DropLast: dropLast, Collate: intCollate}
							src, err := makeSource(stream, n, cfg)
							if err != nil {
								if dropLast && n < bs {
									continue // no full batch: refused, as documented
								}
								t.Fatalf("%s: %v", name, err)
							}
							ranks := make([]int, r)
							for i := range ranks {
								ranks[i] = i
							}
							if err := src.Distribute(r, ranks); err != nil {
								if dropLast {
									continue // no global batch left with DropLast: an error, as documented
								}
								t.Fatalf("%s: %v", name, err)
							}
							batches, _ := collectEpoch(t, src)
							if len(batches) != src.BatchesPerEpoch() {
								t.Fatalf("%s: %d global batches, BatchesPerEpoch = %d", name, len(batches), src.BatchesPerEpoch())
							}
							checkEpochCoverage(t, batches, n, r, bs, dropLast)

							// The same split seen by one process per replica.
							for rank := range r {
								var one Source
								if stream {
									one, _ = NewStreamLoader[int](values(n), cfg)
								} else {
									one, _ = NewLoader[int](values(n), cfg)
								}
								if err := one.Distribute(r, []int{rank}); err != nil {
									t.Fatal(err)
								}
								ss, _ := collectEpoch(t, one)
								for i, st := range ss {
									if fmt.Sprint(st.Shards[0].Indices, st.Shards[0].Real) !=
										fmt.Sprint(batches[i].Shards[rank].Indices, batches[i].Shards[rank].Real) {
										t.Fatalf("%s: rank %d alone differs at global batch %d", name, rank, i)
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

func TestLoaderMatchesSampler(t *testing.T) {
	// Replica r's real slots, batch after batch, are the sampler's share for r.
	const n, r, bs = 23, 3, 4
	l, err := NewLoader[int](values(n), LoaderConfig[int]{BatchSize: bs, Shuffle: true, Seed: 11, Collate: intCollate})
	if err != nil {
		t.Fatal(err)
	}
	l.SetEpoch(4)
	if err := l.Distribute(r, []int{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	batches, _ := collectEpoch(t, l)
	for rank := range r {
		samples, _ := DistributedSampler{Len: n, NumReplicas: r, Rank: rank, Shuffle: true, Seed: 11}.Samples(4)
		var got []Sample
		for _, st := range batches {
			b := st.Shards[rank]
			for k := range b.Indices {
				if len(got) < len(samples) {
					pos := b.Positions[k]
					if !b.Real[k] {
						pos = samples[len(got)].Position // padding slots hide their position
					}
					got = append(got, Sample{Index: b.Indices[k], Position: pos, Real: b.Real[k]})
				} else if b.Real[k] {
					t.Fatalf("rank %d: a real slot past the sampler's share", rank)
				}
			}
		}
		if !slices.Equal(got, samples) {
			t.Errorf("rank %d: loader %v, sampler %v", rank, got, samples)
		}
	}
}

func TestLoaderEpochsAdvance(t *testing.T) {
	l, err := NewLoader[int](values(20), LoaderConfig[int]{BatchSize: 4, Shuffle: true, Seed: 1, Collate: intCollate})
	if err != nil {
		t.Fatal(err)
	}
	s0, r0 := collectEpoch(t, l)
	if st := l.State(); st.Epoch != 1 || st.BatchesConsumed != 0 {
		t.Errorf("after a pass: %+v, want epoch 1, 0 batches consumed", st)
	}
	s1, r1 := collectEpoch(t, l)
	if s0[0].Epoch != 0 || s1[0].Epoch != 1 {
		t.Errorf("epochs %d, %d", s0[0].Epoch, s1[0].Epoch)
	}
	if slices.Equal(r0[0:], r1[0:]) {
		t.Errorf("shuffled epochs 0 and 1 are identical")
	}
	l.SetEpoch(0)
	_, again := collectEpoch(t, l)
	if !slices.Equal(again, r0) {
		t.Errorf("SetEpoch(0) does not replay epoch 0")
	}
}

func TestLoaderWorkersKeepOrder(t *testing.T) {
	var want []string
	for _, w := range []int{0, 1, 2, 5} {
		for _, stream := range []bool{false, true} {
			cfg := LoaderConfig[int]{BatchSize: 3, Seed: 9, Workers: w, Collate: intCollate}
			var src Source
			var err error
			if stream {
				src, err = NewStreamLoader[int](values(50), cfg)
			} else {
				cfg.Shuffle = false
				src, err = NewLoader[int](values(50), cfg)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := src.Distribute(2, []int{0, 1}); err != nil {
				t.Fatal(err)
			}
			_, recs := collectEpoch(t, src)
			if stream {
				continue // a different dealing; checked for order below
			}
			if want == nil {
				want = recs
			} else if !slices.Equal(recs, want) {
				t.Errorf("workers=%d: global batches differ from workers=0", w)
			}
		}
	}
	// Streams: the same with any number of workers.
	var sw []string
	for _, w := range []int{0, 3} {
		l, _ := NewStreamLoader[int](values(50), LoaderConfig[int]{BatchSize: 3, Workers: w, Collate: intCollate})
		_, recs := collectEpoch(t, l)
		if sw == nil {
			sw = recs
		} else if !slices.Equal(recs, sw) {
			t.Errorf("stream workers=%d: batches differ", w)
		}
	}
}

// TestLoaderResume consumes half an epoch, saves the position, restores it in a new loader,
// and checks that the remaining global batches (and the next epoch) equal an uninterrupted run.
func TestLoaderResume(t *testing.T) {
	for _, stream := range []bool{false, true} {
		for _, workers := range []int{0, 3} {
			t.Run(fmt.Sprintf("stream=%v/workers=%d", stream, workers), func(t *testing.T) {
				mk := func(seed int64) source {
					cfg := LoaderConfig[int]{BatchSize: 4, Shuffle: !stream, Seed: seed, Workers: workers, Collate: intCollate}
					return newSource(t, stream, 103, cfg)
				}
				ref := mk(77)
				if err := ref.Distribute(2, []int{0, 1}); err != nil {
					t.Fatal(err)
				}
				ref.SetEpoch(2)
				_, full := collectEpoch(t, ref)
				_, next := collectEpoch(t, ref)

				first := mk(77)
				first.Distribute(2, []int{0, 1})
				first.SetEpoch(2)
				half := len(full) / 2
				var got []string
				for st, err := range first.Epoch() {
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, record(t, st))
					if len(got) == half {
						break
					}
				}
				saved, err := json.Marshal(first.State())
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("saved position %s after %d of %d global batches", saved, half, len(full))

				var st LoaderState
				if err := json.Unmarshal(saved, &st); err != nil {
					t.Fatal(err)
				}
				resumed := mk(12345) // the saved seed wins over the config's
				if err := resumed.Restore(st); err != nil {
					t.Fatal(err)
				}
				if err := resumed.Distribute(2, []int{0, 1}); err != nil {
					t.Fatal(err)
				}
				_, rest := collectEpoch(t, resumed)
				if !slices.Equal(append(got, rest...), full) {
					t.Fatalf("half + resumed rest != uninterrupted epoch:\n got %q\nwant %q", append(got, rest...), full)
				}
				_, after := collectEpoch(t, resumed)
				if !slices.Equal(after, next) {
					t.Fatalf("the epoch after the resumed one differs")
				}
				// Breaking out and iterating again also continues where it stopped.
				again := mk(77)
				again.Distribute(2, []int{0, 1})
				again.SetEpoch(2)
				var pieces []string
				for len(pieces) < len(full) {
					for st, err := range again.Epoch() {
						if err != nil {
							t.Fatal(err)
						}
						pieces = append(pieces, record(t, st))
						break
					}
				}
				if !slices.Equal(pieces, full) {
					t.Fatalf("passes of one global batch each differ from one pass")
				}
			})
		}
	}
}

func TestLoaderRestoreChecks(t *testing.T) {
	mk := func() *Loader[int] {
		l, err := NewLoader[int](values(40), LoaderConfig[int]{BatchSize: 2, Shuffle: true, Collate: intCollate})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	// Saved with 4 replicas after 3 global batches: Restore before Distribute defers the check...
	l := mk()
	if err := l.Restore(LoaderState{Epoch: 1, BatchesConsumed: 3, Seed: 5, NumReplicas: 4}); err != nil {
		t.Fatal(err)
	}
	if err := l.Distribute(2, []int{0, 1}); err == nil || !strings.Contains(err.Error(), "reached with 4 replicas") {
		t.Errorf("Distribute(2) after a 4-replica position: %v", err)
	}
	// ...and iterating with the wrong count says so.
	for _, err := range l.Epoch() {
		if err == nil || !strings.Contains(err.Error(), "cannot continue mid-epoch with 1") {
			t.Errorf("Epoch with the wrong replica count: %v", err)
		}
		break
	}
	if err := l.Distribute(4, []int{0, 1, 2, 3}); err != nil {
		t.Errorf("Distribute(4): %v", err)
	}
	// Restore after Distribute checks at once; an epoch boundary fits any replica count.
	l = mk()
	l.Distribute(2, []int{0, 1})
	if err := l.Restore(LoaderState{Epoch: 1, BatchesConsumed: 3, NumReplicas: 4}); err == nil {
		t.Errorf("Restore of a 4-replica position on 2 replicas: no error")
	}
	if st := l.State(); st.Epoch != 0 || st.BatchesConsumed != 0 {
		t.Errorf("failed Restore changed the position: %+v", st)
	}
	if err := l.Restore(LoaderState{Epoch: 1, BatchesConsumed: 0, NumReplicas: 4}); err != nil {
		t.Errorf("epoch-boundary Restore: %v", err)
	}
	if err := l.Restore(LoaderState{Epoch: 1, BatchesConsumed: 11, NumReplicas: 2}); err == nil {
		t.Errorf("Restore past the end of the epoch (10 global batches): no error")
	}
	if err := l.Restore(LoaderState{Epoch: -1}); err == nil {
		t.Errorf("negative epoch: no error")
	}
	// A position at the very end of an epoch resumes at the next one.
	if err := l.Restore(LoaderState{Epoch: 1, BatchesConsumed: 10, NumReplicas: 2}); err != nil {
		t.Fatal(err)
	}
	batches, _ := collectEpoch(t, l)
	if batches[0].Epoch != 2 || batches[0].Index != 0 || len(batches) != 10 {
		t.Errorf("end-of-epoch position resumed at epoch %d global batch %d", batches[0].Epoch, batches[0].Index)
	}
	// Changing the position during a pass is reported, not ignored.
	l = mk()
	n := 0
	for _, err := range l.Epoch() {
		n++
		if n == 1 {
			l.SetEpoch(5)
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "changed") {
			t.Errorf("SetEpoch during a pass: %v", err)
		}
		break
	}
}

func TestLoaderBadInput(t *testing.T) {
	good := LoaderConfig[int]{BatchSize: 2, Collate: intCollate}
	cases := []struct {
		name string
		ds   Dataset[int]
		cfg  LoaderConfig[int]
		want string
	}{
		{"nil dataset", nil, good, "nil dataset"},
		{"empty dataset", Slice[int]{}, good, "empty dataset"},
		{"batch size 0", values(3), LoaderConfig[int]{BatchSize: 0, Collate: intCollate}, "BatchSize = 0"},
		{"batch size -1", values(3), LoaderConfig[int]{BatchSize: -1, Collate: intCollate}, "BatchSize = -1"},
		{"no collate", values(3), LoaderConfig[int]{BatchSize: 2}, "Collate is nil"},
		{"negative workers", values(3), LoaderConfig[int]{BatchSize: 2, Workers: -1, Collate: intCollate}, "Workers = -1"},
		{"drop last, no full batch", values(3), LoaderConfig[int]{BatchSize: 4, DropLast: true, Collate: intCollate}, "no full batch"},
	}
	for _, c := range cases {
		if _, err := NewLoader(c.ds, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: NewLoader error %v, want %q", c.name, err, c.want)
		}
		var s Stream[int]
		if c.ds != nil {
			s = c.ds.(Slice[int])
		}
		if _, err := NewStreamLoader(s, c.cfg); err == nil {
			t.Errorf("%s: NewStreamLoader: no error", c.name)
		}
	}
	if _, err := NewStreamLoader[int](values(3), LoaderConfig[int]{BatchSize: 1, Shuffle: true, Collate: intCollate}); err == nil {
		t.Errorf("shuffled stream: no error")
	}

	l, _ := NewLoader[int](values(5), good)
	for _, d := range []struct {
		r     int
		ranks []int
	}{{0, []int{0}}, {2, nil}, {2, []int{2}}, {2, []int{-1}}, {2, []int{1, 1}}} {
		if err := l.Distribute(d.r, d.ranks); err == nil {
			t.Errorf("Distribute(%d, %v): no error", d.r, d.ranks)
		}
	}
	// More replicas than examples: documented wrap-around padding, each real example once.
	if err := l.Distribute(8, []int{0, 1, 2, 3, 4, 5, 6, 7}); err != nil {
		t.Fatal(err)
	}
	batches, _ := collectEpoch(t, l)
	if len(batches) != 1 {
		t.Fatalf("%d batches, want 1", len(batches))
	}
	checkEpochCoverage(t, batches, 5, 8, 2, false)
	if got := batches[0].Shards[7].NumReal(); got != 0 {
		t.Errorf("replica 7 has %d real examples, want 0 (only padding)", got)
	}
	// With DropLast, 8 replicas leave no global batch: an error.
	ld, _ := NewLoader[int](values(5), LoaderConfig[int]{BatchSize: 1, DropLast: true, Collate: intCollate})
	if err := ld.Distribute(8, []int{0}); err == nil || !strings.Contains(err.Error(), "no global batch left") {
		t.Errorf("DropLast with 8 replicas and 5 examples: %v", err)
	}
}

type failingDataset struct{ Slice[int] }

func (f failingDataset) Get(i int) (int, error) {
	if i == 7 {
		return 0, errors.New("disk on fire")
	}
	return f.Slice.Get(i)
}

func TestLoaderReportsFailures(t *testing.T) {
	for _, w := range []int{0, 2} {
		cases := []struct {
			name    string
			ds      Dataset[int]
			collate CollateFunc[int]
			want    string
		}{
			{"get", failingDataset{values(10)}, intCollate, "example 7: disk on fire"},
			{"collate error", values(10), func([]int) ([]*tensors.Tensor, *tensors.Tensor, error) {
				return nil, nil, errors.New("bad token")
			}, "collate: bad token"},
			{"collate panic", values(10), func([]int) ([]*tensors.Tensor, *tensors.Tensor, error) {
				panic("boom")
			}, "collate panicked: boom"},
			{"wrong batch axis", values(10), func(ex []int) ([]*tensors.Tensor, *tensors.Tensor, error) {
				return []*tensors.Tensor{tensors.FromValue([]int32{1})}, nil, nil
			}, "input 0: shape (Int32)[1], want the 2 examples given to Collate on axis 0"},
			{"nil input", values(10), func(ex []int) ([]*tensors.Tensor, *tensors.Tensor, error) {
				return []*tensors.Tensor{nil}, nil, nil
			}, "input 0: nil tensor"},
		}
		for _, c := range cases {
			l, err := NewLoader(c.ds, LoaderConfig[int]{BatchSize: 2, Workers: w, Collate: c.collate})
			if err != nil {
				t.Fatal(err)
			}
			var got error
			n := 0
			for _, err := range l.Epoch() {
				if err != nil {
					got = err
					break
				}
				n++
			}
			if got == nil || !strings.Contains(got.Error(), c.want) || !strings.Contains(got.Error(), "epoch 1, global batch") {
				t.Errorf("workers=%d %s: error %v, want %q", w, c.name, got, c.want)
			}
			if st := l.State(); st.BatchesConsumed != n {
				t.Errorf("workers=%d %s: %d global batches consumed, %d handed out", w, c.name, st.BatchesConsumed, n)
			}
		}
	}
}

func TestLoaderStopsWorkers(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, stream := range []bool{false, true} {
		cfg := LoaderConfig[int]{BatchSize: 2, Workers: 4, Collate: intCollate}
		var src Source
		if stream {
			src, _ = NewStreamLoader[int](values(100), cfg)
		} else {
			src, _ = NewLoader[int](values(100), cfg)
		}
		for range 3 {
			n := 0
			for _, err := range src.Epoch() {
				if err != nil {
					t.Fatal(err)
				}
				if n++; n == 5 {
					break
				}
			}
		}
		if st := src.State(); st.BatchesConsumed != 15 {
			t.Errorf("stream=%v: %d global batches consumed after 3 x 5, want 15", stream, st.BatchesConsumed)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines left running after early stops (%d before)", n, before)
	}
}

// TestCollateOncePerGlobalBatch: both loaders call Collate once per global batch with all
// local replicas' examples, and split every tensor (of any rank) along axis 0, so a collate
// function that sizes its output by its examples gives all devices the same shapes.
func TestCollateOncePerGlobalBatch(t *testing.T) {
	for _, replicas := range []int{1, 2, 4} {
		for _, stream := range []bool{false, true} {
			var calls atomic.Int32
			// [N, width] rows, width = the largest example value mod 5 + 1: it differs
			// between the examples of one global batch.
			collate := func(ex []int) ([]*tensors.Tensor, *tensors.Tensor, error) {
				calls.Add(1)
				if len(ex) != 3*replicas {
					return nil, nil, fmt.Errorf("collate got %d examples, want %d", len(ex), 3*replicas)
				}
				width := 0
				for _, e := range ex {
					width = max(width, e%5+1)
				}
				rows := make([][]int32, len(ex))
				for i, e := range ex {
					rows[i] = slices.Repeat([]int32{int32(e)}, width)
				}
				lin, _, _ := intCollate(ex)
				return []*tensors.Tensor{lin[0], tensors.FromValue(rows)}, nil, nil
			}
			cfg := LoaderConfig[int]{BatchSize: 3, Collate: collate}
			var src source
			var err error
			if stream {
				src, err = NewStreamLoader[int](values(23), cfg)
			} else {
				src, err = NewLoader[int](values(23), cfg)
			}
			if err != nil {
				t.Fatal(err)
			}
			ranks := make([]int, replicas)
			for i := range ranks {
				ranks[i] = i
			}
			if err := src.Distribute(replicas, ranks); err != nil {
				t.Fatal(err)
			}
			batches, _ := collectEpoch(t, src) // record checks input 0 slot by slot
			if int(calls.Load()) != len(batches) {
				t.Errorf("%d replicas, stream %v: Collate called %d times for %d global batches", replicas, stream, calls.Load(), len(batches))
			}
			for _, gb := range batches {
				want := gb.Shards[0].Inputs[1].Shape()
				for r, b := range gb.Shards {
					in := b.Inputs[1]
					if !in.Shape().Equal(want) || in.Shape().Dim(0) != 3 {
						t.Fatalf("%d replicas, stream %v, global batch %d, device %d: shape %s, device 0 has %s",
							replicas, stream, gb.Index, r, in.Shape(), want)
					}
					for k, row := range in.Value().([][]int32) {
						if int(row[0]) != 1000+b.Indices[k] {
							t.Fatalf("device %d slot %d: row %v for index %d", r, k, row, b.Indices[k])
						}
					}
				}
			}
		}
	}
}

// TestLoaderStateJSON: a position is saved as batches_consumed (the loader counts global
// batches, not optimizer steps), and one saved under the old name steps_consumed still loads.
func TestLoaderStateJSON(t *testing.T) {
	raw, err := json.Marshal(LoaderState{Epoch: 2, BatchesConsumed: 5, Seed: 9, NumReplicas: 4})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"epoch":2,"batches_consumed":5,"seed":9,"num_replicas":4}`; string(raw) != want {
		t.Errorf("JSON %s, want %s", raw, want)
	}
	for _, in := range []string{string(raw), `{"epoch":2,"steps_consumed":5,"seed":9,"num_replicas":4}`} {
		var st LoaderState
		if err := json.Unmarshal([]byte(in), &st); err != nil {
			t.Fatal(err)
		}
		if st != (LoaderState{Epoch: 2, BatchesConsumed: 5, Seed: 9, NumReplicas: 4}) {
			t.Errorf("%s decodes to %+v", in, st)
		}
	}
}

// TestFixedGlobalBatchSize: both loaders report LoaderConfig.GlobalBatchSize, whatever the
// replica count, and 0 with per-device batches.
func TestFixedGlobalBatchSize(t *testing.T) {
	for _, c := range []struct {
		cfg  LoaderConfig[int]
		want int
	}{
		{LoaderConfig[int]{GlobalBatchSize: 6, Collate: intCollate}, 6},
		{LoaderConfig[int]{BatchSize: 2, Collate: intCollate}, 0},
	} {
		l, err := NewLoader[int](values(12), c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewStreamLoader[int](values(12), c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, src := range []Source{l, s} {
			for _, replicas := range []int{1, 3} {
				if err := src.Distribute(replicas, []int{0}); err != nil {
					t.Fatal(err)
				}
				if got := src.FixedGlobalBatchSize(); got != c.want {
					t.Errorf("%T over %d replicas, config %+v: FixedGlobalBatchSize %d, want %d", src, replicas, c.cfg, got, c.want)
				}
			}
		}
	}
}
