package accelerator

import (
	"errors"
	"fmt"
	"slices"

	"github.com/goaccel/goaccel/accelerator/internal/strategy"
	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute/distributed"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Sharded state within one process (Config.Sharding), under the inGraph strategy: the step
// stays one compiled graph over the device mesh (GoMLX AutoSharding) and some of the Store's
// variables are kept sharded over the mesh's "data" axis, each device holding 1/D of them:
//
//	zero1: the optimizer state (Adam's moments and whatever else is not a weight or goaccel's own)
//	zero2: zero1 plus the gradient accumulators (goaccel/grad_accum/*)
//	zero3: zero2 plus the weights (the trainable variables; FSDP's FULL_SHARD), frozen ones too
//
// A frozen weight (Trainable off, as LoRA leaves a base model's: read by the step, with no
// gradient and no optimizer state) is a weight: replicated under zero1 and zero2, sharded
// under zero3. It is told from the optimizer state (also not trainable) by the step: the
// variables that the loss reads when Backward runs, before the optimizer creates or reads
// its own (Job.noteFrozen).
//
// A variable is sharded on the first of its axes that D divides (axis 0 when it can), with a
// full-rank spec (that axis over "data", every other axis replicated); a scalar, a variable
// no axis of which D divides, the random state and goaccel's gradient norm stay replicated.
// Three things GoMLX v0.28.3 needs, found by a probe (issue 19):
//   - every variable the step changes gets its own spec as its output spec: with replicated
//     or no output specs step 1 returns buffers of the wrong shape and step 2 fails in PJRT
//     (TestGoMLXShardedOutputSpecBug pins it); pinnedOutputs checks the shapes after the first
//     execution;
//   - a variable's spec must be set before the trace that makes its parameter node, and
//     variables created inside the step (the optimizer's, the accumulators) exist only after a
//     trace: the first trace is a probe that builds the graph and stops before compiling
//     (errTraceOnly), the specs are set, then the real graph is traced and compiled;
//   - full-rank specs: with the short form ShardShape reports the full shape before step 1.

// varKind is what a Store variable holds, for sharding, the memory plan and ResidentBytes.
type varKind int

const (
	kindWeights   varKind = iota // trainable variables
	kindGradients                // goaccel's gradient accumulators
	kindOptimizer                // everything else: the optimizer's moments and counters, the learning rate
	kindFixed                    // never sharded: the random state, goaccel's gradient norm
	kindFrozen                   // frozen weights: not trainable, read by the loss (Job.noteFrozen)
)

// variableKind is the kind of v in the job's Store. A variable no training step has read
// yet, and not trainable, is optimizer state.
func (j *Job) variableKind(v *model.Variable) varKind {
	switch p := v.Path(); {
	case isAccumulator(p):
		return kindGradients
	case v.Trainable:
		return kindWeights
	case p == model.JoinPath("/", model.RNGStateVariableName), p == strategy.NormPath:
		return kindFixed
	case j.frozen[p]:
		return kindFrozen
	}
	return kindOptimizer
}

// noteFrozen records v, a variable the loss of a training step reads and that is not
// trainable, as a frozen weight (kindFrozen) of the job: Backward calls it before it builds
// the update, so the optimizer's own variables are never among them.
func (j *Job) noteFrozen(v *model.Variable) {
	if j.frozen == nil {
		j.frozen = map[string]bool{}
	}
	j.frozen[v.Path()] = true
}

// sharded reports whether the level shards variables of kind k.
func (s sharding) sharded(k varKind) bool {
	switch k {
	case kindOptimizer:
		return s >= shardZero1
	case kindGradients:
		return s >= shardZero2
	case kindWeights, kindFrozen:
		return s >= shardZero3
	}
	return false
}

// shardsVariables reports whether the job keeps some variables sharded over its devices.
func (j *Job) shardsVariables() bool {
	return j.acc.shard != shardNo && j.mesh != nil
}

// variableSpec is the sharding spec of v under the job's sharding: its first axis that the
// devices divide sharded over the mesh (full rank), or replicated.
func (j *Job) variableSpec(v *model.Variable) (*distributed.ShardingSpec, error) {
	mesh := j.mesh
	replicated := distributed.NewReplicatedShardingSpec(mesh)
	if !j.acc.shard.sharded(j.variableKind(v)) {
		return replicated, nil
	}
	d := mesh.NumDevices()
	dims := v.Shape().Dimensions
	for axis, n := range dims {
		if n >= d && n%d == 0 {
			axes := make([]distributed.AxisSpec, len(dims))
			axes[axis] = distributed.AxisSpec{meshAxis}
			return distributed.NewShardingSpec(mesh, axes...)
		}
	}
	return replicated, nil
}

func sameSpec(a, b *distributed.ShardingSpec) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Mesh == b.Mesh && (a.IsReplicated() && b.IsReplicated() || slices.EqualFunc(a.Axes, b.Axes, slices.Equal))
}

