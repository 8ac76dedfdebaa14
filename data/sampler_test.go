package data

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// torchStyle recomputes the epoch order the way torch/utils/data/distributed.py spells it
// (float ceil, list concatenation), as an independent check of DistributedSampler.
func torchStyle(n, r int, dropLast bool, perm []int) (numSamples int, padded []int) {
	if dropLast && n%r != 0 {
		numSamples = int(math.Ceil(float64(n-r) / float64(r)))
	} else {
		numSamples = int(math.Ceil(float64(n) / float64(r)))
	}
	total := numSamples * r
	idx := slices.Clone(perm)
	if !dropLast {
		padding := total - len(idx)
		if padding <= len(idx) {
			idx = append(idx, idx[:padding]...)
		} else {
			var rep []int
			for range int(math.Ceil(float64(padding) / float64(len(idx)))) {
				rep = append(rep, idx...)
			}
			idx = append(idx, rep[:padding]...)
		}
	} else {
		idx = idx[:total]
	}
	return numSamples, idx
}

func TestDistributedSamplerTable(t *testing.T) {
	cases := []struct {
		n, r              int
		wantPad, wantDrop int // NumSamples without and with DropLast
	}{
		{10, 3, 4, 3},
		{12, 4, 3, 3},
		{2, 4, 1, 0},
		{0, 2, 0, 0},
		{1, 1, 1, 1},
		{2, 7, 1, 0}, // padding 5 > N: wraps more than once
		{1, 4, 1, 0}, // padding 3 > N
	}
	for _, c := range cases {
		for _, shuffle := range []bool{false, true} {
			for _, dropLast := range []bool{false, true} {
				name := fmt.Sprintf("N=%d/R=%d/shuffle=%v/drop_last=%v", c.n, c.r, shuffle, dropLast)
				t.Run(name, func(t *testing.T) {
					s := DistributedSampler{Len: c.n, NumReplicas: c.r, Shuffle: shuffle, Seed: 42, DropLast: dropLast}
					want := c.wantPad
					if dropLast {
						want = c.wantDrop
					}
					if got := s.NumSamples(); got != want {
						t.Fatalf("NumSamples = %d, want %d", got, want)
					}
					if got := s.TotalSize(); got != want*c.r {
						t.Fatalf("TotalSize = %d, want %d", got, want*c.r)
					}
					const epoch = 3
					order := s.Order(epoch)
					// The epoch's permutation, as documented, and the order PyTorch builds from it.
					perm := make([]int, c.n)
					for i := range perm {
						perm[i] = i
					}
					if shuffle {
						perm = rand.New(rand.NewPCG(uint64(42+epoch), 0)).Perm(c.n)
					}
					tn, tOrder := torchStyle(c.n, c.r, dropLast, perm)
					if tn != want || !slices.Equal(tOrder, order) {
						t.Fatalf("torch-style arithmetic gives %d samples, order %v; sampler gives %d, %v", tn, tOrder, want, order)
					}
					seen := make([]int, c.n)  // real appearances of each index
					all := make(map[int]bool) // indices appearing at all
					pads := 0
					for rank := range c.r {
						s.Rank = rank
						samples, err := s.Samples(epoch)
						if err != nil {
							t.Fatal(err)
						}
						if len(samples) != want {
							t.Fatalf("rank %d: %d samples, want %d", rank, len(samples), want)
						}
						for k, smp := range samples {
							if smp.Position != rank+k*c.r {
								t.Fatalf("rank %d sample %d: position %d, want %d (interleaved)", rank, k, smp.Position, rank+k*c.r)
							}
							if smp.Index != order[smp.Position] {
								t.Fatalf("rank %d: index %d != order[%d] = %d", rank, smp.Index, smp.Position, order[smp.Position])
							}
							if smp.Real != (smp.Position < c.n) {
								t.Fatalf("rank %d position %d: Real = %v with N = %d", rank, smp.Position, smp.Real, c.n)
							}
							if smp.Real {
								seen[smp.Index]++
							} else {
								pads++
								// Wrap-around: padding repeats the order from its start.
								if smp.Index != order[smp.Position%c.n] {
									t.Fatalf("padding at %d is %d, want order[%d] = %d", smp.Position, smp.Index, smp.Position%c.n, order[smp.Position%c.n])
								}
							}
							all[smp.Index] = true
							if !shuffle && smp.Index != smp.Position%max(c.n, 1) {
								t.Fatalf("no shuffle: position %d holds %d", smp.Position, smp.Index)
							}
						}
					}
					if dropLast {
						if pads != 0 {
							t.Fatalf("drop_last produced %d padding slots", pads)
						}
						real := 0
						for i, k := range seen {
							if k > 1 {
								t.Fatalf("index %d appears %d times", i, k)
							}
							real += k
						}
						if real != want*c.r {
							t.Fatalf("%d real samples, want %d", real, want*c.r)
						}
						return
					}
					if pads != want*c.r-c.n {
						t.Fatalf("%d padding slots, want %d", pads, want*c.r-c.n)
					}
					for i, k := range seen {
						if k != 1 || !all[i] {
							t.Fatalf("index %d appears %d times as a real sample, want exactly once", i, k)
						}
					}
				})
			}
		}
	}
}

