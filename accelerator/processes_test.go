package accelerator

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// toyResult is one process's run of the toy model.
type toyResult struct {
	losses []float64
	params map[string][]float32
}

// TestEquivalenceAcrossProcesses checks the core promise over processes, in one test process
// (goroutines joined by a loopback group stand in for MPI): 2 processes x 2 devices with Adam
// and 4 x 1 with plain SGD (whose step would quadruple if gradients were summed, not
// averaged) compute the losses and final variables of 1 process x 1 device at the same global
// batch, and every process ends with the same variables.
func TestEquivalenceAcrossProcesses(t *testing.T) {
	t.Parallel()
	// (TestEquivalenceOverMPI runs the full 30 steps on both layouts with real processes.)
	opts := []struct {
		name    string
		opt     func() optimizer.Interface
		steps   int
		layouts []struct{ procs, devices int }
	}{
		{"adam", func() optimizer.Interface { return optimizer.Adam().LearningRate(0.01).Done() }, 10,
			[]struct{ procs, devices int }{{2, 2}}},
		{"sgd", func() optimizer.Interface { return sgd(0.5) }, 3, []struct{ procs, devices int }{{4, 1}}},
	}
	for _, o := range opts {
		t.Run(o.name, func(t *testing.T) {
			refLoss, refParams := trainToy(t, newXLA(t, 1), o.opt(), o.steps)
			for _, layout := range o.layouts {
				res := runProcesses(t, layout.procs, layout.devices, func(a *Accelerator) (toyResult, error) {
					l, p, err := toyRun(a, o.opt(), o.steps)
					return toyResult{l, p}, err
				})
				worstLoss, worstParam := 0.0, 0.0
				for r, got := range res {
					for i := range got.losses {
						worstLoss = math.Max(worstLoss, math.Abs(got.losses[i]-refLoss[i]))
					}
					for name, p := range got.params {
						worstParam = math.Max(worstParam, maxDiff(p, refParams[name]))
						if d := maxDiff(p, res[0].params[name]); d != 0 {
							t.Errorf("%dx%d: rank %d's %s differs from rank 0's by %g: the processes drifted apart",
								layout.procs, layout.devices, r, name, d)
						}
					}
				}
				if worstLoss > equivTol || worstParam > equivTol {
					t.Errorf("%d processes x %d devices: max |loss diff| %g, max |param diff| %g from 1x1 (tolerance %g)",
						layout.procs, layout.devices, worstLoss, worstParam, equivTol)
				}
				t.Logf("%d processes x %d devices, %d steps: max |loss diff| %.2g, max |param diff| %.2g from 1 process x 1 device",
					layout.procs, layout.devices, o.steps, worstLoss, worstParam)
			}
		})
	}
}

// rowsResult is one process's gathered evaluation: dataset indices and the first output.
type rowsResult struct {
	indices []int
	values  []float64
}

// TestGatherAcrossProcesses: evaluation over 2 processes x 2 devices returns, on every
// process, each real example exactly once and in order — 10 examples at per-device batch 2
// (16 slots, 6 of them padding), and an 11-example stream (streams are dealt round-robin).
func TestGatherAcrossProcesses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		n      int
		stream bool
	}{{"10 examples, batch 2", 10, false}, {"stream of 11", 11, true}} {
		t.Run(c.name, func(t *testing.T) {
			x, y := toyData(c.n)
			res := runProcesses(t, 2, 2, func(a *Accelerator) (rowsResult, error) {
				job, err := a.Prepare(model.NewStore(), optimizer.Adam().Done(), nil)
				if err != nil {
					return rowsResult{}, err
				}
				var src data.Source = &fixedSource{x: x, y: y, batch: 2}
				if c.stream {
					src, err = data.NewStreamLoader[toyPoint](toyPoints(x, y), data.LoaderConfig[toyPoint]{BatchSize: 2,
						Collate: collateToyPoints})
					if err != nil {
						return rowsResult{}, err
					}
				}
				g, err := job.Evaluate(src, job.EvalStep(func(s *model.Scope, b GraphBatch) []*Node {
					return []*Node{Reshape(Slice(b.Inputs[0], AxisRange(), AxisElem(0)), -1)}
				}))
				if err != nil {
					return rowsResult{}, err
				}
				vals, err := g.Floats(0)
				return rowsResult{g.Indices, vals}, err
			})
			for r, got := range res {
				if !slices.Equal(got.indices, seqInts(c.n)) {
					t.Errorf("rank %d gathered indices %v, want 0..%d once each, in order", r, got.indices, c.n-1)
				}
				for i, v := range got.values {
					if float32(v) != x[i][0] {
						t.Errorf("rank %d row %d: %g, want %g", r, i, v, x[i][0])
					}
				}
			}
		})
	}
}

// TestVariablesBroadcastFromRankZero: variables that differ between processes before
// training (here: set by hand on rank 1) are made rank 0's by Prepare, as DDP broadcasts the
// parameters; processes that build different models get an error naming the variable on every
// process, not a hang.
func TestVariablesBroadcastFromRankZero(t *testing.T) {
	t.Parallel()
	res := runProcesses(t, 2, 1, func(a *Accelerator) ([]float32, error) {
		store := model.NewStore()
		store.RootScope().VariableWithValue("w", []float32{float32(a.ProcessIndex() + 1), 5})
		if _, err := a.Prepare(store, optimizer.Adam().Done(), nil); err != nil {
			return nil, err
		}
		v, err := store.GetVariable("/w").Value()
		if err != nil {
			return nil, err
		}
		return flatF32(v.Value()), nil
	})
	for r, got := range res {
		if !slices.Equal(got, []float32{1, 5}) {
			t.Errorf("rank %d: w = %v after Prepare, want rank 0's [1 5]", r, got)
		}
	}

	errs := runProcesses(t, 2, 1, func(a *Accelerator) (error, error) {
		store := model.NewStore()
		store.RootScope().VariableWithValue("w", make([]float32, 2+a.ProcessIndex()))
		_, err := a.Prepare(store, optimizer.Adam().Done(), nil)
		return err, nil
	})
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "different models") || !strings.Contains(err.Error(), "/w") {
			t.Errorf("rank %d: got %v, want an error naming /w", r, err)
		}
	}
}
