package accelerator

import (
	"errors"
	"fmt"

	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// planCompiler is a step runner that can compile its step for a batch without running it, so
// that the memory plan is made before the first execution.
type planCompiler interface {
	// compile compiles (or finds compiled) the graph that runs gb (args are its executor
	// arguments); accumulate picks the graph of a batch before the update.
	compile(gb *data.GlobalBatch, args []any, accumulate bool) (*Graph, error)
}

func (s *inGraphStep) compile(gb *data.GlobalBatch, args []any, accumulate bool) (*Graph, error) {
	slot, pin := &s.apply, &s.applyPin
	if accumulate {
		slot, pin = &s.accum, &s.accumPin
	}
	if *slot == nil { // as run creates it: with Config.Sharding's layout and pinned outputs
		var err error
		if *slot, *pin, err = s.t.newStepExec(s.t.graphFn(accumulate), gb, args); err != nil {
			return nil, err
		}
	}
	return s.t.compileSlot(slot, s.t.graphFn(accumulate), gb, args)
}

func (p *hostReducedStep) compile(gb *data.GlobalBatch, args []any, accumulate bool) (*Graph, error) {
	slot := &p.grads
	if accumulate {
		slot = &p.accum
	}
	return p.t.compileSlot(slot, p.gradsGraphFn(accumulate), gb, args)
}

// compileApply compiles the apply graph ahead, for the shapes run gives it (the all-reduced
// float32 mean gradients, a copy per device): the memory plan then counts the optimizer's state,
// which that graph creates, and its temporaries. The first update reuses it. The gradients
// graph must have been traced first (it finds the variables).
func (p *hostReducedStep) compileApply() (*Graph, error) {
	j := p.t.job
	if err := p.newApply(); err != nil {
		return nil, err
	}
	in := make([]shapes.Shape, 0, j.numDevices()*len(p.vars))
	for range j.numDevices() {
		for _, v := range p.vars {
			in = append(in, shapes.Make(dtypes.Float32, v.Shape().Dimensions...))
		}
	}
	span := j.acc.tl.Start("compile", "execute")
	g, err := p.apply.Compile(in...)
	span.End()
	if err != nil {
		return nil, fmt.Errorf("accelerator: compiling the apply graph for the memory plan: %w", err)
	}
	return g, nil
}

// compileSlot creates the executor in *slot if needed (as the runners do) and compiles it for
// args' shapes.
func (t *TrainStep) compileSlot(slot **model.Exec, fn func(s *model.Scope, inputs []*Node) []*Node, gb *data.GlobalBatch, args []any) (*Graph, error) {
	if *slot == nil {
		var err error
		if *slot, err = t.job.newExec(fn, layoutTrain); err != nil {
			return nil, err
		}
	}
	argShapes := make([]shapes.Shape, len(args))
	for i, a := range args {
		argShapes[i] = a.(*tensors.Tensor).Shape()
	}
	t.tracing = gb
	span := t.job.acc.tl.Start("compile", "execute")
	g, err := (*slot).Compile(argShapes...)
	span.End()
	t.tracing = nil
	if err != nil {
		return nil, fmt.Errorf("accelerator: compiling the step for its memory plan (%s): %w", batchPlace(gb), err)
	}
	return g, nil
}

// planSharding is the sharding kind and shard count the memory plan assumes for this job:
// within one process Config.Sharding over its devices; over several processes the optimizer
// state over the processes (zero1, every stage), held on each process's device 0.
func (j *Job) planSharding() (kind string, shards int) {
	switch {
	case j.acc.shard == shardNo:
		return "no", 1
	case j.acc.grp.Size() > 1:
		return shardZero1.String(), j.acc.grp.Size()
	case j.shardsVariables():
		return j.acc.shard.String(), j.numDevices()
	}
	return "no", 1
}

// MemoryPlan returns the largest memory plan made so far for the job's training steps: when a
// step first runs, when it first runs a batch of new shapes (another sequence length), or by
// TrainStep.MemoryPlan. Before any there is none, which is an error.
func (j *Job) MemoryPlan() (MemoryPlan, error) {
	if j.memPlan == nil {
		return MemoryPlan{}, errors.New("accelerator: Job.MemoryPlan: no plan yet: it is made when a TrainStep first runs " +
			"(or call TrainStep.MemoryPlan with a global batch)")
	}
	return *j.memPlan, nil
}

// MemoryPlan compiles the step for gb's shapes without running it and returns its memory plan
// (see MemoryPlan). It creates the model's variables if the step is the first to use them,
// but neither initialises nor changes their values.
func (t *TrainStep) MemoryPlan(gb *data.GlobalBatch) (MemoryPlan, error) {
	args, err := t.job.args(gb)
	if err != nil {
		return MemoryPlan{}, wrapOp("TrainStep.MemoryPlan", err)
	}
	p, err := t.planAt(gb, args, t.job.accumulating())
	if err != nil {
		return MemoryPlan{}, wrapOp("TrainStep.MemoryPlan", err)
	}
	t.job.keepPlan(p)
	return p, nil
}

// accumulating reports whether the job's steps accumulate gradients over several batches
// (WithGradientAccumulation) or micro-batches (WithAutoBatch).
func (j *Job) accumulating() bool { return j.opts.accumulate > 1 || j.micro > 1 }

// planAt compiles the step for gb (the update's graph, after the accumulation graph when
// there is one, the order the runs trace them in) and makes its plan.
func (t *TrainStep) planAt(gb *data.GlobalBatch, args []any, accumulating bool) (MemoryPlan, error) {
	j := t.job
	c, ok := t.runner.(planCompiler)
	if !ok {
		return MemoryPlan{}, fmt.Errorf("accelerator: the %T strategy cannot compile a step ahead for its memory plan", j.strategy)
	}
	if accumulating {
		if _, err := c.compile(gb, args, true); err != nil {
			return MemoryPlan{}, err
		}
	}
	g, err := c.compile(gb, args, false)
	if err != nil {
		return MemoryPlan{}, err
	}
	kind, n := j.planSharding()
	stats := xlaStats(g)
	if stats != nil && j.shardsVariables() { // the program takes the shards of the sharded variables
		stats.shardedAs, stats.shards = kind, n
	}
	var applyG *Graph // the host-reduced step's second graph, which creates the optimizer's state
	hr, _ := t.runner.(*hostReducedStep)
	if hr != nil && hr.zero == nil {
		if applyG, err = hr.compileApply(); err != nil {
			return MemoryPlan{}, err
		}
		if stats != nil {
			stats.apply = xlaStats(applyG)
		}
	}
	vars := planVars(j.store, g, applyG)
	if hr != nil && hr.zero != nil { // zero1's state is outside the Store
		state, err := hr.zero.planState()
		if err != nil {
			return MemoryPlan{}, err
		}
		vars = append(vars, state...)
	}
	return makePlan(vars, stats, kind, n, gb.Shards[0].Size(), j.acc.budget)
}

// checkPlan runs before a batch executes. The first time, it makes the memory plan and prints it
// on the main process; with WithAutoBatch it picks the micro-batches (t.micro) whose plan fits.
// A batch of argument shapes not seen before (another sequence length) is planned and checked
// again, silently. A plan over the budget is an error, and the next Run tries again.
func (t *TrainStep) checkPlan(gb *data.GlobalBatch, args []any, accumulate bool) error {
	j := t.job
	if _, ok := t.runner.(planCompiler); !ok {
		if j.opts.autoBatch {
			return fmt.Errorf("accelerator: WithAutoBatch: the %T strategy cannot compile a step ahead for its memory plan", j.strategy)
		}
		t.micro = 1 // no plan
		return nil
	}
	for _, seen := range t.planned {
		if sameShapes(args, seen) {
			return nil
		}
	}
	first := t.micro == 0
	if first && j.opts.autoBatch {
		if err := t.chooseMicro(gb); err != nil {
			return err
		}
	} else {
		var p MemoryPlan
		var err error
		if t.micro > 1 { // a new shape under WithAutoBatch: the plan of its micro-batches
			var micro *data.GlobalBatch
			var margs []any
			if micro, err = microBatch(gb, 0, gb.Shards[0].Size()/t.micro); err == nil {
				if margs, err = j.args(micro); err == nil {
					p, err = t.planAt(micro, margs, true)
				}
			}
		} else {
			p, err = t.planAt(gb, args, accumulate || j.accumulating())
		}
		if err != nil {
			return err
		}
		j.keepPlan(p)
		if first {
			j.acc.plan("goaccel: %s", p)
			fits := 0
			if p.Fits() {
				fits = 1
			}
			// A process that fails alone would leave the others waiting in their first all-reduce.
			if err := j.agreeOn("whether the memory plan fits the budget (1: it does)", fits); err != nil {
				return err
			}
		}
		if err := p.Check(); err != nil {
			return err
		}
		if first {
			t.micro = 1
		}
	}
	shs := make([]shapes.Shape, len(args))
	for i, a := range args {
		shs[i] = a.(*tensors.Tensor).Shape()
	}
	t.planned = append(t.planned, shs)
	return nil
}

// keepPlan keeps the largest plan made so far as the job's.
func (j *Job) keepPlan(p MemoryPlan) {
	if j.memPlan == nil || p.Total() > j.memPlan.Total() {
		j.memPlan = &p
	}
}

// sameShapes reports whether args have the shapes shs (without allocating: it runs every step).
func sameShapes(args []any, shs []shapes.Shape) bool {
	if len(args) != len(shs) {
		return false
	}
	for i, a := range args {
		if !a.(*tensors.Tensor).Shape().Equal(shs[i]) {
			return false
		}
	}
	return true
}