func TestDistributedSamplerWorkedExample(t *testing.T) {
	// The example of the godoc: 10 examples, 3 replicas, no shuffle.
	type slot = string
	show := func(s DistributedSampler) [][]slot {
		var out [][]slot
		for r := range s.NumReplicas {
			s.Rank = r
			samples, err := s.Samples(0)
			if err != nil {
				t.Fatal(err)
			}
			var row []slot
			for _, x := range samples {
				v := fmt.Sprint(x.Index)
				if !x.Real {
					v += "*"
				}
				row = append(row, v)
			}
			out = append(out, row)
		}
		return out
	}
	got := show(DistributedSampler{Len: 10, NumReplicas: 3})
	want := [][]slot{{"0", "3", "6", "9"}, {"1", "4", "7", "0*"}, {"2", "5", "8", "1*"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("padded: got %v, want %v", got, want)
	}
	got = show(DistributedSampler{Len: 10, NumReplicas: 3, DropLast: true})
	want = [][]slot{{"0", "3", "6"}, {"1", "4", "7"}, {"2", "5", "8"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("drop_last: got %v, want %v", got, want)
	}
	got = show(DistributedSampler{Len: 2, NumReplicas: 5})
	want = [][]slot{{"0"}, {"1"}, {"0*"}, {"1*"}, {"0*"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("N=2 R=5: got %v, want %v", got, want)
	}
}

func TestDistributedSamplerEpochs(t *testing.T) {
	s := DistributedSampler{Len: 100, NumReplicas: 4, Shuffle: true, Seed: 5}
	e0, e1 := s.Order(0), s.Order(1)
	if slices.Equal(e0, e1) {
		t.Errorf("shuffled epochs 0 and 1 have the same order")
	}
	if !slices.Equal(s.Order(3), s.Order(3)) {
		t.Errorf("the same epoch gives two orders")
	}
	// Only seed + epoch matters.
	other := DistributedSampler{Len: 100, NumReplicas: 4, Shuffle: true, Seed: 7}
	if !slices.Equal(s.Order(3), other.Order(1)) {
		t.Errorf("seed 5 epoch 3 and seed 7 epoch 1 differ; both are seeded with 8")
	}
	if slices.Equal(s.Order(0), other.Order(0)) {
		t.Errorf("seeds 5 and 7 give the same epoch-0 order")
	}
	// The order of the real examples does not depend on the replica count.
	two := DistributedSampler{Len: 100, NumReplicas: 3, Shuffle: true, Seed: 5}
	if !slices.Equal(two.Order(2)[:100], s.Order(2)[:100]) {
		t.Errorf("the permutation depends on the replica count")
	}
	noShuffle := DistributedSampler{Len: 100, NumReplicas: 4}
	if !slices.Equal(noShuffle.Order(0), noShuffle.Order(9)) {
		t.Errorf("without shuffle, epochs differ")
	}
}

func TestDistributedSamplerErrors(t *testing.T) {
	for _, s := range []DistributedSampler{
		{Len: -1, NumReplicas: 2},
		{Len: 10, NumReplicas: -2},
		{Len: 10, NumReplicas: 2, Rank: 2},
		{Len: 10, NumReplicas: 2, Rank: -1},
		{Len: 10, Rank: 1}, // NumReplicas 0 counts as 1
	} {
		if _, err := s.Samples(0); err == nil {
			t.Errorf("%+v: no error", s)
		} else {
			t.Logf("%+v: %v", s, err)
		}
	}
	// Zero value of NumReplicas: one replica.
	samples, err := DistributedSampler{Len: 3}.Samples(0)
	if err != nil || len(samples) != 3 {
		t.Errorf("zero NumReplicas: %v, %v", samples, err)
	}
}

func ExampleDistributedSampler() {
	for _, dropLast := range []bool{false, true} {
		s := DistributedSampler{Len: 10, NumReplicas: 3, DropLast: dropLast}
		fmt.Printf("drop_last=%v: %d per replica\n", dropLast, s.NumSamples())
		for rank := range 3 {
			s.Rank = rank
			samples, _ := s.Samples(0)
			fmt.Printf("  replica %d:", rank)
			for _, x := range samples {
				if x.Real {
					fmt.Printf(" %d", x.Index)
				} else {
					fmt.Printf(" %d*", x.Index)
				}
			}
			fmt.Println()
		}
	}
	// Output:
	// drop_last=false: 4 per replica
	//   replica 0: 0 3 6 9
	//   replica 1: 1 4 7 0*
	//   replica 2: 2 5 8 1*
	// drop_last=true: 3 per replica
	//   replica 0: 0 3 6
	//   replica 1: 1 4 7
	//   replica 2: 2 5 8
}
