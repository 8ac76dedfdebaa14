package accelerator

import (
	"errors"
	"testing"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/bytesize"
	"github.com/goaccel/goaccel/internal/testutil"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
)

// wideLogits is an MLP whose state (weights, Adam's moments, accumulators) outweighs its
// activations at a small batch: what sharding is for.
func wideLogits(s *model.Scope, x *Node) *Node {
	h := Tanh(layers.Dense(s.In("hidden"), x, true, 256))
	h = Tanh(layers.Dense(s.In("hidden2"), h, true, 256))
	return layers.Dense(s.In("out"), h, true, 4)
}

// wideRun trains wideLogits on 4 XLA CPU devices under sharding with a device memory budget
// (0: none) for 3 updates (Adam, accumulation 2, clipping), returning the run, its memory
// plan and the error that stopped it.
func wideRun(t *testing.T, sharding string, budget int64) (shardedResult, MemoryPlan, error) {
	t.Helper()
	a, err := New(Config{Backend: cpuPlugin(t), Devices: 4, Quiet: true, Seed: 7, Sharding: sharding, DeviceMemory: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	x, y := toyData(64)
	loader, err := data.NewLoader[toyPoint](toyPoints(x, y), data.LoaderConfig[toyPoint]{GlobalBatchSize: 8, Collate: collateToyPoints})
	if err != nil {
		t.Fatal(err)
	}
	res, err := shardRun(a, nil, loader, 3, func(s *model.Scope, in []*Node) *Node { return wideLogits(s, in[0]) })
	var plan MemoryPlan
	if res.job != nil {
		plan, _ = res.job.MemoryPlan()
	}
	return res, plan, err
}

// TestMemoryBudgetShardedTrains: with a device memory budget that the unsharded plan exceeds,
// the unsharded run fails before step 1 with ErrMemoryBudget, and the same run with Sharding
// "zero3" on the same 4 devices fits and trains to the unsharded run's losses and weights.
func TestMemoryBudgetShardedTrains(t *testing.T) {
	testutil.Long(t, "trains under a memory budget at three sharding levels (tier 1: TestMemoryBudgetOnANewShape and TestDeviceMemoryBudget check the budget, TestShardedEquivalenceMLP the levels)")
	ref, full, err := wideRun(t, "no", 0)
	if err != nil {
		t.Fatal(err)
	}
	_, sharded, err := wideRun(t, "zero3", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("unsharded plan: %s", full)
	t.Logf("zero3 plan:     %s", sharded)
	if sharded.Sharding != "zero3" || sharded.Shards != 4 {
		t.Fatalf("the zero3 run's plan assumes %q over %d, want zero3 over 4", sharded.Sharding, sharded.Shards)
	}
	if sharded.Total() >= full.Total() {
		t.Fatalf("zero3 plan %d bytes per device, unsharded %d: sharding saves nothing", sharded.Total(), full.Total())
	}
	budget := (sharded.Total() + full.Total()) / 2
	res, _, err := wideRun(t, "no", budget)
	if !errors.Is(err, ErrMemoryBudget) {
		t.Fatalf("unsharded under a budget of %d bytes: %v, want ErrMemoryBudget", budget, err)
	}
	if len(res.losses) != 0 {
		t.Errorf("the refused run trained %d batches", len(res.losses))
	}
	t.Logf("unsharded, budget %s: %v", bytesize.Format(budget), err)
	got, _, err := wideRun(t, "zero3", budget)
	if err != nil {
		t.Fatalf("zero3 under a budget of %d bytes: %v", budget, err)
	}
	compareSharded(t, "zero3 within the budget", ref, got)
}

// TestMemoryPlanZero1OverProcesses: before the first update, the plan of a zero1 run over 2
// processes counts the optimizer state that zero1 keeps outside the Store: half of the
// unsharded run's (its scalars whole), not just the scalars.
func TestMemoryPlanZero1OverProcesses(t *testing.T) {
	a := newXLA(t, 1)
	job, train, _ := planToy(t, a, 8)
	full, err := train.MemoryPlan(firstBatch(t, job))
	if err != nil {
		t.Fatal(err)
	}
	plans := runProcessesConfig(t, 2, 1, func(c *Config) { c.Sharding = "zero1" }, nil, func(a *Accelerator) (MemoryPlan, error) {
		job, train, _ := planToy(t, a, 8)
		return train.MemoryPlan(firstBatch(t, job))
	})
	for r, p := range plans {
		t.Logf("rank %d: %s (unsharded 1x1: %s)", r, p, full)
		if p.Sharding != "zero1" || p.Shards != 2 {
			t.Errorf("rank %d: plan assumes %q over %d, want zero1 over 2", r, p.Sharding, p.Shards)
		}
		if lo, hi := full.OptimizerState/2, full.OptimizerState/2+64; p.OptimizerState < lo || p.OptimizerState > hi {
			t.Errorf("rank %d: optimizer state %d bytes, want about half of the unsharded %d", r, p.OptimizerState, full.OptimizerState)
		}
	}
}

// TestMemoryBudgetOverProcesses: on 2 processes x 2 devices without sharding the plan counts
// what each device holds as on 1 x 4 at the same per-device batch (weights, gradients and
// Adam's state, byte for byte, made before step 1 although the host-reduced step creates the
// optimizer's variables in its second graph), so a 5 KiB budget that 1 x 4 refuses is refused
// on every rank before step 1.
func TestMemoryBudgetOverProcesses(t *testing.T) {
	const budget = 5 << 10
	type result struct {
		plan    MemoryPlan
		err     error
		batches int
	}
	run := func(a *Accelerator) (result, error) {
		job, train, _ := planToy(t, a, 8)
		_, err := train.Run(firstBatch(t, job))
		p, perr := job.MemoryPlan()
		if perr != nil {
			return result{}, perr
		}
		return result{plan: p, err: err, batches: train.Stats().Batches}, nil
	}
	one, err := New(Config{Backend: cpuPlugin(t), Devices: 4, Quiet: true, Seed: 7, DeviceMemory: budget})
	if err != nil {
		t.Fatal(err)
	}
	want, err := run(one)
	one.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("1x4: %s", want.plan)
	if !errors.Is(want.err, ErrMemoryBudget) {
		t.Fatalf("1x4 under a budget of 5 KiB: %v, want ErrMemoryBudget (the test's budget no longer separates)", want.err)
	}
	got := runProcessesConfig(t, 2, 2, func(c *Config) { c.DeviceMemory = budget }, nil, run)
	for r, g := range got {
		p := g.plan
		t.Logf("2x2 rank %d: %s", r, p)
		if p.Weights != want.plan.Weights || p.Gradients != want.plan.Gradients || p.OptimizerState != want.plan.OptimizerState {
			t.Errorf("rank %d: weights %d, gradients %d, optimizer state %d B; 1x4: %d, %d, %d B", r,
				p.Weights, p.Gradients, p.OptimizerState, want.plan.Weights, want.plan.Gradients, want.plan.OptimizerState)
		}
		if p.Temporaries <= 0 || p.Source != "XLA compiled memory statistics" {
			t.Errorf("rank %d: temporaries %d from %q, want XLA's statistics", r, p.Temporaries, p.Source)
		}
		if !errors.Is(g.err, ErrMemoryBudget) {
			t.Errorf("rank %d under a budget of 5 KiB: %v, want ErrMemoryBudget as on 1x4", r, g.err)
		}
		if g.batches != 0 {
			t.Errorf("rank %d ran %d batches before the refusal", r, g.batches)
		}
	}
}
