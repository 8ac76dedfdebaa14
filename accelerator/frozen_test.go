package accelerator

import (
	"fmt"
	"math"
	"slices"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
)

// The toy MLP with its hidden layer frozen, as LoRA freezes a base model: a [8, 16] projection
// and a [16] bias with their Trainable flag off (576 bytes of frozen weights), tanh, then a
// trainable dense layer to 3 classes ([16, 3] and [3]: 204 bytes of weights).
const (
	frozenBytes    = (8*16 + 16) * 4
	trainableBytes = (16*3 + 3) * 4
)

// frozenBase is the frozen layer's values, deterministic.
func frozenBase() (w [][]float32, b []float32) {
	w = make([][]float32, 8)
	for i := range w {
		w[i] = make([]float32, 16)
		for j := range w[i] {
			w[i][j] = float32((i*5+j*3)%11)/11 - 0.45
		}
	}
	b = make([]float32, 16)
	for j := range b {
		b[j] = float32(j%5)/10 - 0.2
	}
	return w, b
}

// frozenMLPLogits is the model: the frozen layer, created with frozenBase's values the first
// time, then the trainable dense layer.
func frozenMLPLogits(s *model.Scope, x *Node) *Node {
	w, b := frozenBase()
	base := s.In("base")
	wv := base.VariableWithValue("w", w).SetTrainable(false)
	bv := base.VariableWithValue("b", b).SetTrainable(false)
	g := x.Graph()
	h := Tanh(Add(MatMul(x, wv.NodeValue(g)), InsertAxes(bv.NodeValue(g), 0)))
	return layers.Dense(s.In("out"), h, true, 3)
}

// frozenValues reads the store's frozen variables (those of frozenBase), by path; a frozen
// variable that is missing or trainable is an error.
func frozenValues(store *model.Store) (map[string][]float32, error) {
	out := map[string][]float32{}
	for _, path := range []string{"/base/w", "/base/b"} {
		v := store.GetVariable(path)
		if v == nil || v.Trainable {
			return nil, fmt.Errorf("%s is missing or trainable, want it frozen", path)
		}
		val, err := v.Value()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out[path] = tensors.MustCopyFlatData[float32](val)
	}
	return out, nil
}

// checkFrozenUnchanged fails unless the frozen variables' values (frozenValues's) are
// frozenBase's, bit for bit.
func checkFrozenUnchanged(t *testing.T, name string, got map[string][]float32) {
	t.Helper()
	w, b := frozenBase()
	for path, want := range map[string][]float32{"/base/w": slices.Concat(w...), "/base/b": b} {
		for i := range want {
			if math.Float32bits(got[path][i]) != math.Float32bits(want[i]) {
				t.Errorf("%s: %s[%d] = %g after training, want its initial %g bit for bit", name, path, i, got[path][i], want[i])
				break
			}
		}
	}
}

// checkFrozenLayout fails unless the frozen variables are sharded over the devices when
// sharded, replicated otherwise.
func checkFrozenLayout(t *testing.T, name string, store *model.Store, sharded bool) {
	t.Helper()
	for _, path := range []string{"/base/w", "/base/b"} {
		dv, err := store.GetVariable(path).DistributedValue()
		if err != nil {
			t.Fatalf("%s: %s: %v", name, path, err)
		}
		if got := !dv.ShardingSpec().IsReplicated(); got != sharded {
			t.Errorf("%s: frozen %s laid out as %s; want it sharded: %v (as the weights)", name, path, dv.ShardingSpec(), sharded)
		}
	}
}

// planFrozen prepares the frozen MLP (Adam) at per-device batch perDevice on a and returns its
// job and training step.
func planFrozen(t *testing.T, a *Accelerator, perDevice int) (*Job, *TrainStep) {
	t.Helper()
	job, train, _ := planModel(t, a, perDevice, zero1Adam(), frozenMLPLogits)
	return job, train
}

// TestMemoryPlanFrozenExact: the plan of the frozen MLP on 4 devices, at every sharding level,
// byte for byte: the frozen layer is frozen weights (sharded only by zero3, as the weights),
// with no gradient and no optimizer state; the optimizer state is Adam's two moments of the
// trainable layer only, and the scalars (Adam's step, the global step, the learning rate, the
// random state).
func TestMemoryPlanFrozenExact(t *testing.T) {
	const scalars = 40 // Adam's step (8), the global step (8), the learning rate (4), the random state (20)
	for _, c := range []struct {
		level                            sharding
		weights, frozen, grads, optState int64
	}{
		// [16, 3] splits on axis 0 over 4 (48 bytes), [3] does not; [8, 16] on axis 0, [16] too.
		{shardNo, trainableBytes, frozenBytes, trainableBytes, 2*trainableBytes + scalars},
		{shardZero1, trainableBytes, frozenBytes, trainableBytes, 2*(48+12) + scalars},
		{shardZero2, trainableBytes, frozenBytes, 48 + 12, 2*(48+12) + scalars},
		{shardZero3, 48 + 12, frozenBytes / 4, 48 + 12, 2*(48+12) + scalars},
	} {
		a := newXLASharded(t, 4, c.level.String())
		job, train := planFrozen(t, a, 4)
		p, err := train.MemoryPlan(firstBatch(t, job))
		if err != nil {
			t.Fatalf("%s: %v", c.level, err)
		}
		t.Logf("%s: %s", c.level, p)
		got := fmt.Sprintf("weights %d, frozen %d, gradients %d, optimizer state %d", p.Weights, p.Frozen, p.Gradients, p.OptimizerState)
		want := fmt.Sprintf("weights %d, frozen %d, gradients %d, optimizer state %d", c.weights, c.frozen, c.grads, c.optState)
		if got != want {
			t.Errorf("%s over 4 devices: %s; want %s", c.level, got, want)
		}
	}
}

