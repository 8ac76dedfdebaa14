package accelerator

import (
	"fmt"
	"math"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Dynamic loss scaling, for MixedPrecision "fp16" (float16 has 5 exponent bits: small
// gradients underflow to 0 unless the loss is scaled up first). The defaults are PyTorch
// GradScaler's: the loss is multiplied by the scale before the backward pass; at the update
// the gradients are divided by it before clipping and the optimizer; if any of them is not
// finite the update is skipped (variables and optimizer state unchanged) and the scale
// halved, and after lossScaleGrowthInterval finite updates in a row it is doubled (the
// Accelerator's growthInterval, which tests shorten).
const (
	lossScaleInit           = 65536.0 // 2^16
	lossScaleBackoff        = 0.5
	lossScaleGrowth         = 2.0
	lossScaleGrowthInterval = 2000
)

// The loss scaler's variables, in internalScope: in the Store, so checkpoints carry them.
const (
	lossScaleName   = "loss_scale"        // float32: the scale
	lossGrowthName  = "loss_scale_growth" // int64: finite updates in a row since the scale last changed
	lossSkippedName = "skipped_updates"   // int64: updates skipped for a non-finite gradient
)

// lossScaling reports whether the job scales its loss (MixedPrecision "fp16").
func (j *Job) lossScaling() bool { return j.acc.cfg.MixedPrecision == "fp16" }

// lossScaleVar is the variable holding the loss scale.
func lossScaleVar(root *model.Scope) *model.Variable {
	return root.At(internalScope).VariableWithValue(lossScaleName, float32(lossScaleInit)).SetTrainable(false)
}

func lossCounterVar(root *model.Scope, name string) *model.Variable {
	return root.At(internalScope).VariableWithValue(name, int64(0)).SetTrainable(false)
}

// scaleLoss returns the loss to differentiate: under fp16, loss (converted to float32) times
// the loss scale; else loss itself. op names the caller for the error on a loss that is not a
// float scalar.
func (j *Job) scaleLoss(op string, root *model.Scope, loss *Node) *Node {
	if !j.lossScaling() {
		return loss
	}
	if !loss.DType().IsFloat() {
		exceptions.Panicf("accelerator: %s: MixedPrecision \"fp16\" scales the loss, which must be a float scalar; got dtype %s",
			op, loss.DType())
	}
	return Mul(ConvertDType(loss, dtypes.Float32), lossScaleVar(root).NodeValue(loss.Graph()))
}

// scaledUpdate is one update under loss scaling, between unscaleGradients and finish.
type scaledUpdate struct {
	interval int64 // finite updates in a row that grow the scale
	root     *model.Scope
	g        *Graph
	finite   *Node            // bool scalar: every gradient is finite
	before   map[string]*Node // the value of each variable in use before the update
}

// unscaleGradients divides the (scaled) gradients of an update by the loss scale and tells
// whether they are all finite; finish then makes the update conditional on it. It returns
// grads unchanged and nil when the job does not scale its loss.
func (j *Job) unscaleGradients(root *model.Scope, g *Graph, grads []*Node) ([]*Node, *scaledUpdate) {
	if !j.lossScaling() {
		return grads, nil
	}
	inv := Inverse(lossScaleVar(root).NodeValue(g))
	out := make([]*Node, len(grads))
	var sum *Node
	for i, gr := range grads {
		out[i] = Mul(gr, ConvertDType(inv, gr.DType()))
		// One sum of every gradient: Inf or NaN anywhere makes it non-finite (finite values
		// that overflow float32 when summed are no gradient to apply either).
		s := ReduceAllSum(ConvertDType(gr, dtypes.Float32))
		if sum == nil {
			sum = s
		} else {
			sum = Add(sum, s)
		}
	}
	u := &scaledUpdate{interval: j.acc.growthInterval, root: root, g: g, finite: IsFinite(sum), before: make(map[string]*Node)}
	for v := range root.Store().IterVariables() {
		if v.InUseByGraph(g) {
			u.before[v.Path()] = v.NodeValue(g)
		}
	}
	return out, u
}

// finish keeps what the update changed only where its gradients were finite (else every
// variable it changed, the optimizer's state included, keeps its value), and updates the
// scale and the counters. Nil-safe.
func (u *scaledUpdate) finish() {
	if u == nil {
		return
	}
	g, finite := u.g, u.finite
	for v := range u.root.Store().IterVariables() {
		if !v.InUseByGraph(g) {
			continue
		}
		now := v.NodeValue(g)
		old, ok := u.before[v.Path()]
		if !ok { // created by the update (the optimizer's state, on the first trace)
			if old = g.GetParameterByName(v.Path()); old == nil {
				continue
			}
		}
		if now != old {
			v.SetNodeValue(Where(finite, now, old))
		}
	}
	scaleVar := lossScaleVar(u.root)
	growthVar := lossCounterVar(u.root, lossGrowthName)
	skippedVar := lossCounterVar(u.root, lossSkippedName)
	scale, growth, skipped := scaleVar.NodeValue(g), growthVar.NodeValue(g), skippedVar.NodeValue(g)
	grown := AddScalar(growth, 1)
	full := GreaterOrEqual(grown, Scalar(g, dtypes.Int64, u.interval))
	scaleVar.SetNodeValue(Where(finite,
		Where(full, MulScalar(scale, lossScaleGrowth), scale),
		MulScalar(scale, lossScaleBackoff)))
	growthVar.SetNodeValue(Where(finite, Where(full, ZerosLike(grown), grown), ZerosLike(grown)))
	skippedVar.SetNodeValue(Add(skipped, ConvertDType(LogicalNot(finite), dtypes.Int64)))
}

// isLossScaler reports whether path is one of the loss scaler's variables.
func isLossScaler(path string) bool {
	switch path {
	case lossScalerPath(lossScaleName), lossScalerPath(lossGrowthName), lossScalerPath(lossSkippedName):
		return true
	}
	return false
}

// lossScalerPath is the path in the Store of the loss scaler's variable name.
func lossScalerPath(name string) string { return "/" + internalScope + "/" + name }

// lossScaler is the loss scaler's state read on the host, for an update made there (zero1
// across processes, whose finite check needs every rank's slice) and for LossScale.
type lossScaler struct {
	scale           float32
	growth, skipped int64
	interval        int64 // finite updates in a row that grow the scale
}

// readLossScaler reads the loss scaler's variables from store; one without a value yet (no
// update made) reads as its initial value.
func readLossScaler(store *model.Store, interval int64) (lossScaler, error) {
	s := lossScaler{scale: lossScaleInit, interval: interval}
	for _, x := range []struct {
		name string
		set  func(float64)
	}{
		{lossScaleName, func(f float64) { s.scale = float32(f) }},
		{lossGrowthName, func(f float64) { s.growth = int64(f) }},
		{lossSkippedName, func(f float64) { s.skipped = int64(f) }},
	} {
		v := store.GetVariable(lossScalerPath(x.name))
		if v == nil || !v.HasValue() {
			continue
		}
		t, err := v.Value()
		var f float64
		if err == nil {
			f, err = scalarFloat(t)
		}
		if err != nil {
			return s, fmt.Errorf("reading %s: %w", v.Path(), err)
		}
		x.set(f)
	}
	return s, nil
}

// next is the scaler after an update whose gradients were finite or not, the rule finish
// builds into the graph: a non-finite one is skipped, halves the scale and restarts the
// growth count; s.interval finite ones in a row double the scale.
func (s lossScaler) next(finite bool) lossScaler {
	if !finite {
		return lossScaler{scale: s.scale * lossScaleBackoff, skipped: s.skipped + 1, interval: s.interval}
	}
	if s.growth+1 >= s.interval {
		return lossScaler{scale: s.scale * lossScaleGrowth, skipped: s.skipped, interval: s.interval}
	}
	return lossScaler{scale: s.scale, growth: s.growth + 1, skipped: s.skipped, interval: s.interval}
}

// LossScale returns, under MixedPrecision "fp16", the loss scale the next update uses and
// the number of optimizer updates skipped so far because a gradient was not finite (the
// variables goaccel/loss_scale and goaccel/skipped_updates, which checkpoints carry). Without
// fp16 it returns 1 and 0. Reading them waits for the queued steps to finish.
func (j *Job) LossScale() (scale float64, skipped int64, err error) {
	if !j.lossScaling() {
		return 1, 0, nil
	}
	s, err := readLossScaler(j.store, j.acc.growthInterval)
	if err != nil {
		return math.NaN(), 0, fmt.Errorf("accelerator: Job.LossScale: %w", err)
	}
	return float64(s.scale), s.skipped, nil
}
