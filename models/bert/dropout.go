package bert

import (
	"math"
	"slices"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// dropoutBits is how many random bits decide one element's dropout: a 64-bit draw of the
// Store's generator decides dropoutLanes elements.
const (
	dropoutBits  = 16
	dropoutLanes = 64 / dropoutBits
)

// dropoutThreshold is rate rounded to a multiple of 2^-16, in those units: an element is
// dropped when its 16 random bits, read as an integer, are below it.
func dropoutThreshold(rate float64) uint64 {
	return uint64(math.Round(rate * (1 << dropoutBits)))
}

// dropout is torch.nn.Dropout in training: each element of x is zeroed with probability rate
// and the others are scaled by 1/(1-rate), so the expectation is x. It is a no-op when rate
// <= 0 or the Store does not mark x's graph as training (evaluation, inference); a rate that
// rounds to 1 drops every element, and a NaN rate panics (graph building turns the panic into
// an error).
//
// It draws 16 random bits per element from the Store's random state (the variable
// model.RNGStateVariableName, the one GoMLX's own dropout and the checkpoints use), four
// elements from each 64-bit word, where layers.Dropout draws a 32-bit word per element and
// turns it into a float: half the generator's work and no conversion. The probability used is
// rate rounded to a multiple of 2^-16 (0.1 becomes 6554/65536 = 0.100006) and the scale is the
// inverse of the kept fraction at that probability, so the expectation stays exactly x.
func dropout(s *model.Scope, x *Node, rate float64) *Node {
	g := x.Graph()
	if math.IsNaN(rate) {
		exceptions.Panicf("bert: dropout rate is NaN (Config.Validate refuses it; was the Config changed after?)")
	}
	if rate <= 0 || !s.IsTraining(g) {
		return x
	}
	t := dropoutThreshold(min(rate, 1))
	if t >= 1<<dropoutBits { // rate 1, or within 2^-17 of it: every element is dropped
		return ZerosLike(x)
	}
	if t == 0 {
		return x
	}
	keepFraction := float64(1<<dropoutBits-t) / (1 << dropoutBits)
	keep := dropoutKeepMask(s.Store(), g, x.Shape().Dimensions, t)
	return Where(keep, MulScalar(x, 1/keepFraction), ScalarZero(g, x.DType()))
}

// dropoutKeepMask draws the Bool mask [dims] of the elements dropout keeps: those whose 16
// random bits are at least threshold. The 64-bit words are laid along the last axis when its
// length is a multiple of dropoutLanes (element i of a row takes bits 16·(i mod 4) up of word
// i/4), else over the flattened shape, the tail of the last word unused.
func dropoutKeepMask(store *model.Store, g *Graph, dims []int, threshold uint64) *Node {
	n := 1
	for _, d := range dims {
		n *= d
	}
	last := 1
	if len(dims) > 0 {
		last = dims[len(dims)-1]
	}
	byRow := len(dims) > 0 && last%dropoutLanes == 0
	wordDims := []int{(n + dropoutLanes - 1) / dropoutLanes}
	if byRow {
		wordDims = append(slices.Clone(dims[:len(dims)-1]), last/dropoutLanes)
	}
	state := rngStateVariable(store)
	// RandomIntN with N = 2^64-1 returns the generator's 64 bits as they are (it divides
	// them by 1), but for the one value 2^64-1, which becomes 2^64-2. N is given as a
	// constant node: given as a Go integer, GoMLX v0.28.3 makes the clamp N-1 a scalar
	// through float64, which turns 2^64-2 into 2^63 and every word at or above it into
	// 2^63 (TestGoMLXRandomIntNClampBug).
	n64 := Const(g, uint64(math.MaxUint64))
	next, words := RandomIntN(state.NodeValue(g), n64, shapes.Make(dtypes.Uint64, wordDims...))
	state.SetNodeValue(next)
	low := Scalar(g, dtypes.Uint64, uint64(1<<dropoutBits-1))
	th := Scalar(g, dtypes.Uint64, threshold)
	lanes := make([]*Node, dropoutLanes)
	for k := range lanes {
		lane := words
		if k > 0 {
			lane = BitwiseShiftRightLogicalScalar(words, dropoutBits*k)
		}
		lanes[k] = GreaterOrEqual(BitwiseAnd(lane, low), th)
	}
	keep := Stack(lanes, -1)
	if byRow {
		return Reshape(keep, dims...)
	}
	keep = Slice(Reshape(keep, -1), AxisRange(0, n))
	return Reshape(keep, dims...)
}

// rngStateVariable is the Store's random state variable, created from the Store's seed the
// way GoMLX's own random functions create it when the Store has none yet.
func rngStateVariable(store *model.Store) *model.Variable {
	if v := storeRNGState(store); v != nil {
		return v
	}
	if err := store.ResetRNGState(); err != nil {
		exceptions.Panicf("bert: dropout needs the Store's random state: %v", err)
	}
	return storeRNGState(store)
}
