package accelerator

import (
	"errors"
	"fmt"

	"github.com/goaccel/goaccel/accelerator/internal/memplan"
	"github.com/goaccel/goaccel/accelerator/internal/strategy"
	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// The memory plan of a Job's training steps: made when a step first runs a batch of new
// shapes, checked against the budget, kept as the job's (MemoryPlan and ResidentBytes, the
// values, are in memplan.go).

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
	vars := memplan.Vars(j.store, g, applyG, func(v *model.Variable) memplan.Kind { return residentKind(j.variableKind(v)) })
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

// residentKind is the part of ResidentBytes (and of the memory plan) that a variable of kind
// k counts in (kindFixed: the optimizer state's).
func residentKind(k varKind) memplan.Kind {
	switch k {
	case kindWeights:
		return memplan.KindWeights
	case kindFrozen:
		return memplan.KindFrozen
	case kindGradients:
		return memplan.KindGradients
	}
	return memplan.KindOptimizer
}

// ResidentBytes returns, for each of this process's devices (index d for device d), the bytes
// of the on-device buffers that hold the Job's Store variables: with Config.Sharding a sharded
// variable counts its shard on each device, a replicated one its full size on each. A value
// held only on the host (loaded and not yet used by a step) counts nowhere. With
// Config.Sharding over several processes it also counts this rank's slices of the optimizer
// state, kept outside the Store, as OptimizerState on the device they live on. Reading it
// moves nothing between host and devices.
func (j *Job) ResidentBytes() ([]ResidentBytes, error) {
	out := make([]memplan.Resident, max(1, j.acc.NumDevices()))
	for v := range j.store.IterVariables() {
		held, err := memplan.HeldTensors(v)
		if err != nil {
			return nil, wrapOp("Job.ResidentBytes", err)
		}
		k := residentKind(j.variableKind(v))
		for _, t := range held {
			if err := memplan.AddOnDevice(out, j.acc.backend, t, k); err != nil {
				return nil, wrapOp("Job.ResidentBytes", fmt.Errorf("accelerator: %s: %w", v.Path(), err))
			}
		}
	}
	if st := j.acc.shardedState[j.store]; st != nil {
		if err := st.AddResident(out, j.acc.backend); err != nil {
			return nil, wrapOp("Job.ResidentBytes", err)
		}
	}
	res := make([]ResidentBytes, len(out))
	for d, r := range out {
		res[d] = ResidentBytes(r)
	}
	return res, nil
}

// planChecked wraps next with the memory plan of a batch shape not run yet, made before the
// batch executes.
func (t *TrainStep) planChecked(next batchStage) batchStage {
	return func(gb *data.GlobalBatch, args []any, accumulate bool) (Loss, error) {
		if err := t.checkPlan(gb, args, accumulate); err != nil {
			return Loss{}, err
		}
		return next(gb, args, accumulate)
	}
}

// chooseMicro is WithAutoBatch's choice: the largest per-device batch b dividing the
// global batch's per-device slots S whose plan fits the budget, the rest made up by
// accumulating S/b micro-batches. Every process computes it from the same shapes and
// statistics; with several, they check they agree.
func (t *TrainStep) chooseMicro(gb *data.GlobalBatch) error {
	j := t.job
	slots := gb.Shards[0].Size()
	var first, chosen, last *MemoryPlan
	k := 0 // 0: no per-device batch fits
	for cand := 1; cand <= slots; cand++ {
		if slots%cand != 0 {
			continue
		}
		b := slots / cand
		if first != nil && first.Budget > 0 && b > 1 {
			// The activations scale with the batch: skip a candidate whose prediction,
			// an underestimate, already exceeds the budget.
			fixed := first.Total() - first.Temporaries
			if fixed+first.Temporaries*int64(b)/int64(slots) > first.Budget {
				continue
			}
		}
		micro, err := microBatch(gb, 0, b)
		if err != nil {
			return err
		}
		args, err := j.args(micro)
		if err != nil {
			return err
		}
		j.micro = cand // traces the accumulating graphs when cand > 1
		p, err := t.planAt(micro, args, j.accumulating())
		j.micro = 0
		if err != nil {
			return err
		}
		if first == nil {
			first = &p
		}
		last = &p
		if p.Fits() {
			chosen, k = &p, cand
			break
		}
	}
	// Agree before failing too: a process that fails alone would leave the others waiting.
	if err := j.agreeOn("the auto batch's micro-batch count (0: none fits)", k); err != nil {
		return err
	}
	if chosen == nil {
		j.keepPlan(*last)
		return last.plan().BudgetError()
	}
	if err := checkCombination(combination{settings: &j.acc.settings, strategy: j.strategy, microBatches: k}); err != nil {
		return err
	}
	j.keepPlan(*chosen)
	t.micro, j.micro = k, k
	j.acc.plan("goaccel: auto batch: per-device batch %d x %d micro-batch(es) = %d slots per device, global batch kept; %s",
		slots/k, k, slots, chosen)
	return nil
}
