// Package memplan is the arithmetic of the accelerator's memory plan: what one device holds
// during a training step, split into weights, frozen weights, gradients, optimizer state,
// gradient accumulators and temporaries, under each sharding kind; the budget check and its
// error; the plan's line; XLA's compiled memory statistics, read from a compiled graph; and
// the count of the device buffers a store's variables hold now (the accelerator's
// ResidentBytes).
//
// It knows nothing of jobs, steps or strategies: the accelerator compiles a step, gathers its
// variables (Vars) and statistics (XLAStats) and calls Make. The accelerator's public
// MemoryPlan and ResidentBytes have the same exported fields as Plan and Resident, and their
// methods call these. Its errors keep the accelerator's "accelerator: " prefix, as the user
// meets them through it.
package memplan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/goaccel/goaccel/internal/bytesize"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// Plan is what one device holds during a training step, in bytes. Its exported fields are
// those of accelerator.MemoryPlan, in the same order, and mean the same (their godoc is
// there); Basis is what it was made from.
type Plan struct {
	PerDeviceBatch int
	Sharding       string
	Shards         int
	Weights        int64
	Frozen         int64
	Gradients      int64
	OptimizerState int64
	Accumulators   int64
	Temporaries    int64
	Budget         int64
	Source         string
	// Basis is what the plan was made from, for WithSharding; the zero Basis for a plan Make
	// did not make.
	Basis Basis
}

// Basis is what Make made a plan from: the variables and the compiled step's statistics.
// It is opaque outside this package.
type Basis struct {
	vars  []Var  // nil: not made by Make
	stats *Stats // nil: none
}

// WithSharding returns the plan of the same step under another sharding kind ("no", "zero1",
// "zero2", "zero3") split over shards ways, computed from the same variables and statistics.
// Any other kind is an error naming it.
func (p Plan) WithSharding(kind string, shards int) (Plan, error) {
	if p.Basis.vars == nil {
		return Plan{}, errors.New("accelerator: MemoryPlan.WithSharding: the plan was not made by a TrainStep")
	}
	return Make(p.Basis.vars, p.Basis.stats, kind, shards, p.PerDeviceBatch, p.Budget)
}

// Total is the bytes one device needs for the step: the sum of the plan's parts.
func (p Plan) Total() int64 {
	return p.Weights + p.Frozen + p.Gradients + p.OptimizerState + p.Accumulators + p.Temporaries
}

// Fits reports whether the plan fits its budget (always, without a budget).
func (p Plan) Fits() bool { return p.Budget <= 0 || p.Total() <= p.Budget }

// Check returns nil when the plan fits its budget, else BudgetError's error.
func (p Plan) Check() error {
	if p.Fits() {
		return nil
	}
	return p.BudgetError()
}

