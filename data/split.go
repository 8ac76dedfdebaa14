package data

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// splitStream is the second PCG seed of Split, so that Split's permutation differs from the
// sampler's for the same seed.
const splitStream = 0x73706c6974 // "split"

// Split divides ds at random into a train and a test subset, reproducibly for a given seed.
//
// The test subset has ceil(testFraction * N) examples (as scikit-learn's train_test_split
// counts), the train subset the rest; 0.1 gives the 90/10 split of the reference script
// (10,662 examples: 9,595 train, 1,067 test). The examples are drawn with a permutation from
// math/rand/v2's PCG seeded with (seed, "split"); each subset lists its indices in ascending
// order, so that evaluation results read in the order of the original data.
//
// It returns an error for an empty dataset or a fraction outside [0, 1].
func Split[T any](ds Dataset[T], testFraction float64, seed int64) (train, test Subset[T], err error) {
	if ds == nil {
		return train, test, fmt.Errorf("data: Split: nil dataset")
	}
	n := ds.Len()
	if n <= 0 {
		return train, test, fmt.Errorf("data: Split: empty dataset (Len() = %d)", n)
	}
	if math.IsNaN(testFraction) || testFraction < 0 || testFraction > 1 {
		return train, test, fmt.Errorf("data: Split: testFraction = %v, want a value in [0, 1]", testFraction)
	}
	// The small epsilon keeps 0.3*10 = 3.0000000000000004 from rounding up to 4.
	nTest := int(math.Ceil(testFraction*float64(n) - 1e-9))
	nTest = max(0, min(n, nTest))
	perm := rand.New(rand.NewPCG(uint64(seed), splitStream)).Perm(n)
	testIdx, trainIdx := perm[:nTest], perm[nTest:]
	slices.Sort(testIdx)
	slices.Sort(trainIdx)
	return Subset[T]{Dataset: ds, Indices: trainIdx}, Subset[T]{Dataset: ds, Indices: testIdx}, nil
}
