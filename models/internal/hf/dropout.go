package hf

import (
	"math"

	"github.com/goaccel/goaccel/models/internal/remat"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// dropoutBits is how many random bits decide one element's dropout: a 32-bit hash of the
// element's index, compared with the rate in units of 2^-32.
const dropoutBits = 32

// dropoutThreshold is rate rounded to a multiple of 2^-32, in those units: an element is
// dropped when its 32 random bits, read as an integer, are below it.
func dropoutThreshold(rate float64) uint64 {
	return uint64(math.Round(rate * (1 << dropoutBits)))
}

// dropout is torch.nn.Dropout in training: each element of x is zeroed with probability rate
// and the others are scaled by 1/(1-rate), so the expectation is x. It is a no-op when rate
// <= 0 or the Store does not mark x's graph as training (evaluation, inference); a rate that
// rounds to 1 drops every element, and a NaN rate panics (graph building turns the panic into
// an error).
//
// Each call draws one 64-bit key from the Store's random state (the variable
// model.RNGStateVariableName, the one GoMLX's own dropout and the checkpoints use); an
// element's 32 random bits are a keyed hash of its index (dropoutHash). XLA computes the hash
// inside the loop that scales x, so no array of random bits is generated or stored, where
// layers.Dropout has the generator write a 32-bit word per element and turns it into a float
// (about 4x the time, BenchmarkDropout). The probability used is rate rounded to a multiple
// of 2^-32 and the scale is the inverse of the kept fraction at that probability, so the
// expectation stays exactly x.
func dropout(s *model.Scope, x *Node, rate float64) *Node {
	g := x.Graph()
	if math.IsNaN(rate) {
		exceptions.Panicf("dropout rate is NaN (Config.Validate refuses it; was the Config changed after?)")
	}
	if rate <= 0 || !s.IsTraining(g) {
		return x
	}
	t := dropoutThreshold(min(rate, 1))
	if t >= 1<<dropoutBits { // rate 1, or within 2^-33 of it: every element is dropped
		return ZerosLike(x)
	}
	if t == 0 {
		return x
	}
	keepFraction := float64(1<<dropoutBits-t) / (1 << dropoutBits)
	keep := dropoutKeepMask(s.Store(), g, x.Shape(), t)
	return Where(keep, MulScalar(x, 1/keepFraction), ScalarZero(g, x.DType()))
}

// dropoutKeepMask draws the Bool mask, of shape's dimensions, of the elements dropout keeps:
// those whose 32 random bits are at least threshold. It advances the Store's random state by
// one 64-bit draw, the key of this call's hash.
func dropoutKeepMask(store *model.Store, g *Graph, shape shapes.Shape, threshold uint64) *Node {
	state := rngStateVariable(store)
	// RandomIntN with N = 2^64-1 returns the generator's 64 bits as they are (it divides
	// them by 1), but for the one value 2^64-1, which becomes 2^64-2. N is given as a
	// constant node: given as a Go integer, GoMLX v0.28.3 makes the clamp N-1 a scalar
	// through float64, which turns 2^64-2 into 2^63 and every word at or above it into
	// 2^63 (TestGoMLXRandomIntNClampBug).
	next, key := RandomIntN(state.NodeValue(g), Const(g, uint64(math.MaxUint64)), shapes.Make(dtypes.Uint64))
	state.SetNodeValue(next)
	n := shape.Size()
	var lo, hi *Node
	if n <= 1<<32 {
		lo = Iota(g, shapes.Make(dtypes.Uint32, n), 0)
	} else {
		i := Iota(g, shapes.Make(dtypes.Uint64, n), 0)
		lo, hi = splitUint64(i)
	}
	bits := dropoutHash(lo, hi, key)
	return Reshape(GreaterOrEqual(bits, Scalar(g, dtypes.Uint32, uint32(threshold))), shape.Dimensions...)
}

// dropoutHash is the 32 random bits of the elements whose row-major indices are lo + 2^32·hi
// (hi nil: 0) under the 64-bit key: two rounds of an integer mixer, the key's low word folded
// in before the first and its high word (with hi) before the second. For a fixed key it maps
// the indices below 2^32 one to one onto 32-bit values; between keys it is not a shift or any
// other simple relation of the same values (a one-round hash of index + key would be: two
// calls' masks would be the same bits at an offset).
func dropoutHash(lo, hi, key *Node) *Node {
	k0, k1 := splitUint64(key)
	h := mix32(BitwiseXor(lo, k0))
	h = Add(h, k1)
	if hi != nil {
		h = Add(h, Mul(hi, Scalar(hi.Graph(), dtypes.Uint32, uint32(0x9e3779b9))))
	}
	return mix32(h)
}

// mix32 is a bijective mixer of 32-bit words (xor-shift, multiply, xor-shift, multiply,
// xor-shift); the shifts and multipliers are the "lowbias32" ones found by Chris Wellons's
// hash-prospector search, whose outputs change each bit with probability close to 1/2 for
// a change of any input bit.
func mix32(x *Node) *Node {
	g := x.Graph()
	x = BitwiseXor(x, BitwiseShiftRightLogicalScalar(x, 16))
	x = Mul(x, Scalar(g, dtypes.Uint32, uint32(0x7feb352d)))
	x = BitwiseXor(x, BitwiseShiftRightLogicalScalar(x, 15))
	x = Mul(x, Scalar(g, dtypes.Uint32, uint32(0x846ca68b)))
	return BitwiseXor(x, BitwiseShiftRightLogicalScalar(x, 16))
}

// splitUint64 is the low and high 32-bit words of a Uint64 node.
func splitUint64(w *Node) (lo, hi *Node) {
	lo = ConvertDType(BitwiseAnd(w, Scalar(w.Graph(), dtypes.Uint64, uint64(math.MaxUint32))), dtypes.Uint32)
	hi = ConvertDType(BitwiseShiftRightLogicalScalar(w, 32), dtypes.Uint32)
	return lo, hi
}

// rngStateVariable is the Store's random state variable, created from the Store's seed the
// way GoMLX's own random functions create it when the Store has none yet.
func rngStateVariable(store *model.Store) *model.Variable {
	if v := remat.RandomState(store); v != nil {
		return v
	}
	if err := store.ResetRNGState(); err != nil {
		exceptions.Panicf("dropout needs the Store's random state: %v", err)
	}
	return remat.RandomState(store)
}

// Dropout is torch.nn.Dropout in training, with the keyed-hash masks described at dropout,
// which every family uses so that they drop activations the same way from the same Store
// random state: it is x unchanged unless the Store marks x's graph as training and rate > 0.
func Dropout(s *model.Scope, x *Node, rate float64) *Node { return dropout(s, x, rate) }