// layOutVariables sets every Store variable's sharding spec for the job's sharding. A
// variable that already holds a value laid out otherwise (an evaluation ran before) is
// brought back to the host first, so that the next execution lays it out anew.
func (j *Job) layOutVariables() error {
	for v := range j.store.IterVariables() {
		spec, err := j.variableSpec(v)
		if err != nil {
			return fmt.Errorf("accelerator: sharding spec of %s: %w", v.Path(), err)
		}
		if sameSpec(v.ShardingSpec(), spec) {
			continue
		}
		j.layouts++
		if v.SetShardingSpec(spec) == nil {
			continue
		}
		// Distributed under another spec: gather it and start again from the host value.
		val, err := v.Value()
		if err == nil {
			val, err = val.LocalClone()
		}
		if err == nil {
			err = v.SetValue(val)
		}
		if err == nil {
			err = v.SetShardingSpec(spec)
		}
		if err != nil {
			return fmt.Errorf("accelerator: laying out %s for %s sharding: %w", v.Path(), j.acc.shard, err)
		}
	}
	return nil
}

// errTraceOnly stops the probe trace of a sharded step before it is compiled.
var errTraceOnly = errors.New("accelerator: trace only")

// pinnedOutputs are the variables a sharded step changes, in the order model.Exec outputs
// them, with their shapes and specs; after the step's first execution check verifies that
// each came back with its shape and its shards' shape.
type pinnedOutputs struct {
	vars    []*model.Variable
	shapes  []shapes.Shape
	specs   []*distributed.ShardingSpec
	checked bool
}

// changedVariables are the variables of store that graph g changes, in the Store's order
// (the order model.Exec prepends their new values to the outputs).
func changedVariables(store *model.Store, g *Graph) []*model.Variable {
	var out []*model.Variable
	for v := range store.IterVariables() {
		if v.ChangedInGraph(g) {
			out = append(out, v)
		}
	}
	return out
}

// newStepExec returns the compiled step of graphFn for the inGraph strategy. Without sharded
// variables it is newExec's; with them, a probe trace first creates the step's variables, the
// specs of every variable are set, and the step is compiled with each changed variable's
// spec as its output spec (the returned pinnedOutputs).
func (t *TrainStep) newStepExec(graphFn func(*model.Scope, []*Node) []*Node, gb *data.GlobalBatch, args []any) (*model.Exec, *pinnedOutputs, error) {
	j := t.job
	if !j.shardsVariables() {
		e, err := j.newExec(graphFn, strategy.Train)
		return e, nil, err
	}
	pin := &pinnedOutputs{}
	traced := false
	probe, err := j.newExec(func(s *model.Scope, inputs []*Node) []*Node {
		graphFn(s, inputs)
		pin.vars = changedVariables(s.Store(), inputs[0].Graph())
		traced = true
		panic(errTraceOnly)
	}, strategy.Train)
	if err != nil {
		return nil, nil, err
	}
	_, err = t.execTracing(probe, gb, args)
	probe.Finalize()
	if !traced { // the step function itself failed: its error
		if err == nil {
			err = errors.New("accelerator: the probe trace of the sharded step did not run")
		}
		return nil, nil, err
	}
	if err := j.layOutVariables(); err != nil {
		return nil, nil, err
	}
	for _, v := range pin.vars {
		pin.shapes = append(pin.shapes, v.Shape())
		pin.specs = append(pin.specs, v.ShardingSpec())
	}
	e, err := j.newExec(func(s *model.Scope, inputs []*Node) []*Node {
		outs := graphFn(s, inputs)
		now := changedVariables(s.Store(), inputs[0].Graph())
		if !slices.Equal(now, pin.vars) {
			exceptions.Panicf("accelerator: the sharded step changed %d variable(s) when traced again, %d the first "+
				"time: the step function must build the same computation every time", len(now), len(pin.vars))
		}
		return outs
	}, strategy.Train)
	if err != nil {
		return nil, nil, err
	}
	// The changed variables come first in model.Exec's outputs, then the loss (replicated).
	e.WithOutputShardingSpecs(append(slices.Clone(pin.specs), distributed.NewReplicatedShardingSpec(j.mesh))...)
	return e, pin, nil
}

// check verifies, once, that every pinned variable came back from the step's first execution
// with its shape and its shards' shape: a wrong layout is an error here, not a wrong answer
// later (or PJRT's E0102 at the next step). A nil pinnedOutputs checks nothing.
func (p *pinnedOutputs) check() error {
	if p == nil || p.checked {
		return nil
	}
	p.checked = true
	for i, v := range p.vars {
		dv, err := v.DistributedValue()
		if err != nil {
			return fmt.Errorf("accelerator: after the first sharded step, reading %s: %w", v.Path(), err)
		}
		want := p.specs[i].ShardShape(p.shapes[i])
		if !dv.Shape().Equal(p.shapes[i]) {
			return fmt.Errorf("accelerator: after the first sharded step %s has shape %s, want %s (spec %s): "+
				"its output was laid out under another spec", v.Path(), dv.Shape(), p.shapes[i], p.specs[i])
		}
		for d, sh := range dv.Shards() {
			if !sh.Shape().Equal(want) {
				return fmt.Errorf("accelerator: after the first sharded step the shard of %s on device %d has shape %s, "+
					"want %s (spec %s)", v.Path(), d, sh.Shape(), want, p.specs[i])
			}
		}
	}
	return nil
}

// NewStepExec is the in-graph step's executor, with Config.Sharding's layout (sharding.go)
// and the check of its pinned outputs.
func (r runnerStep) NewStepExec(graphFn strategy.GraphFn, gb *data.GlobalBatch, args []any) (*model.Exec, func() error, error) {
	t := r.t
	e, pin, err := t.newStepExec(graphFn, gb, args)
	if err != nil || pin == nil {
		return e, nil, err
	}
	return e, pin.check, nil
}
