// Package nn holds layers with PyTorch's meanings (torch.nn's) where GoMLX's differ, for
// users' own models and goaccel's model families alike. GoMLX's layers are used as they are
// elsewhere; this package exists only where their conventions would change a run that a
// PyTorch user expects (GoMLX's norm.BatchNorm has Keras' momentum 0.99 and eps 1e-3).
//
// Images are NHWC in goaccel (channels last, the layout of GoMLX's convolutions); BatchNorm
// normalises the last axis by default.
package nn

import (
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/support/exceptions"
)

// The variables of a BatchNorm, in its scope, named as torch.nn.BatchNorm2d's state_dict
// names them (so that a Hugging Face folder's tensors map one to one).
const (
	BatchNormWeight      = "weight"              // γ, trainable, ones
	BatchNormBias        = "bias"                // β, trainable, zeros
	BatchNormRunningMean = "running_mean"        // not trainable, zeros
	BatchNormRunningVar  = "running_var"         // not trainable, ones
	BatchNormTracked     = "num_batches_tracked" // not trainable, int64 scalar
)

// BatchNormConfig configures BatchNorm; the zero value is torch.nn.BatchNorm2d(C)'s defaults
// on channels-last inputs.
type BatchNormConfig struct {
	// Momentum is the running statistics' update factor: running = (1-Momentum)·running +
	// Momentum·batch; 0 means PyTorch's 0.1. CumulativeAverage instead gives PyTorch's
	// momentum=None (the mean over all batches seen).
	Momentum          float64
	CumulativeAverage bool
	// Eps is added to the variance; 0 means PyTorch's 1e-5.
	Eps float64
	// Axis is the channel axis; 0 means the last (NHWC), a negative value counts from the
	// end. Axis 0 is the batch and cannot be the channel.
	Axis int
	// NoAffine leaves out γ and β (PyTorch's affine=False).
	NoAffine bool
	// NoRunningStats normalises with the batch's statistics in evaluation too and keeps none
	// (PyTorch's track_running_stats=False).
	NoRunningStats bool
}

// BatchNorm is torch.nn.BatchNorm{1,2,3}d over x's channel axis (cfg.Axis, the last by
// default), with γ, β, running_mean, running_var and num_batches_tracked in scope s.
//
// While the Store marks x's graph as training, each channel is normalised with the mean and
// the biased variance of the batch's real examples (mask, [B] bool, true for a real example:
// GraphBatch.Mask; nil counts every example), and the running statistics are updated once:
// the mean, and the unbiased variance (·n/(n-1)) as PyTorch keeps it; num_batches_tracked
// counts the updates. In evaluation, the running statistics normalise. Padding never counts,
// so a global batch gives the same statistics whatever its split into replicas; and the
// statistics are over the whole global batch of a process, across its devices (the reduction
// over the batch axis is XLA's, which sums over the devices the batch is sharded on: what
// SyncBatchNorm does between GPUs), so 1 and N devices are the same run.
//
// The statistics, γ, β and the running statistics are float32 whatever x's dtype (under bf16
// or fp16), or float64 when x is float64; the result has x's dtype. A batch without a real example leaves the running statistics as they
// were; one with a single value per channel (n = 1), where PyTorch raises an error, updates
// running_var with the biased variance, 0.
func BatchNorm(s *model.Scope, x, mask *Node, cfg BatchNormConfig) *Node {
	g := x.Graph()
	rank := x.Rank()
	axis := cfg.Axis
	switch {
	case axis == 0:
		axis = rank - 1
	case axis < 0:
		axis += rank
	}
	if rank < 2 || axis <= 0 || axis >= rank {
		exceptions.Panicf("nn.BatchNorm: channel axis %d of an input of shape %s: want an axis from 1 to %d (0 is the batch)",
			cfg.Axis, x.Shape(), rank-1)
	}
	momentum, eps := cfg.Momentum, cfg.Eps
	if momentum == 0 {
		momentum = 0.1
	}
	if eps == 0 {
		eps = 1e-5
	}
	if math.IsNaN(momentum) || math.IsNaN(eps) || momentum < 0 || momentum > 1 || eps < 0 {
		exceptions.Panicf("nn.BatchNorm: momentum %g, eps %g: want a momentum in (0, 1] and eps >= 0", momentum, eps)
	}
	channels := x.Shape().Dimensions[axis]
	sdt := dtypes.Float32 // the statistics' dtype
	if x.DType() == dtypes.Float64 {
		sdt = dtypes.Float64
	}
	vec := shapes.Make(sdt, channels)
	// The channel vector broadcast against x: 1 on every axis but the channel's.
	bshape := make([]int, rank)
	for i := range bshape {
		bshape[i] = 1
	}
	bshape[axis] = channels
	across := make([]int, 0, rank-1) // every axis but the channel's
	for i := range rank {
		if i != axis {
			across = append(across, i)
		}
	}

	xf := ConvertDType(x, sdt)
	training := s.IsTraining(g)
	var mean, variance *Node // [channels], sdt
	if training || cfg.NoRunningStats {
		weights := OnesLike(xf) // 1 for the elements of real examples, 0 for padding
		if mask != nil {
			m := ConvertDType(mask, sdt)
			mshape := make([]int, rank)
			for i := range mshape {
				mshape[i] = 1
			}
			mshape[0] = x.Shape().Dimensions[0]
			weights = BroadcastToDims(Reshape(m, mshape...), x.Shape().Dimensions...)
		}
		n := ReduceSum(weights, across...) // [channels], the same in each
		safeN := Max(n, OnesLike(n))       // no division by zero without a real example
		mean = Div(ReduceSum(Mul(xf, weights), across...), safeN)
		centred := Sub(xf, Reshape(mean, bshape...)) // padding's rows are multiplied by 0 below
		variance = Div(ReduceSum(Mul(Square(centred), weights), across...), safeN)
		if training && !cfg.NoRunningStats {
			updateRunningStats(s, g, vec, mean, variance, n, momentum, cfg.CumulativeAverage)
		}
	} else {
		mean = runningVar(s, BatchNormRunningMean, vec, initializer.Zero).NodeValue(g)
		variance = runningVar(s, BatchNormRunningVar, vec, initializer.One).NodeValue(g)
	}
	// 1/sqrt, not Rsqrt: GoMLX v0.28.3 defines no gradient for Rsqrt (TestRsqrtHasNoGradient).
	y := Mul(Sub(xf, Reshape(mean, bshape...)), Reshape(Reciprocal(Sqrt(AddScalar(variance, eps))), bshape...))
	if !cfg.NoAffine {
		gamma := s.WithInitializer(initializer.One).VariableWithShape(BatchNormWeight, vec).NodeValue(g)
		beta := s.WithInitializer(initializer.Zero).VariableWithShape(BatchNormBias, vec).NodeValue(g)
		y = Add(Mul(y, Reshape(ConvertDType(gamma, sdt), bshape...)), Reshape(ConvertDType(beta, sdt), bshape...))
	}
	return ConvertDType(y, x.DType())
}

