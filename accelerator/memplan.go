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
)

// MemoryPlan is what one device holds during a training step, in bytes, made before the step
// runs for the first time: TrainStep.Run compiles the step, reads the compiled program's memory
// statistics from XLA (the sizes of its arguments, outputs and temporaries, as PJRT's
// GetCompiledMemoryStats reports them) and splits them into the parts below. The variables'
// parts are counted from the variables themselves, so they are exact; Temporaries is the rest
// of what XLA says the program needs.
//
// On the main process the first Run prints it under the batch plan:
//
//	goaccel: memory plan per device (per-device batch 32): weights 16.0 MiB + gradients 16.0 MiB + optimizer state 32.0 MiB + temporaries 9.3 MiB = 73.3 MiB (budget 2.0 GiB; XLA compiled memory statistics)
//
// With Config.DeviceMemory set, a plan whose Total exceeds it is an error before the step's
// first execution (see ErrMemoryBudget). Job.MemoryPlan returns the latest plan.
type MemoryPlan struct {
	// PerDeviceBatch is the per-device batch of the step the plan was made for.
	PerDeviceBatch int
	// Sharding is the sharding kind the plan assumes ("no", "zero1", "zero2", "zero3") and
	// Shards the number of ways sharded state is split (1 without sharding). A variable
	// that Shards divides on none of its axes is counted whole.
	Sharding string
	Shards   int
	// Weights is the trainable variables (fp32 master weights under mixed precision).
	Weights int64
	// Gradients is one gradient per trainable variable, of its dtype.
	Gradients int64
	// OptimizerState is the other variables of the store: the optimizer's moments and step
	// count (Adam: twice the weights), a loss scale, batch-norm statistics.
	OptimizerState int64
	// Accumulators is the gradient accumulators of WithGradientAccumulation / WithAutoBatch
	// (one per trainable variable, and the weight), 0 without accumulation.
	Accumulators int64
	// Temporaries is the rest of what the compiled step needs on the device: the batch, the
	// activations kept for the backward pass, XLA's workspace, and the new values of the
	// variables while the old ones are still alive. It is measured on the step as compiled
	// (mixed precision and activation checkpointing included) and is not divided by sharding.
	// Over several processes without sharding, where the step is two programs (the gradients,
	// then the all-reduced gradients applied), it is the larger of the two programs'.
	Temporaries int64
	// Budget is the device memory budget (Config.DeviceMemory or $GOACCEL_DEVICE_MEMORY);
	// 0 means none.
	Budget int64
	// Source says where Temporaries comes from: "XLA compiled memory statistics", or, on a
	// backend that reports none (the pure-Go one), "variables only" (Temporaries is 0).
	Source string

	basis memplan.Basis // what the plan was made from, for WithSharding
}

// plan is p as package memplan computes with it.
func (p MemoryPlan) plan() memplan.Plan {
	return memplan.Plan{PerDeviceBatch: p.PerDeviceBatch, Sharding: p.Sharding, Shards: p.Shards, Weights: p.Weights,
		Gradients: p.Gradients, OptimizerState: p.OptimizerState, Accumulators: p.Accumulators,
		Temporaries: p.Temporaries, Budget: p.Budget, Source: p.Source, Basis: p.basis}
}

// memoryPlan is memplan's plan p as the accelerator returns it.
func memoryPlan(p memplan.Plan) MemoryPlan {
	return MemoryPlan{PerDeviceBatch: p.PerDeviceBatch, Sharding: p.Sharding, Shards: p.Shards, Weights: p.Weights,
		Gradients: p.Gradients, OptimizerState: p.OptimizerState, Accumulators: p.Accumulators,
		Temporaries: p.Temporaries, Budget: p.Budget, Source: p.Source, basis: p.Basis}
}

// WithSharding returns the plan of the same step under another sharding kind ("no", "zero1",
// "zero2", "zero3") split over shards ways, computed from the same variables and statistics:
// for example what ZeRO-3 over 4 devices would leave on each.
//
// Kept exported: `goaccel estimate --sharding` prices each sharding kind from one compiled
// step with it, and a program can do the same before choosing Config.Sharding; kind takes
// Config.Sharding's words (a string, as that field is); any other kind is an error naming it.
func (p MemoryPlan) WithSharding(kind string, shards int) (MemoryPlan, error) {
	q, err := p.plan().WithSharding(kind, shards)
	return memoryPlan(q), err
}

// Total is the bytes one device needs for the step: the sum of the plan's parts.
func (p MemoryPlan) Total() int64 { return p.plan().Total() }

// Fits reports whether the plan fits its budget (always, without a budget).
func (p MemoryPlan) Fits() bool { return p.plan().Fits() }

// Check returns nil when the plan fits its budget, else the error a training step's first Run
// returns for it: it wraps ErrMemoryBudget and names the largest part and the ways out.
func (p MemoryPlan) Check() error { return p.plan().Check() }

// Largest returns the name and size of the plan's largest part.
func (p MemoryPlan) Largest() (name string, bytes int64) { return p.plan().Largest() }

// String is the plan's line, as Run prints it after "goaccel: ".
func (p MemoryPlan) String() string { return p.plan().String() }

// ErrMemoryBudget is wrapped by the error of a step whose memory plan does not fit the device
// memory budget (errors.Is finds it).
var ErrMemoryBudget = memplan.ErrBudget

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

// ResidentBytes is what one device holds for a Job's Store variables: the sizes of the backend
// (PJRT) buffers on that device, by kind. It is measured, not planned: it counts the buffers
// that exist when it is called (after a step: the variables' values as the step left them).
type ResidentBytes struct {
	// Weights is the bytes of the trainable variables.
	Weights int64
	// Gradients is the bytes of goaccel's gradient accumulators (goaccel/grad_accum/* and
	// goaccel/grad_weight), present with gradient accumulation. Gradients that live only
	// inside a step are temporaries of the compiled graph, not counted here.
	Gradients int64
	// OptimizerState is the bytes of every other variable: the optimizer's moments and
	// counters, the learning rate, goaccel's gradient norm, the random state.
	OptimizerState int64
}

// Total is the sum of the three kinds.
func (r ResidentBytes) Total() int64 { return memplan.Resident(r).Total() }

// residentKind is the part of ResidentBytes that a variable of kind k counts in (kindFixed:
// the optimizer state's).
func residentKind(k varKind) memplan.Kind {
	switch k {
	case kindWeights:
		return memplan.KindWeights
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
		k := residentKind(variableKind(v))
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
// batch executes (memplan.go).
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
