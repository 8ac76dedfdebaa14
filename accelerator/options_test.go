package accelerator

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"

	. "github.com/gomlx/gomlx/core/graph"
)

func sgd(lr float64) optimizer.Interface {
	return optimizer.StochasticGradientDescent().WithLearningRate(lr).WithDecay(false).Done()
}

// runSteps trains the toy MLP for n calls of Step with the given per-device batch.
func runSteps(t *testing.T, a *Accelerator, perDevice, n int, opt optimizer.Interface, opts ...PrepareOption) (*model.Store, []float64) {
	t.Helper()
	x, y := toyData(64)
	store := model.NewStore()
	job, err := a.Prepare(store, opt, &fixedSource{x: x, y: y, batch: perDevice}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	train := job.TrainStep(func(s *model.Scope, b GraphBatch) *Node {
		lv := CrossEntropy(mlpLogits(s, b.Inputs[0]), b.Labels, b.Mask)
		a.Backward(s, lv)
		return lv
	})
	var losses []float64
	for st, err := range job.Batches() {
		if err != nil {
			t.Fatal(err)
		}
		l, err := train.Run(st)
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, mustLoss(t, l))
		if len(losses) == n {
			break
		}
	}
	return store, losses
}

func trainables(t *testing.T, store *model.Store) map[string][]float32 {
	out := map[string][]float32{}
	for v := range store.IterVariables() {
		if v.Trainable {
			val, err := v.Value()
			if err != nil {
				t.Fatal(err)
			}
			out[v.Path()] = flatF32(val.Value())
		}
	}
	return out
}

// TestGradientAccumulation: 2 micro-batches of 8 with accumulation make the same SGD update
// as one batch of 16 (on 1 device and on 4 devices), and the first micro-step changes nothing.
func TestGradientAccumulation(t *testing.T) {
	t.Parallel()
	ref, _ := runSteps(t, newXLA(t, 1), 16, 1, sgd(0.5))
	want := trainables(t, ref)
	layouts := []int{1, 4}
	if testing.Short() { // tier 1: 4 devices; 1 device in make test-all
		layouts = layouts[1:]
	}
	for _, n := range layouts {
		a := newXLA(t, n)
		got, _ := runSteps(t, a, 8/n, 2, sgd(0.5), WithGradientAccumulation(2))
		for name, p := range trainables(t, got) {
			if d := maxDiff(p, want[name]); d > equivTol {
				t.Errorf("%d device(s): %s differs by %g from the single 16-example step", n, name, d)
			}
		}
		half, _ := runSteps(t, a, 8/n, 1, sgd(0.5), WithGradientAccumulation(2))
		if step, err := (&Job{store: half}).GlobalStep(); err != nil || step != 0 {
			t.Errorf("%d device(s): after 1 of 2 micro-steps global_step=%d, want 0 (no update yet)", n, step)
		}
	}
}

// TestClipGradNorm: with a tiny max norm, the SGD step has exactly lr*maxNorm length.
func TestClipGradNorm(t *testing.T) {
	t.Parallel()
	a := newXLA(t, 4)
	const maxNorm = 1e-3
	// Same seed, so the initial values equal those of a run whose one step is negligible
	// (a learning rate of 0 means "default" for GoMLX's SGD).
	init := trainables(t, func() *model.Store { s, _ := runSteps(t, a, 4, 1, sgd(1e-20)); return s }())
	after, _ := runSteps(t, a, 4, 1, sgd(1), WithClipGradNorm(maxNorm))
	sq := 0.0
	for name, p := range trainables(t, after) {
		for i := range p {
			d := float64(p[i] - init[name][i])
			sq += d * d
		}
	}
	if got := math.Sqrt(sq); math.Abs(got-maxNorm) > 1e-5 {
		t.Errorf("clipped step has norm %g, want %g", got, maxNorm)
	}
	gn := after.GetVariable("/goaccel/grad_norm")
	if gn == nil {
		t.Fatal("goaccel/grad_norm was not recorded")
	}
	if v := gn.MustValue().Value().(float32); v <= maxNorm {
		t.Errorf("recorded pre-clip gradient norm %g should exceed the clip %g", v, maxNorm)
	}
}

// TestLearningRateSchedule: the schedule gets the number of updates done and its value is
// the learning rate stored for logging.
func TestLearningRateSchedule(t *testing.T) {
	t.Parallel()
	a := newXLA(t, 2)
	store, _ := runSteps(t, a, 8, 3, optimizer.Adam().Done(), WithLearningRateSchedule(func(done *Node) *Node {
		return Div(Scalar(done.Graph(), done.DType(), 0.1), AddScalar(done, 1))
	}))
	lr := store.GetVariable("/optimizers/learning_rate")
	if lr == nil {
		t.Fatal("no /optimizers/learning_rate variable")
	}
	if got, want := float64(lr.MustValue().Value().(float32)), 0.1/3; math.Abs(got-want) > 1e-7 {
		t.Errorf("learning rate of the 3rd update = %g, want %g", got, want)
	}
}

// TestAccumulationWithClipping combines both options (their internal variables share a scope).
func TestAccumulationWithClipping(t *testing.T) {
	t.Parallel()
	a := newXLA(t, 2)
	store, losses := runSteps(t, a, 4, 4, sgd(0.1), WithGradientAccumulation(2), WithClipGradNorm(0.5))
	if len(losses) != 4 {
		t.Fatalf("ran %d steps, want 4", len(losses))
	}
	if step, err := (&Job{store: store}).GlobalStep(); err != nil || step != 2 {
		t.Errorf("global_step %d after 4 micro-steps with accumulation 2, want 2", step)
	}
}
