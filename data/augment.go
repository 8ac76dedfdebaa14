package data

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// ExampleKey names one use of an example: the loader's seed, the epoch (from 0) and the
// example's index in the dataset. LoaderConfig.Augment gets it with every example, so that a
// random augmentation (a crop, a flip) drawn from Rand depends on nothing else: the same
// example gets the same crop in the same epoch on one process or eight, with two workers or
// sixteen, and in a run resumed from a checkpoint. (torchvision's transforms draw from the
// DataLoader worker's generator instead, so their choices change with num_workers and the
// world size.)
type ExampleKey struct {
	Seed  int64
	Epoch int
	Index int
}

// Rand is a generator seeded by the key alone (PCG, its two words a SplitMix64 hash of the
// seed, the epoch and the index): the same key gives the same draws everywhere.
func (k ExampleKey) Rand() *rand.Rand {
	a := splitmix(uint64(k.Seed) ^ splitmix(uint64(k.Epoch)+0x632be59bd9b4e019))
	b := splitmix(a ^ splitmix(uint64(k.Index)+0x9e3779b97f4a7c15))
	return rand.New(rand.NewPCG(a, b))
}

// splitmix is SplitMix64's finaliser: a bijection of 64-bit words whose outputs of nearby
// inputs look unrelated.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// augment runs the loader's Augment on the examples of a global batch (in the order of the
// batches' slots), each with its key; a padding slot gets its example's key too. The slots
// marked in out (left out already) are not augmented; an example whose Augment returns a Skip
// error is left out too (its slot masked, counted by skips) and every such slot gets an
// augmented stand-in.
func augment[T any](examples []T, batches []*Batch, out []bool, seed int64, epoch int, fn func(T, ExampleKey) (T, error), skips *skips) (err error) {
	if fn == nil {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("augment panicked: %v", p)
		}
	}()
	i, left := 0, false
	for _, b := range batches {
		for k, index := range b.Indices {
			if out != nil && out[i] {
				i, left = i+1, true
				continue
			}
			ex, err := fn(examples[i], ExampleKey{Seed: seed, Epoch: epoch, Index: index})
			switch {
			case err != nil && errors.Is(err, ErrSkipped):
				if b.Real[k] || b.Positions[k] >= 0 {
					skips.note(index, err)
				}
				if out == nil {
					out = make([]bool, len(examples))
				}
				out[i], left = true, true
				b.Real[k], b.Positions[k] = false, -1
			case err != nil:
				return fmt.Errorf("augmenting example %d: %w", index, err)
			default:
				examples[i] = ex
			}
			i++
		}
	}
	if left {
		return standIns(examples, out)
	}
	return nil
}
