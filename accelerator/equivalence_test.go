package accelerator

import (
	"fmt"
	"math"
	"testing"

	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// Tolerance of the equivalence tests: the N-device run reduces the gradient in another
// order than the 1-device run, so float32 results agree to rounding, not bitwise.
const equivTol = 2e-5

func mlpLogits(s *model.Scope, x *Node) *Node {
	h := Tanh(layers.Dense(s.In("hidden"), x, true, 16))
	return layers.Dense(s.In("out"), h, true, 3)
}

// trainToy trains the toy MLP for steps steps at global batch 16 over all the Accelerator's
// replicas (devices x processes) and returns the per-step losses and the final values of the
// trainable variables.
func trainToy(t *testing.T, a *Accelerator, opt optimizer.Interface, steps int, opts ...PrepareOption) ([]float64, map[string][]float32) {
	t.Helper()
	losses, params, err := toyRun(a, opt, steps, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return losses, params
}

// toyRun is trainToy returning its error (for goroutines standing in for processes).
func toyRun(a *Accelerator, opt optimizer.Interface, steps int, opts ...PrepareOption) ([]float64, map[string][]float32, error) {
	x, y := toyData(48)
	src := &fixedSource{x: x, y: y, batch: 16 / a.NumReplicas()}
	store := model.NewStore()
	_, losses, err := trainSteps(a, store, opt, src, func(s *model.Scope, b GraphBatch) *Node {
		logits := mlpLogits(s, b.Inputs[0])
		lv := CrossEntropy(logits, b.Labels, b.Mask)
		a.Backward(s, lv)
		return lv
	}, steps, opts...)
	if err != nil {
		return nil, nil, err
	}
	params, err := trainableValues(store)
	return losses, params, err
}

// trainSteps prepares store, opt and src on a and runs the step function fn on steps global
// batches (epoch after epoch), returning the job and each batch's loss.
func trainSteps(a *Accelerator, store *model.Store, opt optimizer.Interface, src data.Source, fn StepFn, steps int, opts ...PrepareOption) (*Job, []float64, error) {
	job, err := a.Prepare(store, opt, src, opts...)
	if err != nil {
		return nil, nil, err
	}
	train := job.TrainStep(fn)
	var losses []float64
	for len(losses) < steps {
		for st, err := range job.Batches() {
			if err != nil {
				return nil, nil, err
			}
			l, err := train.Run(st)
			if err != nil {
				return nil, nil, err
			}
			lv, err := l.Value()
			if err != nil {
				return nil, nil, err
			}
			losses = append(losses, lv)
			if len(losses) == steps {
				break
			}
		}
	}
	return job, losses, nil
}

// trainableValues returns the values of store's trainable variables, flat, by path.
func trainableValues(store *model.Store) (map[string][]float32, error) {
	params := map[string][]float32{}
	for v := range store.IterVariables() {
		if !v.Trainable {
			continue
		}
		val, err := v.Value()
		if err != nil {
			return nil, err
		}
		params[v.Path()] = flatF32(val.Value())
	}
	return params, nil
}

func flatF32(v any) []float32 {
	var out []float32
	switch x := v.(type) {
	case float32:
		out = append(out, x)
	case []float32:
		out = append(out, x...)
	case [][]float32:
		for _, r := range x {
			out = append(out, r...)
		}
	default:
		panic(fmt.Sprintf("unexpected %T", v))
	}
	return out
}

func maxDiff(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

// TestEquivalenceAcrossDeviceCounts trains 30 Adam steps at the same global batch (16) on
// 1, 2 and 4 XLA CPU devices and checks that losses and final parameters agree.
func TestEquivalenceAcrossDeviceCounts(t *testing.T) {
	t.Parallel()
	var refLoss []float64
	var refParams map[string][]float32
	for _, n := range []int{1, 2, 4} {
		a := newXLA(t, n)
		losses, params := trainToy(t, a, optimizer.Adam().LearningRate(0.01).Done(), 30)
		if n == 1 {
			refLoss, refParams = losses, params
			if losses[29] >= losses[0] {
				t.Fatalf("the toy model did not learn: loss %g -> %g", losses[0], losses[29])
			}
			continue
		}
		for i := range losses {
			if math.Abs(losses[i]-refLoss[i]) > equivTol {
				t.Errorf("%d devices, step %d: loss %.7f, 1 device %.7f", n, i+1, losses[i], refLoss[i])
			}
		}
		worstParam, worstLoss := 0.0, 0.0
		for name, p := range params {
			d := maxDiff(p, refParams[name])
			worstParam = math.Max(worstParam, d)
			if d > equivTol {
				t.Errorf("%d devices: %s differs from 1 device by %g (tolerance %g)", n, name, d, equivTol)
			}
		}
		for i := range losses {
			worstLoss = math.Max(worstLoss, math.Abs(losses[i]-refLoss[i]))
		}
		t.Logf("%d devices: final loss %.6f (1 device %.6f); max |loss diff| %.2g, max |param diff| %.2g over 30 steps",
			n, losses[29], refLoss[29], worstLoss, worstParam)
	}
}

// TestUpdateIsAMean uses plain SGD (whose step scales with the gradient, unlike Adam):
// if gradients were summed over devices, the 2- and 4-device updates would be 2x and 4x the
// 1-device update and this test would fail.
func TestUpdateIsAMean(t *testing.T) {
	t.Parallel()
	var ref map[string][]float32
	var refLoss []float64
	for _, n := range []int{1, 2, 4} {
		a := newXLA(t, n)
		losses, params := trainToy(t, a, optimizer.StochasticGradientDescent().WithLearningRate(0.5).WithDecay(false).Done(), 3)
		if n == 1 {
			ref, refLoss = params, losses
			continue
		}
		for name, p := range params {
			if d := maxDiff(p, ref[name]); d > equivTol {
				t.Errorf("%d devices: %s after 3 SGD steps differs by %g: the update is not a mean over the global batch", n, name, d)
			}
		}
		if math.Abs(losses[2]-refLoss[2]) > equivTol {
			t.Errorf("%d devices: loss at step 3 %g, 1 device %g", n, losses[2], refLoss[2])
		}
	}
}

var _ = dtypes.Float32

// TestPureGoBackend runs the whole single-device workflow — Prepare, Step with Backward,
// Evaluate — on the pure-Go backend, which needs no plugin at all.
func TestPureGoBackend(t *testing.T) {
	t.Parallel()
	a, err := New(Config{Backend: "go", Quiet: true, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	losses, _ := trainToy(t, a, optimizer.Adam().LearningRate(0.01).Done(), 30)
	if losses[29] >= losses[0]*0.8 {
		t.Errorf("pure-Go training did not learn: loss %g -> %g", losses[0], losses[29])
	}
	x, y := toyData(10)
	job, err := a.Prepare(model.NewStore(), optimizer.Adam().Done(), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := job.Evaluate(&fixedSource{x: x, y: y, batch: 4}, job.EvalStep(func(s *model.Scope, b GraphBatch) []*Node {
		return []*Node{mlpLogits(s, b.Inputs[0])}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Len() != 10 {
		t.Errorf("evaluated %d examples, want 10", res.Len())
	}
}
