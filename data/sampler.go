package data

import (
	"fmt"
	"math/rand/v2"
)

// DistributedSampler splits one epoch of a dataset of Len examples over NumReplicas replicas
// with the arithmetic of PyTorch's torch.utils.data.DistributedSampler:
//
//	numSamples = ceil(N / R)           (DropLast: floor(N / R))
//	totalSize  = numSamples * R
//	order      = perm(N) or 0..N-1     (Shuffle: permutation seeded with Seed + epoch)
//	padded[i]  = order[i mod N]        for i < totalSize: wraps as often as needed, or truncates
//	replica r  = padded[r : totalSize : R]
//
// Positions i >= N of padded are padding: duplicates that give every replica the same number
// of examples. They are marked (Sample.Real is false) so that a metric can skip them.
//
// The shuffle uses Go's math/rand/v2: rand.New(rand.NewPCG(uint64(Seed+epoch), 0)).Perm(N).
// It is reproducible across runs, machines and replica counts, but it is not the permutation
// torch.randperm draws for the same seed: the sizes, padding and assignment match PyTorch, the
// order of a shuffled epoch does not.
//
// Worked example, N = 10 examples, R = 3 replicas, no shuffle:
//
//	DropLast = false: numSamples = ceil(10/3) = 4, totalSize = 12
//	  padded    = 0 1 2 3 4 5 6 7 8 9 | 0 1      (positions 10, 11 wrap to the start)
//	  replica 0 = 0 3 6 9
//	  replica 1 = 1 4 7 0*                     (* padding, Real = false)
//	  replica 2 = 2 5 8 1*
//	DropLast = true:  numSamples = floor(10/3) = 3, totalSize = 9
//	  padded    = 0 1 2 3 4 5 6 7 8              (example 9 is left out this epoch)
//	  replica 0 = 0 3 6
//	  replica 1 = 1 4 7
//	  replica 2 = 2 5 8
//
// With more replicas than examples the wrap repeats: N = 2, R = 5 gives padded = 0 1 0* 1* 0*,
// one example per replica, three of them padding; with DropLast every replica gets nothing.
//
// The zero value of NumReplicas counts as 1. The sampler holds no state: the epoch is an
// argument, so forgetting to advance it is impossible (Loader advances it by itself).
type DistributedSampler struct {
	Len         int   // N, the number of examples in the dataset
	NumReplicas int   // R, the number of replicas in total (devices x processes); 0 means 1
	Rank        int   // this replica, in [0, R)
	Shuffle     bool  // draw a new permutation every epoch
	Seed        int64 // the permutation of epoch e is seeded with Seed + e
	DropLast    bool  // drop the tail instead of padding it
}

// Sample is one example slot of a replica's share of an epoch.
type Sample struct {
	Index    int  // index in the dataset
	Position int  // position in the padded epoch order (r, r+R, r+2R, ... for replica r)
	Real     bool // false for padding (Position >= N)
}

func (s DistributedSampler) replicas() int { return max(s.NumReplicas, 1) }

// NumSamples is the number of examples every replica gets per epoch, padding included.
func (s DistributedSampler) NumSamples() int {
	n, r := max(s.Len, 0), s.replicas()
	if s.DropLast {
		return n / r // PyTorch writes ceil((N - R) / R) when R does not divide N: the same number
	}
	return (n + r - 1) / r
}

// TotalSize is the number of example slots of an epoch over all replicas: NumSamples * R.
func (s DistributedSampler) TotalSize() int { return s.NumSamples() * s.replicas() }

// Order returns the padded (or truncated) order of the given epoch, for all replicas:
// TotalSize dataset indices, of which replica r reads positions r, r+R, r+2R, ...
// Positions >= Len are padding.
func (s DistributedSampler) Order(epoch int) []int {
	n, perm := max(s.Len, 0), s.perm(epoch)
	padded := make([]int, s.TotalSize())
	for i := range padded {
		padded[i] = perm[i%n] // i < n: the permutation; i >= n: wrap-around padding
	}
	return padded
}

// perm is the epoch's order before padding: Len dataset indices.
func (s DistributedSampler) perm(epoch int) []int {
	n := max(s.Len, 0)
	if s.Shuffle {
		return rand.New(rand.NewPCG(uint64(s.Seed+int64(epoch)), 0)).Perm(n)
	}
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	return perm
}

// Samples returns replica Rank's share of the given epoch: NumSamples slots, in order.
// It returns an error if Len < 0, NumReplicas < 0 or Rank is not in [0, NumReplicas).
func (s DistributedSampler) Samples(epoch int) ([]Sample, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	order, r := s.Order(epoch), s.replicas()
	out := make([]Sample, 0, s.NumSamples())
	for p := s.Rank; p < len(order); p += r {
		out = append(out, Sample{Index: order[p], Position: p, Real: p < s.Len})
	}
	return out, nil
}

func (s DistributedSampler) validate() error {
	switch {
	case s.Len < 0:
		return fmt.Errorf("data: DistributedSampler: Len = %d, want >= 0", s.Len)
	case s.NumReplicas < 0:
		return fmt.Errorf("data: DistributedSampler: NumReplicas = %d, want >= 1", s.NumReplicas)
	case s.Rank < 0 || s.Rank >= s.replicas():
		return fmt.Errorf("data: DistributedSampler: Rank = %d, want a value in [0, %d) (NumReplicas)", s.Rank, s.replicas())
	}
	return nil
}
