package accelerator

import (
	"fmt"
	"math"

	"github.com/goaccel/goaccel/accelerator/internal/precision"
	"github.com/goaccel/goaccel/accelerator/internal/strategy"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// ComputeDTypeSetter is implemented by models that compute their activations in another
// dtype than their float32 variables themselves: with Config.MixedPrecision "bf16" or
// "fp16", Prepare calls SetComputeDType(dtypes.BFloat16 or dtypes.Float16) and leaves the
// casting to the model. Models without it are cast by goaccel (see Config.MixedPrecision).
type ComputeDTypeSetter interface {
	SetComputeDType(dtypes.DType) error
}

// ComputeDType is the dtype models compute activations in: Float32, BFloat16 with
// MixedPrecision "bf16", or Float16 with "fp16".
func (a *Accelerator) ComputeDType() dtypes.DType { return a.precision.ComputeDType() }

// applyPrecision hands the compute dtype to the model being prepared when it has its own
// casting (ComputeDTypeSetter); else it returns the dtype the job's graphs cast the model to
// (InvalidDType: no casting).
func (a *Accelerator) applyPrecision(m model.StoreProvider) (dtypes.DType, error) {
	dt := a.ComputeDType()
	if dt == dtypes.Float32 {
		return dtypes.InvalidDType, nil
	}
	setter, ok := m.(ComputeDTypeSetter)
	if !ok {
		return dt, nil
	}
	if err := setter.SetComputeDType(dt); err != nil {
		return dtypes.InvalidDType, fmt.Errorf("accelerator: Prepare: switching the model to %s: %w", dt, err)
	}
	return dtypes.InvalidDType, nil
}

// Autocast: mixed precision for models that know nothing about it (Config.MixedPrecision
// "bf16" or "fp16" and a model without SetComputeDType), by tracing the step function twice:
// a dry trace in float32 on a scratch graph (dryTrace, here: it needs the job's backend and
// Backward's state), then the real trace on the casts that precision.BeginAutocast makes (the
// casting, and why it is done so, are in accelerator/internal/precision/autocast.go).

// autocasting reports whether the job's graphs cast the model to a compute dtype themselves
// (mixed precision on a model without SetComputeDType).
func (j *Job) autocasting() bool { return j.autocast != dtypes.InvalidDType }

// beginAutocast prepares the real trace of a step function fn under autocast: it dry-traces
// fn on a scratch graph (creating the model's variables in float32), casts the variables fn
// reads and the batch's float inputs to the compute dtype, and returns the scope and batch to
// trace fn with, and the Autocast whose Restore undoes the casts. training is the graph's
// training flag.
func (j *Job) beginAutocast(b GraphBatch, training bool, fn func(*model.Scope, GraphBatch)) (*model.Scope, GraphBatch, *precision.Autocast) {
	used := j.dryTrace(b, training, fn)
	s, inputs, ac := precision.BeginAutocast(b.Mask.Graph(), j.store, j.autocast, used, b.Inputs)
	cb := b
	cb.Inputs = inputs
	return s, cb, ac
}

// dryTraceKey marks the scratch graph of a dry trace: Backward only checks its loss there.
type dryTraceKey struct{}

// dryTrace traces fn in float32 on a scratch graph that is never compiled, creating the
// variables the model creates on first use, and returns the paths of the variables fn reads.
func (j *Job) dryTrace(b GraphBatch, training bool, fn func(*model.Scope, GraphBatch)) map[string]bool {
	g := NewGraph(j.acc.backend, "goaccel_autocast_dry_trace")
	defer g.Finalize()
	model.SetStore(g, j.store)
	j.store.SetTraining(g, training)
	g.AttachState(dryTraceKey{}, true)
	g.AttachState(backwardKey{}, &backwardState{job: j})
	param := func(x *Node, name string) *Node {
		if x == nil {
			return nil
		}
		return Parameter(g, name, x.Shape())
	}
	db := GraphBatch{Labels: param(b.Labels, "labels"), Mask: param(b.Mask, "mask")}
	for i, x := range b.Inputs {
		db.Inputs = append(db.Inputs, param(x, fmt.Sprintf("input_%d", i)))
	}
	fn(j.store.RootScope(), db)
	used := make(map[string]bool)
	for v := range j.store.IterVariables() {
		if v.InUseByGraph(g) {
			used[v.Path()] = true
		}
	}
	return used
}

// isDryTrace reports whether g is the scratch graph of a dry trace.
func isDryTrace(g *Graph) bool { return g.State(dryTraceKey{}) != nil }

// traceStep traces a training step function: fn(s, b), or under autocast fn on the shadow
// scope and the cast batch, its loss returned as float32.
func (j *Job) traceStep(s *model.Scope, b GraphBatch, st *backwardState, fn StepFn) *Node {
	if !j.autocasting() {
		return fn(s, b)
	}
	cs, cb, ac := j.beginAutocast(b, true, func(s *model.Scope, b GraphBatch) { fn(s, b) })
	st.autocast = ac
	defer j.explainPanic()
	loss := fn(cs, cb)
	ac.Restore()
	if loss != nil && loss.DType().IsFloat() {
		loss = ConvertDType(loss, dtypes.Float32)
	}
	return loss
}

// traceEval traces an evaluation function: fn(s, b), or under autocast fn on the shadow scope
// and the cast batch, its outputs in the compute dtype returned as float32.
func (j *Job) traceEval(s *model.Scope, b GraphBatch, fn EvalFn) []*Node {
	if !j.autocasting() {
		return fn(s, b)
	}
	cs, cb, ac := j.beginAutocast(b, false, func(s *model.Scope, b GraphBatch) { fn(s, b) })
	defer j.explainPanic()
	outs := fn(cs, cb)
	ac.Restore()
	for i, o := range outs {
		if o != nil && o.DType() == j.autocast {
			outs[i] = ConvertDType(o, dtypes.Float32)
		}
	}
	return outs
}

// explainPanic, deferred, re-panics with precision.ExplainDTypeMix's error.
func (j *Job) explainPanic() {
	if r := recover(); r != nil {
		panic(precision.ExplainDTypeMix(r, j.acc.precision))
	}
}

// Dynamic loss scaling, for MixedPrecision "fp16": precision.Scaler holds both its halves, the
// rule built into the update graphs and the one applied on the host (internal/precision's Scaler), with
// PyTorch GradScaler's defaults; its variables are in internalScope, in the Store, so that
// checkpoints carry them. What follows hands it the job.

// scaler is the job's loss scaler, its scale growing after the Accelerator's growthInterval
// finite updates in a row (which tests shorten); nil when the precision scales no loss, which
// the scaler's step methods take as no scaling.
func (j *Job) scaler() *precision.Scaler {
	return j.acc.precision.Scaler(internalScope, j.acc.growthInterval)
}

// scaleLoss returns the loss to differentiate: under fp16, loss (converted to float32) times
// the loss scale; else loss itself. op names the caller for the error on a loss that is not a
// float scalar.
func (j *Job) scaleLoss(op string, root *model.Scope, loss *Node) *Node {
	return j.scaler().ScaleLoss(op, root, loss)
}

// unscaleGradients divides the (scaled) gradients of an update by the loss scale and tells
// whether they are all finite; the update's Finish then makes the update conditional on it.
// It returns grads unchanged and nil when the job does not scale its loss.
func (j *Job) unscaleGradients(root *model.Scope, g *Graph, grads []*Node) ([]*Node, *precision.Update) {
	return j.scaler().Unscale(root, g, grads)
}

// LossScale returns, under MixedPrecision "fp16", the loss scale the next update uses and
// the number of optimizer updates skipped so far because a gradient was not finite (the
// variables goaccel/loss_scale and goaccel/skipped_updates, which checkpoints carry). Without
// fp16 it returns 1 and 0. Reading them waits for the queued steps to finish.
func (j *Job) LossScale() (scale float64, skipped int64, err error) {
	sc := j.scaler()
	if sc == nil {
		return 1, 0, nil
	}
	s, err := sc.Read(j.store)
	if err != nil {
		return math.NaN(), 0, fmt.Errorf("accelerator: Job.LossScale: %w", err)
	}
	return float64(s.Scale), s.Skipped, nil
}

// hostGuard is the host half of fp16's loss scaling for an update made on the host (zero1's
// slices): the scaler's variables, in the job's Store as in any run, read before the update
// and set after it by the rule of the graph's half. Nil when the precision scales no loss.
func (j *Job) hostGuard() strategy.Guard {
	sc := j.scaler()
	if sc == nil {
		return nil
	}
	return func(st *strategy.Zero1) (float32, func(bool) error, error) {
		s, err := sc.Read(j.store)
		if err != nil {
			return 0, nil, fmt.Errorf("accelerator: reading the loss scale for the sharded update: %w", err)
		}
		if s.Scale <= 0 {
			return 0, nil, fmt.Errorf("accelerator: the loss scale %s is %g; it must be > 0", sc.ScalePath(), s.Scale)
		}
		return s.Scale, func(finite bool) error { return sc.Put(s.Next(finite), st.PutMain) }, nil
	}
}