// Largest returns the name and size of the plan's largest part.
func (p Plan) Largest() (name string, bytes int64) {
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

func (p Plan) items() []planItem {
	return []planItem{
		{"weights", p.Weights}, {"frozen weights", p.Frozen}, {"gradients", p.Gradients}, {"optimizer state", p.OptimizerState},
		{"gradient accumulators", p.Accumulators}, {"temporaries", p.Temporaries},
	}
}

// String is the plan's line, as a step's first Run prints it after "goaccel: ".
func (p Plan) String() string {
	var parts []string
	for _, it := range p.items() {
		if it.bytes > 0 || (it.name != "gradient accumulators" && it.name != "frozen weights") {
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

// ErrBudget is wrapped by the error of a plan over its budget (the accelerator exports it as
// ErrMemoryBudget).
var ErrBudget = errors.New("the memory plan does not fit the device memory budget")

// BudgetError is the error of the plan over its budget, whether or not it fits: it wraps
// ErrBudget and names the largest part and the ways out.
func (p Plan) BudgetError() error {
	name, bytes := p.Largest()
	return fmt.Errorf("accelerator: %w: %s per device > budget %s (Config.DeviceMemory / $GOACCEL_DEVICE_MEMORY) "+
		"at per-device batch %d; the largest part is the %s (%s). Ways out: shard the state over the devices "+
		"(Config.Sharding \"zero1\" divides the optimizer state, \"zero3\" also the gradients and weights), "+
		"checkpoint activations (bert.Config.GradientCheckpointing) to cut the temporaries, or a smaller per-device "+
		"batch (accelerator.WithAutoBatch keeps the global batch and accumulates gradients); %s",
		ErrBudget, bytesize.Format(p.Total()), bytesize.Format(p.Budget), p.PerDeviceBatch, name, bytesize.Format(bytes), p.String())
}

// Var is one variable as the plan counts it.
type Var struct {
	Bytes     int64
	Dims      []int // the variable's dimensions (none for a scalar)
	Trainable bool  // a weight (with a gradient)
	Frozen    bool  // a frozen weight: read by the step, with no gradient and no optimizer state
	Accum     bool  // a gradient accumulator
	InGraph   bool  // an argument of the compiled program the plan was made from
	InApply   bool  // an argument of its apply program (Stats.Apply)
}

// Vars lists the store's variables for a plan; g and apply, if not nil, mark those the step's
// graph and its apply graph (a host-reduced step's second graph) use. kind is the part each
// variable counts in (the one the accelerator's sharding and ResidentBytes use).
func Vars(store *model.Store, g, apply *Graph, kind func(v *model.Variable) Kind) []Var {
	var vs []Var
	for v := range store.IterVariables() {
		sh := v.Shape()
		k := kind(v)
		pv := Var{Bytes: sh.ByteSize(), Trainable: k == KindWeights, Frozen: k == KindFrozen, Accum: k == KindGradients,
			InGraph: g != nil && v.InUseByGraph(g), InApply: apply != nil && v.InUseByGraph(apply)}
		pv.Dims = sh.Dimensions
		vs = append(vs, pv)
	}
	return vs
}

// shardedBytes is what one device holds of a variable split n ways, as Config.Sharding splits
// it within a process: along the first axis n divides; a variable n divides on no axis
// (scalars included) stays whole.
func shardedBytes(v Var, n int) int64 {
	if n > 1 {
		for _, d := range v.Dims {
			if d >= n && d%n == 0 {
				return v.Bytes / int64(n)
			}
		}
	}
	return v.Bytes
}

// splitWays is how many ways the sharding kind over n shards splits the optimizer state,
// the gradients (and their accumulators) and the weights (frozen or not).
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
func (v Var) heldBytes(stateN, gradN, weightN int) int64 {
	switch {
	case v.Accum:
		return shardedBytes(v, gradN)
	case v.Trainable, v.Frozen:
		return shardedBytes(v, weightN)
	}
	return shardedBytes(v, stateN)
}

// Stats are the memory statistics of a compiled program for one device.
type Stats struct {
	Inputs, Outputs, Aliases, Temporary int64
	// ShardedAs is the sharding the program was compiled under (Config.Sharding within a
	// process: its arguments are the shards; "" or "no": whole variables) and Shards the ways.
	ShardedAs string
	Shards    int
	// Apply is the statistics of the step's second program, when the update runs apart from
	// the gradients (several processes without sharding: the all-reduced gradients applied);
	// nil otherwise. Temporaries is the larger of the two programs'.
	Apply *Stats
}

// required is what the program needs on the device: its arguments, its outputs (less those
// that reuse an argument's buffer) and its temporaries.
func (s *Stats) required() int64 { return s.Inputs + s.Outputs - s.Aliases + s.Temporary }

// Make builds a plan from the variables, the compiled step's statistics (nil: none) and a
// sharding kind over n shards: "zero1" divides the optimizer state by n, "zero2" also the
// gradients (and their accumulators), "zero3" also the weights, frozen ones included. A
// frozen weight has no gradient and no optimizer state. batch is the per-device
// batch and budget the device memory budget (0: none).
func Make(vars []Var, stats *Stats, kind string, n, batch int, budget int64) (Plan, error) {
	if kind == "" {
		kind = "no"
	}
	if n < 1 {
		return Plan{}, fmt.Errorf("accelerator: memory plan: %d shards, want >= 1", n)
	}
	stateN, gradN, weightN, err := splitWays(kind, n)
	if err != nil {
		return Plan{}, err
	}
	if kind == "no" {
		n = 1
	}
	p := Plan{PerDeviceBatch: batch, Sharding: kind, Shards: n, Budget: budget, Source: "variables only", Basis: Basis{vars: vars, stats: stats}}
	var inGraph, inApply, fullGrads int64 // what the compiled programs hold of the variables and gradients
	held := func(v Var) int64 { return v.Bytes }
	if stats != nil && stats.Shards > 1 {
		if cs, cg, cw, err := splitWays(stats.ShardedAs, stats.Shards); err == nil {
			held = func(v Var) int64 { return v.heldBytes(cs, cg, cw) }
		}
	}
	for _, v := range vars {
		switch {
		case v.Accum:
			p.Accumulators += shardedBytes(v, gradN)
		case v.Trainable:
			p.Weights += shardedBytes(v, weightN)
			p.Gradients += shardedBytes(v, gradN)
			fullGrads += v.Bytes
		case v.Frozen:
			p.Frozen += shardedBytes(v, weightN)
		default:
			p.OptimizerState += shardedBytes(v, stateN)
		}
		if v.InGraph {
			inGraph += held(v)
		}
		if v.InApply {
			inApply += held(v)
		}
	}
	if stats != nil {
		// The program's arguments hold the variables it uses and the batch; its outputs the
		// variables' new values (and the loss, or the gradients); its temporaries the gradients
		// and activations. What is left after the variables and the gradients is Temporaries.
		p.Temporaries = max(0, stats.required()-inGraph-fullGrads)
		if a := stats.Apply; a != nil { // its arguments are the variables and the mean gradients
			p.Temporaries = max(p.Temporaries, a.required()-inApply-fullGrads)
		}
		p.Source = "XLA compiled memory statistics"
	}
	return p, nil
}
