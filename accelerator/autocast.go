package accelerator

import (
	"fmt"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// Autocast: mixed precision for models that know nothing about it (Config.MixedPrecision
// "bf16" or "fp16" and a model without SetComputeDType). GoMLX's layers create their
// variables in the dtype of their input and a variable has no casting hook, so the step
// function is traced twice:
//
//  1. a dry trace in float32 on a scratch graph that is never compiled: it creates the
//     model's variables, in float32 (the master weights), and tells which variables the step
//     function reads;
//  2. the real trace: each float32 variable it reads has, in this graph, the value
//     ConvertDType(its float32 parameter, compute dtype), and the step function gets a
//     scope of a shadow Store whose variables have the compute dtype at the same paths, so a
//     layer asking for a variable in the dtype of its (cast) input finds it. A graph keeps
//     one value per variable path whatever the Store, so reads and writes through the shadow
//     are the master's; the gradients flow back to the float32 parameters through the cast.
//
// Before the update (and after the step function) every master variable gets its float32
// value back, so the optimizer, its state and the saved variables stay float32.

// autocastState is one graph's autocast: the variables read as the compute dtype.
type autocastState struct {
	g     *Graph
	vars  []*model.Variable
	param []*Node // the float32 parameter of vars[i]
	cast  []*Node // its value in the compute dtype, as the step function saw it
}

// autocasting reports whether the job's graphs cast the model to a compute dtype themselves
// (mixed precision on a model without SetComputeDType).
func (j *Job) autocasting() bool { return j.autocast != dtypes.InvalidDType }

// beginAutocast prepares the real trace of a step function fn under autocast: it dry-traces
// fn on a scratch graph (creating the model's variables in float32), casts the variables fn
// reads and the batch's float inputs to the compute dtype, and returns the scope and batch to
// trace fn with, and the state whose restore undoes the casts. training is the graph's
// training flag.
func (j *Job) beginAutocast(b GraphBatch, training bool, fn func(*model.Scope, GraphBatch)) (*model.Scope, GraphBatch, *autocastState) {
	g := b.Mask.Graph()
	used := j.dryTrace(b, training, fn)
	shadow := model.NewStore()
	for path, value := range j.store.RootScope().IterParams() {
		shadow.SetParam(path, value)
	}
	ac := &autocastState{g: g}
	for v := range j.store.IterVariables() {
		shape := v.Shape()
		if shape.DType == dtypes.Float32 {
			shape = shapes.Make(j.autocast, shape.Dimensions...)
		}
		shadow.VariableWithShape(v.Path(), shape, nil).SetTrainable(v.Trainable)
		if !used[v.Path()] {
			continue
		}
		// The graph's entry for this path is the master variable's: model.Exec feeds it.
		value := v.NodeValue(g)
		if v.DType() == dtypes.Float32 {
			c := ConvertDType(value, j.autocast)
			v.SetNodeValue(c)
			ac.vars, ac.param, ac.cast = append(ac.vars, v), append(ac.param, value), append(ac.cast, c)
		}
	}
	cb := b
	cb.Inputs = make([]*Node, len(b.Inputs))
	for i, x := range b.Inputs {
		if x.DType() == dtypes.Float32 {
			x = ConvertDType(x, j.autocast)
		}
		cb.Inputs[i] = x
	}
	return shadow.RootScope(), cb, ac
}

// restore gives every cast variable its float32 value back: the parameter where the step
// function only read it, its new value converted to float32 where it wrote one.
func (ac *autocastState) restore() {
	if ac == nil {
		return
	}
	for i, v := range ac.vars {
		switch cur := v.NodeValue(ac.g); {
		case cur == ac.cast[i]:
			v.SetNodeValue(ac.param[i])
		case cur.DType() != dtypes.Float32:
			v.SetNodeValue(ConvertDType(cur, dtypes.Float32))
		}
	}
	ac.vars = nil
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

// explainDTypeMix turns GoMLX's panic on an op mixing dtypes, during an autocast trace, into
// an error that says why the dtypes differ and names the op; other panics pass unchanged.
func (j *Job) explainDTypeMix(r any) any {
	msg := fmt.Sprint(r)
	if err, ok := r.(error); ok {
		msg = err.Error()
	}
	low := strings.ToLower(msg)
	if !strings.Contains(low, "dtype") || !strings.Contains(low, strings.ToLower(j.autocast.String())) {
		return r
	}
	return fmt.Errorf("accelerator: MixedPrecision %q computes the model in %s, but an op mixes a %s value with a "+
		"float32 one (a float32 constant or a variable read outside the step's scope?): create constants "+
		"in the dtype of the activations (graph.Scalar(g, x.DType(), v), graph.ConstAs(x, v)): %s",
		j.acc.cfg.MixedPrecision, j.autocast, j.autocast, msg)
}

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
	ac.restore()
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
	ac.restore()
	for i, o := range outs {
		if o != nil && o.DType() == j.autocast {
			outs[i] = ConvertDType(o, dtypes.Float32)
		}
	}
	return outs
}

// explainPanic, deferred, re-panics with explainDTypeMix's error.
func (j *Job) explainPanic() {
	if r := recover(); r != nil {
		panic(j.explainDTypeMix(r))
	}
}
