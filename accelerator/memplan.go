package accelerator

import (
	"errors"
	"fmt"
	"strings"

	"github.com/goaccel/goaccel/internal/bytesize"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
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

	vars  []planVar      // what the plan was made from, for WithSharding
	stats *compiledStats // nil: none
}

// WithSharding returns the plan of the same step under another sharding kind ("no", "zero1",
// "zero2", "zero3") split over shards ways, computed from the same variables and statistics:
// for example what ZeRO-3 over 4 devices would leave on each.
//
// Kept exported: `goaccel estimate --sharding` prices each sharding kind from one compiled
// step with it, and a program can do the same before choosing Config.Sharding; kind takes
// Config.Sharding's words (a string, as that field is); any other kind is an error naming it.
func (p MemoryPlan) WithSharding(kind string, shards int) (MemoryPlan, error) {
	if p.vars == nil {
		return MemoryPlan{}, errors.New("accelerator: MemoryPlan.WithSharding: the plan was not made by a TrainStep")
	}
	return makePlan(p.vars, p.stats, kind, shards, p.PerDeviceBatch, p.Budget)
}

// Total is the bytes one device needs for the step: the sum of the plan's parts.
func (p MemoryPlan) Total() int64 {
	return p.Weights + p.Gradients + p.OptimizerState + p.Accumulators + p.Temporaries
}

// Fits reports whether the plan fits its budget (always, without a budget).
func (p MemoryPlan) Fits() bool { return p.Budget <= 0 || p.Total() <= p.Budget }

// Check returns nil when the plan fits its budget, else the error a training step's first Run
// returns for it: it wraps ErrMemoryBudget and names the largest part and the ways out.
func (p MemoryPlan) Check() error {
	if p.Fits() {
		return nil
	}
	return budgetError(p)
}

// Largest returns the name and size of the plan's largest part.
func (p MemoryPlan) Largest() (name string, bytes int64) {
	for _, it := range p.items() {
		if it.bytes > bytes {
			name, bytes = it.name, it.bytes
		}
	}
	return name, bytes
}

type planItem struct {
	name  string
	bytes int64
}

func (p MemoryPlan) items() []planItem {
	return []planItem{
		{"weights", p.Weights}, {"gradients", p.Gradients}, {"optimizer state", p.OptimizerState},
		{"gradient accumulators", p.Accumulators}, {"temporaries", p.Temporaries},
	}
}

// String is the plan's line, as Run prints it after "goaccel: ".
func (p MemoryPlan) String() string {
	var parts []string
	for _, it := range p.items() {
		if it.bytes > 0 || it.name != "gradient accumulators" {
			parts = append(parts, it.name+" "+bytesize.Format(it.bytes))
		}
	}
	shard := ""
	if p.Sharding != "" && p.Sharding != "no" {
		shard = fmt.Sprintf(", sharding %s over %d", p.Sharding, p.Shards)
	}
	budget := "no budget"
	if p.Budget > 0 {
		budget = "budget " + bytesize.Format(p.Budget)
	}
	return fmt.Sprintf("memory plan per device (per-device batch %d%s): %s = %s (%s; %s)",
		p.PerDeviceBatch, shard, strings.Join(parts, " + "), bytesize.Format(p.Total()), budget, p.Source)
}

// ErrMemoryBudget is wrapped by the error of a step whose memory plan does not fit the device
// memory budget (errors.Is finds it).
var ErrMemoryBudget = errors.New("the memory plan does not fit the device memory budget")

// budgetError is the error of a plan over its budget: it names the largest part and the ways out.
func budgetError(p MemoryPlan) error {
	name, bytes := p.Largest()
	return fmt.Errorf("accelerator: %w: %s per device > budget %s (Config.DeviceMemory / $GOACCEL_DEVICE_MEMORY) "+
		"at per-device batch %d; the largest part is the %s (%s). Ways out: shard the state over the devices "+
		"(Config.Sharding \"zero1\" divides the optimizer state, \"zero3\" also the gradients and weights), "+
		"checkpoint activations (bert.Config.GradientCheckpointing) to cut the temporaries, or a smaller per-device "+
		"batch (accelerator.WithAutoBatch keeps the global batch and accumulates gradients); %s",
		ErrMemoryBudget, bytesize.Format(p.Total()), bytesize.Format(p.Budget), p.PerDeviceBatch, name, bytesize.Format(bytes), p.String())
}

// planVar is one variable as the plan counts it.
type planVar struct {
	bytes     int64
	dims      []int // the variable's dimensions (none for a scalar)
	trainable bool  // a weight (with a gradient)
	accum     bool  // a gradient accumulator
	inGraph   bool  // an argument of the compiled program the plan was made from
	inApply   bool  // an argument of its apply program (compiledStats.apply)
}

