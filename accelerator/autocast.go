package accelerator

import (
	"fmt"

	"github.com/goaccel/goaccel/accelerator/internal/precision"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

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
