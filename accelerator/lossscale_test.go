package accelerator

import (
	"errors"
	"fmt"
	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/accelerator/internal/precision"
	"github.com/goaccel/goaccel/checkpoint"
	"github.com/goaccel/goaccel/internal/testutil"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// storeValues prints every variable of store that has a value (exactly: fmt's shortest
// representation round-trips), by path.
func storeValues(store *model.Store) (map[string]string, error) {
	out := map[string]string{}
	for v := range store.IterVariables() {
		if !v.HasValue() {
			continue
		}
		t, err := v.Value()
		if err != nil {
			return nil, err
		}
		out[v.Path()] = fmt.Sprint(t.Value())
	}
	return out, nil
}

// scaleRun is one process's fp16 run of the toy MLP.
type scaleRun struct {
	losses        []float64
	before, after map[string]string // the variables before and after the faulty update (jobValues)
	final         map[string]string
	scales        []float64 // the loss scale after each step
	skipped       []int64   // skipped updates after each step
	norms         []float64 // the gradient norm of each step (with WithClipGradNorm)
	params        map[string][]float32
	restoredScale float64 // the scale read back from the checkpoint (resumed runs)
}

// fp16Run trains the toy MLP under a's MixedPrecision (fp16 for the loss scaling) for steps
// steps on a with opts, from the checkpoint in load when not "", saving one after step saveAt
// into save (when not "").
func fp16Run(a *Accelerator, steps, saveAt int, save, load string, opts ...PrepareOption) (scaleRun, error) {
	var r scaleRun
	x, y := toyData(48)
	store := model.NewStore()
	if load != "" {
		mgr, err := checkpoint.NewManager(filepath.Dir(load), checkpoint.Options{Logf: func(string, ...any) {}})
		if err != nil {
			return r, err
		}
		if err := mgr.Load(load, &checkpoint.State{Store: store}); err != nil {
			return r, err
		}
	}
	job, err := a.Prepare(store, optimizer.Adam().LearningRate(0.01).Done(), &fixedSource{x: x, y: y, batch: 16 / a.NumReplicas()}, opts...)
	if err != nil {
		return r, err
	}
	if load != "" {
		if r.restoredScale, _, err = job.LossScale(); err != nil {
			return r, err
		}
	}
	train := job.TrainStep(func(s *model.Scope, b GraphBatch) *Node {
		lv := CrossEntropy(mlpLogits(s, b.Inputs[0]), b.Labels, b.Mask)
		a.Backward(s, lv)
		return lv
	})
	for len(r.losses) < steps {
		for gb, err := range job.Batches() {
			if err != nil {
				return r, err
			}
			if len(r.losses)+1 == lossScaleFault.update {
				if r.before, err = jobValues(a, store); err != nil {
					return r, err
				}
			}
			l, err := train.Run(gb)
			if err != nil {
				return r, err
			}
			lv, err := l.Value()
			if err != nil {
				return r, err
			}
			r.losses = append(r.losses, lv)
			scale, skipped, err := job.LossScale()
			if err != nil {
				return r, err
			}
			r.scales, r.skipped = append(r.scales, scale), append(r.skipped, skipped)
			if job.opts.clipNorm > 0 {
				norm, err := job.GradNorm()
				if err != nil {
					return r, err
				}
				r.norms = append(r.norms, norm)
			}
			if len(r.losses) == lossScaleFault.update {
				if r.after, err = jobValues(a, store); err != nil {
					return r, err
				}
			}
			if len(r.losses) == saveAt && save != "" {
				mgr, err := checkpoint.NewManager(save, checkpoint.Options{Logf: func(string, ...any) {}})
				if err != nil {
					return r, err
				}
				if _, err := mgr.Save(&checkpoint.State{Store: store, Progress: checkpoint.Progress{Step: int64(saveAt)}}); err != nil {
					return r, err
				}
			}
			if len(r.losses) == steps {
				break
			}
		}
	}
	if r.final, err = storeValues(store); err != nil {
		return r, err
	}
	r.params, err = trainableValues(store)
	return r, err
}

// skipProblems lists what is wrong with a run whose update 3 had a non-finite gradient
// (lossScaleFault): the scale must be halved and 1 update counted skipped from update 3 on,
// and no variable but the loss scaler's changed by that update.
func (r scaleRun) skipProblems() []error {
	var errs []error
	if r.scales[1] != precision.InitScale || r.scales[2] != precision.InitScale*precision.BackoffFactor || r.skipped[1] != 0 || r.skipped[2] != 1 || r.skipped[len(r.skipped)-1] != 1 {
		errs = append(errs, fmt.Errorf("scales %v, skipped %v: want the scale halved and 1 skip at update 3 only", r.scales, r.skipped))
	}
	for path, v := range r.after {
		if !precision.FP16.Scaler(internalScope, 1).Holds(path) && r.before[path] != v {
			errs = append(errs, fmt.Errorf("the skipped update changed %s: %s -> %s", path, r.before[path], v))
		}
	}
	if len(r.before) != len(r.after) {
		errs = append(errs, fmt.Errorf("%d variables before the skipped update, %d after", len(r.before), len(r.after)))
	}
	return errs
}

// lossScaleWorker is a rank of TestLossScaleSkipOverMPI: rank 1's gradients of update 3 are
// made Inf; every rank must skip that update.
func lossScaleWorker(a *Accelerator) error {
	if _, ok := a.grp.(*collective.MPI); !ok {
		return fmt.Errorf("rank %d is not in an MPI group but in a %T", a.ProcessIndex(), a.grp)
	}
	lossScaleFault.rank, lossScaleFault.update = 2, 3
	a.grp = withLossScaleFault(a.ProcessIndex(), a.grp)
	r, err := fp16Run(a, 4, 0, "", "")
	if err != nil {
		return err
	}
	if errs := r.skipProblems(); len(errs) > 0 {
		return fmt.Errorf("rank %d: %w", a.ProcessIndex(), errors.Join(errs...))
	}
	fmt.Printf("rank %d: scale after each step %v, skipped %v\n", a.ProcessIndex(), r.scales, r.skipped)
	return nil
}

// TestLossScaleSkipOverMPI is TestLossScaleSkipAcrossProcesses's skip over real MPI (MPICH's
// MPI_Allreduce): the sum of an Inf is Inf on every rank, so every rank skips.
func TestLossScaleSkipOverMPI(t *testing.T) {
	testutil.Long(t, "fp16 loss-scale skips over a real MPI launch (tier 1: TestLossScaleSkipAcrossProcesses over in-process ranks)")
	t.Parallel()
	testutil.NeedMPI(t)
	err, out := launchWorkers(t, "lossscale", 2, 2, "GOACCEL_TIMEOUT=2m", "GOACCEL_MIXED_PRECISION=fp16")
	if err != nil {
		t.Fatalf("launch: %v\n%s", err, out)
	}
	for _, rank := range []string{"rank 0: scale", "rank 1: scale"} {
		if !strings.Contains(out, rank) {
			t.Errorf("no %q line in the ranks' output:\n%s", rank, out)
		}
	}
	t.Logf("%s", out)
}

// TestLossScaleSkipAcrossProcesses: under fp16 over 2 processes, an Inf injected into rank
// 1's gradients at update 3 makes both processes skip that update (every variable, the
// optimizer's state included, unchanged; the scale halved; the skipped count 1), since the
// all-reduced sum is Inf on every rank; a run resumed from a checkpoint saved after that
// update restores the scale exactly and then equals the uninterrupted run.
func TestLossScaleSkipAcrossProcesses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lossScaleFault.rank, lossScaleFault.update = 2, 3 // rank 1, update 3
	fp16 := func(c *Config) { c.MixedPrecision = "fp16" }
	full := runProcessesConfig(t, 2, 1, fp16, withLossScaleFault, func(a *Accelerator) (scaleRun, error) {
		return fp16Run(a, 6, 3, filepath.Join(dir, fmt.Sprintf("rank%d", a.ProcessIndex())), "")
	})
	lossScaleFault.rank, lossScaleFault.update = 0, 0
	for rank, r := range full {
		t.Logf("rank %d: losses %.5f, scale after each step %v, skipped %v", rank, r.losses, r.scales, r.skipped)
		for _, err := range r.skipProblems() {
			t.Errorf("rank %d: %v", rank, err)
		}
		for path, v := range r.final {
			if path != rngStatePath && full[0].final[path] != v { // the random state is each process's own
				t.Errorf("rank %d's %s differs from rank 0's", rank, path)
			}
		}
	}
	if full[0].final[optimizerStepPath] == full[0].after[optimizerStepPath] {
		t.Errorf("the updates after the skipped one did not advance the optimizer's step (%s)", full[0].final[optimizerStepPath])
	}
	resumed := runProcessesConfig(t, 2, 1, fp16, nil, func(a *Accelerator) (scaleRun, error) {
		ckpt := filepath.Join(dir, fmt.Sprintf("rank%d", a.ProcessIndex()))
		mgr, err := checkpoint.NewManager(ckpt, checkpoint.Options{})
		if err != nil {
			return scaleRun{}, err
		}
		return fp16Run(a, 3, 0, "", mgr.PathFor(3))
	})
	for rank, r := range resumed {
		if r.restoredScale != full[rank].scales[2] {
			t.Errorf("rank %d: resumed with loss scale %g, saved %g", rank, r.restoredScale, full[rank].scales[2])
		}
		for i, l := range r.losses {
			if l != full[rank].losses[3+i] {
				t.Errorf("rank %d: resumed step %d: loss %g, uninterrupted %g", rank, 4+i, l, full[rank].losses[3+i])
			}
		}
		for path, v := range full[rank].final {
			// Prepare seeds the random state after the checkpoint was loaded (the trainer
			// loads after Prepare); this model draws no random numbers.
			if path != rngStatePath && r.final[path] != v {
				t.Errorf("rank %d: after the resumed run %s = %s, uninterrupted %s", rank, path, r.final[path], v)
			}
		}
	}
	t.Logf("resumed: scale %g restored; losses of steps 4-6 %.5f (uninterrupted %.5f)", resumed[0].restoredScale, resumed[0].losses, full[0].losses[3:])
}