// planVars lists the store's variables for a plan; g and apply, if not nil, mark those the
// step's graph and its apply graph (a host-reduced step's second graph) use.
func planVars(store *model.Store, g, apply *Graph) []planVar {
	var vs []planVar
	for v := range store.IterVariables() {
		sh := v.Shape()
		pv := planVar{bytes: sh.ByteSize(), accum: isAccumulator(v.Path()), inGraph: g != nil && v.InUseByGraph(g),
			inApply: apply != nil && v.InUseByGraph(apply)}
		pv.trainable = v.Trainable && !pv.accum
		pv.dims = sh.Dimensions
		vs = append(vs, pv)
	}
	return vs
}

// shardedBytes is what one device holds of a variable split n ways, as Config.Sharding splits
// it within a process: along the first axis n divides; a variable n divides on no axis
// (scalars included) stays whole.
func shardedBytes(v planVar, n int) int64 {
	if n > 1 {
		for _, d := range v.dims {
			if d >= n && d%n == 0 {
				return v.bytes / int64(n)
			}
		}
	}
	return v.bytes
}

// splitWays is how many ways the sharding kind over n shards splits the optimizer state,
// the gradients (and their accumulators) and the weights.
func splitWays(kind string, n int) (stateN, gradN, weightN int, err error) {
	switch kind {
	case "", "no":
		return 1, 1, 1, nil
	case "zero1":
		return n, 1, 1, nil
	case "zero2":
		return n, n, 1, nil
	case "zero3":
		return n, n, n, nil
	}
	return 0, 0, 0, fmt.Errorf(`accelerator: memory plan: unknown sharding %q: valid values are "no", "zero1", "zero2" and "zero3"`, kind)
}

// heldBytes is what one device holds of v when the optimizer state, the accumulators and the
// weights are split stateN, gradN and weightN ways.
func (v planVar) heldBytes(stateN, gradN, weightN int) int64 {
	switch {
	case v.accum:
		return shardedBytes(v, gradN)
	case v.trainable:
		return shardedBytes(v, weightN)
	}
	return shardedBytes(v, stateN)
}

// compiledStats are the memory statistics of a compiled program for one device.
type compiledStats struct {
	inputs, outputs, aliases, temporary int64
	// shardedAs is the sharding the program was compiled under (Config.Sharding within a
	// process: its arguments are the shards; "" or "no": whole variables) and over shards ways.
	shardedAs string
	shards    int
	// apply is the statistics of the step's second program, when the update runs apart from
	// the gradients (several processes without sharding: the all-reduced gradients applied);
	// nil otherwise. Temporaries is the larger of the two programs'.
	apply *compiledStats
}

// required is what the program needs on the device: its arguments, its outputs (less those
// that reuse an argument's buffer) and its temporaries.
func (s *compiledStats) required() int64 { return s.inputs + s.outputs - s.aliases + s.temporary }

// makePlan builds a plan from the variables, the compiled step's statistics (nil: none) and a
// sharding kind over n shards: "zero1" divides the optimizer state by n, "zero2" also the
// gradients (and their accumulators), "zero3" also the weights.
func makePlan(vars []planVar, stats *compiledStats, kind string, n, batch int, budget int64) (MemoryPlan, error) {
	if kind == "" {
		kind = "no"
	}
	if n < 1 {
		return MemoryPlan{}, fmt.Errorf("accelerator: memory plan: %d shards, want >= 1", n)
	}
	stateN, gradN, weightN, err := splitWays(kind, n)
	if err != nil {
		return MemoryPlan{}, err
	}
	if kind == "no" {
		n = 1
	}
	p := MemoryPlan{PerDeviceBatch: batch, Sharding: kind, Shards: n, Budget: budget, Source: "variables only", vars: vars, stats: stats}
	var inGraph, inApply, fullGrads int64 // what the compiled programs hold of the variables and gradients
	held := func(v planVar) int64 { return v.bytes }
	if stats != nil && stats.shards > 1 {
		if cs, cg, cw, err := splitWays(stats.shardedAs, stats.shards); err == nil {
			held = func(v planVar) int64 { return v.heldBytes(cs, cg, cw) }
		}
	}
	for _, v := range vars {
		switch {
		case v.accum:
			p.Accumulators += shardedBytes(v, gradN)
		case v.trainable:
			p.Weights += shardedBytes(v, weightN)
			p.Gradients += shardedBytes(v, gradN)
			fullGrads += v.bytes
		default:
			p.OptimizerState += shardedBytes(v, stateN)
		}
		if v.inGraph {
			inGraph += held(v)
		}
		if v.inApply {
			inApply += held(v)
		}
	}
	if stats != nil {
		// The program's arguments hold the variables it uses and the batch; its outputs the
		// variables' new values (and the loss, or the gradients); its temporaries the gradients
		// and activations. What is left after the variables and the gradients is Temporaries.
		p.Temporaries = max(0, stats.required()-inGraph-fullGrads)
		if a := stats.apply; a != nil { // its arguments are the variables and the mean gradients
			p.Temporaries = max(p.Temporaries, a.required()-inApply-fullGrads)
		}
		p.Source = "XLA compiled memory statistics"
	}
	return p, nil
}
