package accelerator

import "github.com/goaccel/goaccel/accelerator/internal/memplan"

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
	// Frozen is the frozen weights: the variables the step's loss reads that are not
	// trainable (a LoRA base model's; also running statistics such as batch norm's, which no
	// gradient reaches either), with no gradient and no optimizer state. Like the weights
	// they are divided only by zero3. The plan's line names them ("frozen weights") when
	// there are any.
	Frozen int64
	// Gradients is one gradient per trainable variable, of its dtype.
	Gradients int64
	// OptimizerState is the other variables of the store: the optimizer's moments and step
	// count (Adam: twice the weights), a loss scale, the random state.
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
		Frozen: p.Frozen, Gradients: p.Gradients, OptimizerState: p.OptimizerState, Accumulators: p.Accumulators,
		Temporaries: p.Temporaries, Budget: p.Budget, Source: p.Source, Basis: p.basis}
}

// memoryPlan is memplan's plan p as the accelerator returns it.
func memoryPlan(p memplan.Plan) MemoryPlan {
	return MemoryPlan{PerDeviceBatch: p.PerDeviceBatch, Sharding: p.Sharding, Shards: p.Shards, Weights: p.Weights,
		Frozen: p.Frozen, Gradients: p.Gradients, OptimizerState: p.OptimizerState, Accumulators: p.Accumulators,
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

// ResidentBytes is what one device holds for a Job's Store variables: the sizes of the backend
// (PJRT) buffers on that device, by kind. It is measured, not planned: it counts the buffers
// that exist when it is called (after a step: the variables' values as the step left them).
type ResidentBytes struct {
	// Weights is the bytes of the trainable variables.
	Weights int64
	// Frozen is the bytes of the frozen weights (MemoryPlan.Frozen's variables). A training
	// step tells them apart, so before the job's first one they count as OptimizerState.
	Frozen int64
	// Gradients is the bytes of goaccel's gradient accumulators (goaccel/grad_accum/* and
	// goaccel/grad_weight), present with gradient accumulation. Gradients that live only
	// inside a step are temporaries of the compiled graph, not counted here.
	Gradients int64
	// OptimizerState is the bytes of every other variable: the optimizer's moments and
	// counters, the learning rate, goaccel's gradient norm, the random state.
	OptimizerState int64
}

// Total is the sum of the kinds.
func (r ResidentBytes) Total() int64 { return memplan.Resident(r).Total() }