// rngStatePath is the path of GoMLX's random state variable.
const rngStatePath = "/#rngState"

// optimizerStepPath is the path of GoMLX's optimizer step counter.
const optimizerStepPath = "/" + optimizer.GlobalStepVariableName

// TestLossScaleBacksOffOnOverflow: in one process (the in-graph strategy), with gradient
// accumulation over 2 batches, a loss 1000 times the cross-entropy makes the scaled fp16
// gradients overflow at the first updates: those are skipped (the check is at the update,
// the 2nd batch), the scale halves until they fit, and the run then trains with finite
// variables.
func TestLossScaleBacksOffOnOverflow(t *testing.T) {
	t.Parallel()
	a := newPrecision(t, "fp16")
	x, y := toyData(64)
	job, err := a.Prepare(model.NewStore(), optimizer.Adam().LearningRate(0.001).Done(), &fixedSource{x: x, y: y, batch: 8},
		WithGradientAccumulation(2))
	if err != nil {
		t.Fatal(err)
	}
	train := job.TrainStep(func(s *model.Scope, b GraphBatch) *Node {
		lv := MulScalar(CrossEntropy(mlpLogits(s, b.Inputs[0]), b.Labels, b.Mask), 1000)
		a.Backward(s, lv)
		return lv
	})
	var scales []float64
	var skips []int64
	runBatches(t, job, train, 24, func(float64) {
		scale, skipped, err := job.LossScale()
		if err != nil {
			t.Fatal(err)
		}
		scales, skips = append(scales, scale), append(skips, skipped)
	})
	t.Logf("loss scale after each batch %v; skipped updates %v", scales, skips)
	last := len(skips) - 1
	if skips[0] != 0 || skips[1] == 0 || skips[last] != skips[last-2] || scales[last] >= precision.InitScale {
		t.Errorf("scales %v, skips %v: want skips at the first updates only (counted at the 2nd batch of each), the scale lowered", scales, skips)
	}
	for i := 2; i <= last; i += 2 { // batches 3, 5, ... only accumulate
		if scales[i] != scales[i-1] {
			t.Errorf("the scale changed on a batch that only accumulates (batch %d): %v", i+1, scales)
		}
	}
	vals, err := storeValues(job.Store())
	if err != nil {
		t.Fatal(err)
	}
	for path, v := range vals {
		if strings.Contains(v, "NaN") || strings.Contains(v, "Inf") {
			t.Errorf("%s is not finite after the run: %s", path, v)
		}
	}
}

// TestLossScaleGrows: after the growth interval's finite updates in a row the scale
// doubles (PyTorch GradScaler's growth, with the interval shortened to 3 here).
func TestLossScaleGrows(t *testing.T) {
	t.Parallel()
	a := newPrecision(t, "fp16")
	a.growthInterval = 3
	r, err := fp16Run(a, 7, 0, "", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("scale after each update %v, skipped %v", r.scales, r.skipped)
	want := []float64{1, 1, 2, 2, 2, 4, 4}
	for i, w := range want {
		if r.scales[i] != w*precision.InitScale || r.skipped[i] != 0 {
			t.Fatalf("scales %v, skipped %v: want %v x 2^16 and no skip", r.scales, r.skipped, want)
		}
	}
}
