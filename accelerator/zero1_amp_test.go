package accelerator

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/gomlx/ml/model"
)

// worst is the largest loss and variable differences of got from ref, and the largest
// relative difference of their gradient norms.
func (got scaleRun) worst(ref scaleRun) (loss, param, norm float64) {
	for i := range ref.losses {
		loss = math.Max(loss, math.Abs(got.losses[i]-ref.losses[i]))
		norm = math.Max(norm, math.Abs(got.norms[i]-ref.norms[i])/math.Max(1, math.Abs(ref.norms[i])))
	}
	for name, p := range ref.params {
		param = math.Max(param, maxDiff(got.params[name], p))
	}
	return loss, param, norm
}

// differences lists how got differs from ref: losses, variables and gradient norms beyond
// tol, and any loss scale or skipped count that is not the same.
func (got scaleRun) differences(ref scaleRun, tol float64) []error {
	var errs []error
	for i := range ref.losses {
		if got.scales[i] != ref.scales[i] || got.skipped[i] != ref.skipped[i] {
			errs = append(errs, fmt.Errorf("update %d: loss scale %g, skipped %d; want %g, %d", i+1, got.scales[i], got.skipped[i], ref.scales[i], ref.skipped[i]))
		}
	}
	if loss, param, norm := got.worst(ref); loss > tol || param > tol || norm > tol {
		errs = append(errs, fmt.Errorf("max |loss diff| %g, max |param diff| %g, max relative gradient norm diff %g (tolerance %g)", loss, param, norm, tol))
	}
	return errs
}

// TestZero1MixedPrecision: under MixedPrecision "fp16" and "bf16", Config.Sharding "zero1" over
// 2 processes (loopback) trains the toy MLP for 10 Adam updates with clipping to the losses,
// gradient norms and variables of the unsharded run on the same 2 processes (within 2e-5), with
// the same loss scale after every update (fp16's growth interval shortened to 3, so it grows
// during the run), and every rank ends with the same variables, bit for bit. (Under mixed
// precision the gradients' rounding depends on each device's part of the batch, so the
// reference is the same layout unsharded.)
func TestZero1MixedPrecision(t *testing.T) {
	t.Parallel()
	for _, precision := range []string{"fp16", "bf16"} {
		t.Run(precision, func(t *testing.T) {
			if precision == "bf16" {
				testutil.Long(t, "zero1 in bf16 (tier 1: the fp16 case, with loss scaling, and TestMixedPrecisionTinyBERT's bf16)")
			}
			run := func(sharding string) []scaleRun {
				return runProcessesConfig(t, 2, 1, func(c *Config) { c.MixedPrecision, c.Sharding = precision, sharding }, nil,
					func(a *Accelerator) (scaleRun, error) {
						a.growthInterval = 3
						return fp16Run(a, 10, 0, "", "", WithClipGradNorm(0.5))
					})
			}
			ref, got := run("no"), run("zero1")
			for rank := range got {
				for _, err := range got[rank].differences(ref[rank], equivTol) {
					t.Errorf("%s zero1 rank %d vs unsharded: %v", precision, rank, err)
				}
				for name, p := range got[rank].params {
					if d := maxDiff(p, got[0].params[name]); d != 0 {
						t.Errorf("%s zero1: rank %d's %s differs from rank 0's by up to %g", precision, rank, name, d)
					}
				}
			}
			loss, param, norm := got[0].worst(ref[0])
			t.Logf("%s zero1 2x1, 10 updates: max |loss diff| %.2g, max |param diff| %.2g, max relative gradient norm diff %.2g from unsharded 2x1; ranks identical",
				precision, loss, param, norm)
			t.Logf("%s zero1 2x1: losses %.5f; loss scale after each update %v (unsharded %v), skipped %v",
				precision, got[0].losses, got[0].scales, ref[0].scales, got[0].skipped)
		})
	}
}

// TestZero1LossScaleSkip is TestLossScaleSkipAcrossProcesses under Config.Sharding "zero1":
// rank 1's gradient of update 3 is made +Inf before the reduce-scatter, in the slice that rank
// 0 reduces, so only rank 0's slice is not finite; both ranks must skip that update (the
// weights, the optimizer state of every rank's slices and the step counter unchanged, the
// scale halved, 1 update counted skipped), train on after it, and end identical.
func TestZero1LossScaleSkip(t *testing.T) {
	t.Parallel()
	lossScaleFault.rank, lossScaleFault.update = 2, 3 // rank 1, update 3
	defer func() { lossScaleFault.rank, lossScaleFault.update = 0, 0 }()
	res := runProcessesConfig(t, 2, 1, func(c *Config) { c.MixedPrecision, c.Sharding = "fp16", "zero1" }, withLossScaleFault,
		func(a *Accelerator) (scaleRun, error) {
			r, err := fp16Run(a, 5, 0, "", "")
			if err == nil && a.shardedState == nil {
				err = errors.New("the job has no sharded optimizer state: it did not run under zero1")
			}
			return r, err
		})
	for rank, r := range res {
		t.Logf("rank %d: losses %.5f, scale after each step %v, skipped %v", rank, r.losses, r.scales, r.skipped)
		for _, err := range r.skipProblems() {
			t.Errorf("rank %d: %v", rank, err)
		}
		for path, v := range r.final {
			if path != rngStatePath && res[0].final[path] != v {
				t.Errorf("rank %d's %s differs from rank 0's: %s, %s", rank, path, v, res[0].final[path])
			}
		}
		if r.final[optimizerStepPath] == r.after[optimizerStepPath] {
			t.Errorf("rank %d: the updates after the skipped one did not advance the optimizer's step (%s)", rank, r.final[optimizerStepPath])
		}
	}
}

// jobValues is storeValues of the job's Store and, under Config.Sharding over several
// processes, of its Store of this rank's slices (paths prefixed "shard:"): the optimizer
// state that lives only there.
func jobValues(a *Accelerator, store *model.Store) (map[string]string, error) {
	out, err := storeValues(store)
	if st := a.shardedState[store]; st != nil && err == nil {
		var shard map[string]string
		if shard, err = storeValues(st.Slices()); err == nil {
			for path, v := range shard {
				out["shard:"+path] = v
			}
		}
	}
	return out, err
}
