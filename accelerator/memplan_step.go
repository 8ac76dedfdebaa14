package accelerator

import (
	"errors"
	"fmt"
	"github.com/goaccel/goaccel/accelerator/internal/strategy"

	"github.com/goaccel/goaccel/accelerator/internal/memplan"
	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// planSharding is the sharding kind and shard count the memory plan assumes for this job: its
// strategy's (within one process Config.Sharding over its devices; over several processes
// the optimizer state over the processes, zero1 under every stage, held on each process's
// device 0).
func (j *Job) planSharding() (kind string, shards int) { return j.strategy.planSharding(j) }

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
	c, ok := t.runner.(strategy.PlanCompiler)
	if !ok {
		return MemoryPlan{}, fmt.Errorf("accelerator: the %T strategy cannot compile a step ahead for its memory plan", j.strategy)
	}
	if accumulating {
		if _, err := c.Compile(gb, args, true); err != nil {
			return MemoryPlan{}, err
		}
	}
	g, err := c.Compile(gb, args, false)
	if err != nil {
		return MemoryPlan{}, err
	}
	kind, n := j.planSharding()
	stats := memplan.XLAStats(g)
	if stats != nil && j.shardsVariables() { // the program takes the shards of the sharded variables
		stats.ShardedAs, stats.Shards = kind, n
	}
	var applyG *Graph // a host strategy's apply graph, which creates the optimizer's state
	if c, ok := t.runner.(strategy.ApplyCompiler); ok {
		if applyG, err = c.CompileApply(); err != nil {
			return MemoryPlan{}, err
		}
		if applyG != nil && stats != nil {
			stats.Apply = memplan.XLAStats(applyG)
		}
	}
	vars := memplan.Vars(j.store, g, applyG, isAccumulator)
	if o, ok := t.runner.(strategy.StateOutsideStore); ok { // zero1's optimizer state
		state, err := o.PlanState()
		if err != nil {
			return MemoryPlan{}, err
		}
		vars = append(vars, state...)
	}
	p, err := memplan.Make(vars, stats, kind, n, gb.Shards[0].Size(), j.acc.budget)
	return memoryPlan(p), err
}

// checkPlan runs before a batch executes. The first time, it makes the memory plan and prints it
// on the main process; with WithAutoBatch it picks the micro-batches (t.micro) whose plan fits.
// A batch of argument shapes not seen before (another sequence length) is planned and checked
// again, silently. A plan over the budget is an error, and the next Run tries again.
func (t *TrainStep) checkPlan(gb *data.GlobalBatch, args []any, accumulate bool) error {
	j := t.job
	if _, ok := t.runner.(strategy.PlanCompiler); !ok {
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
