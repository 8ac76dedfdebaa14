package accelerator

import (
	"fmt"
	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"math"
	"strings"
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
	t.Parallel()
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
			devices := []int{1, 2}
			if testing.Short() { // tier 1: the 2-device layout and the 2 processes below
				devices = devices[1:]
			}
			for _, n := range devices {
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

// countingGroup counts the calls and floats of AllreduceSum (the gradients' all-reduce).
type countingGroup struct {
	collective.Group
	calls, floats int64
}

func (c *countingGroup) AllreduceSum(bufs [][]float32) error {
	c.calls++
	for _, b := range bufs {
		c.floats += int64(len(b))
	}
	return c.Group.AllreduceSum(bufs)
}

// TestOneAllreducePerUpdate: with accumulation 4 on 2 processes, 8 batches make 2 updates and
// the gradients cross processes twice, one update's bytes each time (counted on the group: the
// gradients and the 2 floats of the loss and its weight), which StepStats reports: SyncBytes
// per update, SyncedBytes in all (with the loss: 8 bytes in the update's buckets, 16 on each
// batch that only accumulates). Without accumulation, once per batch.
func TestOneAllreducePerUpdate(t *testing.T) {
	t.Parallel()
	for _, k := range []int{1, 4} {
		counters := make([]*countingGroup, 2)
		res := runProcessesWrapped(t, 2, 1, func(r int, g collective.Group) collective.Group {
			counters[r] = &countingGroup{Group: g}
			return counters[r]
		}, func(a *Accelerator) (StepStats, error) {
			x, y := toyData(64)
			job, err := a.Prepare(model.NewStore(), sgd(0.1), &fixedSource{x: x, y: y, batch: 4}, WithGradientAccumulation(k))
			if err != nil {
				return StepStats{}, err
			}
			train := job.TrainStep(func(s *model.Scope, b GraphBatch) *Node {
				lv := CrossEntropy(mlpLogits(s, b.Inputs[0]), b.Labels, b.Mask)
				a.Backward(s, lv)
				return lv
			})
			ran := 0
			for gb, err := range job.Batches() {
				if err != nil {
					return StepStats{}, err
				}
				if _, err := train.Run(gb); err != nil {
					return StepStats{}, err
				}
				if ran++; ran == 8 {
					break
				}
			}
			return train.Stats(), nil
		})
		const params = 8*16 + 16 + 16*3 + 3 // the toy MLP's variables
		updates := 8 / k
		for r, st := range res {
			c := counters[r]
			if c.calls != int64(updates) || c.floats != int64(updates*(params+2)) {
				t.Errorf("accumulation %d, rank %d: %d gradient all-reduces of %d floats in all over 8 batches; want %d of %d floats each",
					k, r, c.calls, c.floats, updates, params+2)
			}
			if st.Batches != 8 || st.Updates != updates || st.SyncBytes != 4*params || st.SyncedBytes != int64(updates*(4*params+8)+(8-updates)*16) {
				t.Errorf("accumulation %d, rank %d: stats %+v; want 8 batches, %d updates, SyncBytes %d, SyncedBytes %d",
					k, r, st, updates, 4*params, updates*(4*params+8)+(8-updates)*16)
			}
		}
		t.Logf("accumulation %d: %d gradient all-reduces of %d bytes over 8 batches (StepStats %+v)", k, counters[0].calls, 4*params, res[0])
	}
}

// TestBackwardWeightedBadWeight: a weight that is not a scalar, or nil, is an error of the
// step naming BackwardWeighted, not a wrong update.
func TestBackwardWeightedBadWeight(t *testing.T) {
	t.Parallel()
	a := newXLA(t, 1)
	x, y := toyData(8)
	job, err := a.Prepare(model.NewStore(), sgd(0.1), &fixedSource{x: x, y: y, batch: 8})
	if err != nil {
		t.Fatal(err)
	}
	for name, weight := range map[string]func(b GraphBatch) *Node{
		"per-example weights": func(b GraphBatch) *Node { return ConvertDType(b.Mask, b.Inputs[0].DType()) },
		"nil":                 func(GraphBatch) *Node { return nil },
	} {
		train := job.TrainStep(func(s *model.Scope, b GraphBatch) *Node {
			lv := CrossEntropy(mlpLogits(s, b.Inputs[0]), b.Labels, b.Mask)
			a.BackwardWeighted(s, lv, weight(b))
			return lv
		})
		for gb, err := range job.Batches() {
			if err != nil {
				t.Fatal(err)
			}
			if _, err := train.Run(gb); err == nil || !strings.Contains(err.Error(), "BackwardWeighted: the weight") {
				t.Errorf("%s: %v; want an error naming BackwardWeighted's weight", name, err)
			}
			break
		}
	}
}

// TestAccumulationFirstBatchRerun: when the first batch creates variables that differ between
// processes (here each rank seeds its initialisation differently), the variables are made rank
// 0's and the batch runs again; what the first run added to the gradient accumulators must not
// count twice. With accumulation 2 over 2 processes the update then equals 1 process's with
// rank 0's seed.
func TestAccumulationFirstBatchRerun(t *testing.T) {
	t.Parallel()
	want, err := tailRun(newXLA(t, 1), 11, 8, 2, false, sgd(0.5), WithGradientAccumulation(2))
	if err != nil {
		t.Fatal(err)
	}
	res := runProcesses(t, 2, 1, func(a *Accelerator) (map[string][]float32, error) {
		a.seed += int64(a.ProcessIndex()) // rank 1 initialises other values
		return tailRun(a, 11, 4, 2, false, sgd(0.5), WithGradientAccumulation(2))
	})
	for r, got := range res {
		worst := 0.0
		for name, p := range got {
			worst = math.Max(worst, maxDiff(p, want[name]))
		}
		if worst > equivTol {
			t.Errorf("rank %d: max |param diff| %g from 1 process (tolerance %g)", r, worst, equivTol)
		}
	}
}