// TestShardedFrozenMLP: the frozen MLP under zero1, zero2 and zero3 on 4 devices against the
// unsharded run on 4 devices (30 Adam updates, accumulation 2, clipping): losses and weights
// within equivTol, the frozen variables bit for bit their initial values in every run, and
// laid out as each level lays out the weights (replicated under zero1 and zero2, sharded
// under zero3).
func TestShardedFrozenMLP(t *testing.T) {
	runLevel := toyShardedRun(t, frozenMLPLogits)
	run := func(sharding string) shardedResult {
		res := runLevel(sharding)
		frozen, err := frozenValues(res.store)
		if err != nil {
			t.Fatalf("Sharding %q: %v", sharding, err)
		}
		checkFrozenUnchanged(t, "frozen MLP "+sharding, frozen)
		checkFrozenLayout(t, "frozen MLP "+sharding, res.store, sharding == "zero3")
		return res
	}
	compareLevels(t, "frozen MLP 1x4", run)
}

// frozenRun is one process's run of TestZero1FrozenOverProcesses: the plan made before step 1,
// the losses and the trainable variables after updates updates.
type frozenRun struct {
	plan   MemoryPlan
	losses []float64
	params map[string][]float32
	frozen map[string][]float32
}

// TestZero1FrozenOverProcesses: zero1 over 2 processes on the frozen MLP (10 Adam updates,
// clipping, accumulation 2) gives the losses and weights of one unsharded process within
// equivTol, the ranks' weights identical, and the frozen variables bit for bit their initial
// values on every rank; its plan counts the frozen layer whole on each process (zero1 leaves
// it in the job's Store, as the weights), and the optimizer state half of the unsharded run's
// (its scalars whole).
func TestZero1FrozenOverProcesses(t *testing.T) {
	const batches = 20
	run := func(a *Accelerator) (frozenRun, error) {
		job, train := planFrozen(t, a, 8/a.NumReplicas())
		p, err := train.MemoryPlan(firstBatch(t, job))
		if err != nil {
			return frozenRun{}, err
		}
		x, y := toyData(48)
		store := model.NewStore()
		_, losses, err := trainSteps(a, store, zero1Adam(), &fixedSource{x: x, y: y, batch: 8 / a.NumReplicas()},
			func(s *model.Scope, b GraphBatch) *Node {
				lv := CrossEntropy(frozenMLPLogits(s, b.Inputs[0]), b.Labels, b.Mask)
				a.Backward(s, lv)
				return lv
			}, batches, zero1Opts()...)
		if err != nil {
			return frozenRun{}, err
		}
		params, err := trainableValues(store)
		if err != nil {
			return frozenRun{}, err
		}
		frozen, err := frozenValues(store)
		return frozenRun{plan: p, losses: losses, params: params, frozen: frozen}, err
	}
	ref, err := run(newXLA(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	checkFrozenUnchanged(t, "unsharded 1x1", ref.frozen)
	res := runProcessesConfig(t, 2, 1, func(c *Config) { c.Sharding = "zero1" }, nil, run)
	worstLoss, worstParam := 0.0, 0.0
	for r, got := range res {
		checkFrozenUnchanged(t, fmt.Sprintf("zero1 2x1 rank %d", r), got.frozen)
		for i := range ref.losses {
			worstLoss = math.Max(worstLoss, math.Abs(got.losses[i]-ref.losses[i]))
		}
		for name, p := range got.params {
			worstParam = math.Max(worstParam, maxDiff(p, ref.params[name]))
			if d := maxDiff(p, res[0].params[name]); d != 0 {
				t.Errorf("rank %d: %s differs from rank 0's by %g; want identical", r, name, d)
			}
		}
		t.Logf("rank %d: %s (unsharded 1x1: %s)", r, got.plan, ref.plan)
		if got.plan.Frozen != frozenBytes || ref.plan.Frozen != frozenBytes {
			t.Errorf("rank %d: frozen weights %d bytes (unsharded %d), want %d whole", r, got.plan.Frozen, ref.plan.Frozen, frozenBytes)
		}
		// Half of Adam's two moments (trainableBytes), and at most the unsharded run's scalars
		// (before step 1 some exist only in this rank's slices' Store).
		if lo, hi := int64(trainableBytes), ref.plan.OptimizerState-trainableBytes; got.plan.OptimizerState < lo || got.plan.OptimizerState > hi {
			t.Errorf("rank %d: optimizer state %d bytes, want half of Adam's moments and at most the scalars of the unsharded %d: [%d, %d]",
				r, got.plan.OptimizerState, ref.plan.OptimizerState, lo, hi)
		}
	}
	if worstLoss > equivTol || worstParam > equivTol {
		t.Errorf("zero1 2x1: max |loss diff| %g, max |param diff| %g from unsharded 1x1 (tolerance %g)", worstLoss, worstParam, equivTol)
	}
	t.Logf("zero1 2x1, %d updates: max |loss diff| %.2g, max |param diff| %.2g from unsharded 1x1", batches/2, worstLoss, worstParam)
}
