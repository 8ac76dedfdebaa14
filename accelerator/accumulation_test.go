package accelerator

import (
	"fmt"
	"math"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// tailRun trains the toy MLP on the first n examples at the given per-device batch for
// batches batches (with opts) and returns the trainable variables. weighted makes the loss a
// weighted mean (weights exp(x[:,0]) over the real examples) passed to BackwardWeighted with
// its weight.
func tailRun(a *Accelerator, n, perDevice, batches int, weighted bool, opt optimizer.Interface, opts ...PrepareOption) (map[string][]float32, error) {
	x, y := toyData(n)
	store := model.NewStore()
	job, err := a.Prepare(store, opt, &fixedSource{x: x, y: y, batch: perDevice}, opts...)
	if err != nil {
		return nil, err
	}
	train := job.TrainStep(func(s *model.Scope, b GraphBatch) *Node {
		logits := mlpLogits(s, b.Inputs[0])
		if !weighted {
			lv := CrossEntropy(logits, b.Labels, b.Mask)
			a.Backward(s, lv)
			return lv
		}
		w := Mul(Exp(Reshape(Slice(b.Inputs[0], AxisRange(), AxisElem(0)), -1)), ConvertDType(b.Mask, logits.DType()))
		total := ReduceAllSum(w)
		lv := Div(ReduceAllSum(Mul(PerExampleCrossEntropy(logits, b.Labels), w)), total)
		a.BackwardWeighted(s, lv, total)
		return lv
	})
	ran := 0
	for gb, err := range job.Batches() {
		if err != nil {
			return nil, err
		}
		if _, err := train.Run(gb); err != nil {
			return nil, err
		}
		if ran++; ran == batches {
			break
		}
	}
	if ran != batches {
		return nil, fmt.Errorf("the epoch had %d batches, want %d", ran, batches)
	}
	out := map[string][]float32{}
	for v := range store.IterVariables() {
		if v.Trainable {
			val, err := v.Value()
			if err != nil {
				return nil, err
			}
			out[v.Path()] = flatF32(val.Value())
		}
	}
	return out, nil
}

// TestAccumulationOverAnEpochTail: 11 examples at global batch 8 make a full batch and the
// epoch's tail (3 real examples of 8 slots); accumulating the two is one update, and it must be
// the update of one step on the 11 examples together (one batch of 16 slots, 5 of them
// padding), not the mean of the two batch means, which weighs the 3 tail examples as much as
// the 8 of the full batch. SGD, so the update is the gradient itself; in one process (1 and 2
// devices) and over 2 processes; with the masked-mean loss (Backward) and with a loss weighted
// per example (BackwardWeighted).
func TestAccumulationOverAnEpochTail(t *testing.T) {
	for _, weighted := range []bool{false, true} {
		t.Run(fmt.Sprintf("weighted=%v", weighted), func(t *testing.T) {
			want, err := tailRun(newXLA(t, 1), 11, 16, 1, weighted, sgd(0.5))
			if err != nil {
				t.Fatal(err)
			}
			check := func(layout string, got map[string][]float32) {
				t.Helper()
				worst := 0.0
				for name, p := range got {
					worst = math.Max(worst, maxDiff(p, want[name]))
				}
				if worst > equivTol {
					t.Errorf("%s: accumulating the full batch and the tail differs from one step on the 11 examples by %g (tolerance %g)",
						layout, worst, equivTol)
				}
				t.Logf("%s: max |param diff| %.2g from one step on the 11 examples", layout, worst)
			}
			for _, n := range []int{1, 2} {
				got, err := tailRun(newXLA(t, n), 11, 8/n, 2, weighted, sgd(0.5), WithGradientAccumulation(2))
				if err != nil {
					t.Fatal(err)
				}
				check(fmt.Sprintf("1 process x %d device(s)", n), got)
			}
			res := runProcesses(t, 2, 1, func(a *Accelerator) (map[string][]float32, error) {
				return tailRun(a, 11, 4, 2, weighted, sgd(0.5), WithGradientAccumulation(2))
			})
			for r, got := range res {
				check(fmt.Sprintf("2 processes x 1 device, rank %d", r), got)
			}
		})
	}
}