// runningVar is one of the running statistics, not trainable.
func runningVar(s *model.Scope, name string, shape shapes.Shape, init initializer.VariableInitializer) *model.Variable {
	return s.WithInitializer(init).VariableWithShape(name, shape).SetTrainable(false)
}

// updateRunningStats sets the running statistics from a training batch's mean and biased
// variance over n values per channel (nothing changes when n is 0), PyTorch's way: the
// unbiased variance goes into running_var, and num_batches_tracked counts the update.
func updateRunningStats(s *model.Scope, g *Graph, vec shapes.Shape, mean, variance, n *Node, momentum float64, cumulative bool) {
	rmVar := runningVar(s, BatchNormRunningMean, vec, initializer.Zero)
	rvVar := runningVar(s, BatchNormRunningVar, vec, initializer.One)
	trackedVar := s.WithInitializer(initializer.Zero).VariableWithShape(BatchNormTracked, shapes.Make(dtypes.Int64)).
		SetTrainable(false)
	mean, variance, n = StopGradient(mean), StopGradient(variance), StopGradient(n)
	seen := GreaterThan(n, ZerosLike(n)) // a real example in the batch
	unbiased := Where(GreaterThan(n, OnesLike(n)), Div(Mul(variance, n), Sub(n, OnesLike(n))), variance)
	tracked := trackedVar.NodeValue(g)
	sdt := vec.DType
	counted := Where(GreaterThan(ReduceAllMax(n), Scalar(g, sdt, 0)), AddScalar(tracked, 1), tracked)
	factor := Scalar(g, sdt, momentum)
	if cumulative { // the mean over every update: 1/num_batches_tracked
		factor = Reciprocal(ConvertDType(Max(counted, OnesLike(counted)), sdt))
	}
	blend := func(old, batch *Node) *Node {
		return Where(seen, Add(Mul(OneMinus(factor), old), Mul(factor, batch)), old)
	}
	rmVar.SetNodeValue(blend(ConvertDType(rmVar.NodeValue(g), sdt), mean))
	rvVar.SetNodeValue(blend(ConvertDType(rvVar.NodeValue(g), sdt), unbiased))
	trackedVar.SetNodeValue(counted)
}
