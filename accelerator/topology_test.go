package accelerator

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/testutil"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// The program of the topology tests: one set of flags, run unchanged on every layout of
// processes x devices. Global batch 16 over a dataset of 203 examples (13 batches an epoch, the
// last one 11 real examples of 16), shuffled, gradient accumulation 2, clipping at 0.5, Adam,
// no dropout, 30 updates (60 batches, across epoch boundaries and tails).
//
// The loader's GlobalBatchSize is 16 whatever the layout: each replica gets its share (on 3
// devices 6+6+4, the last share with 2 masked slots).
const (
	topoExamples = 203
	topoGlobal   = 16
	topoAccum    = 2
	topoUpdates  = 30
)

// topoRun runs the topology tests' program on a and returns the loss of every batch, the
// final trainable variables and the step's stats.
func topoRun(a *Accelerator) (toyResult, StepStats, error) {
	x, y := toyData(topoExamples)
	loader, err := data.NewLoader[toyPoint](toyPoints(x, y), data.LoaderConfig[toyPoint]{
		GlobalBatchSize: topoGlobal, Shuffle: true, Seed: 3, Collate: collateToyPoints})
	if err != nil {
		return toyResult{}, StepStats{}, err
	}
	store := model.NewStore()
	job, err := a.Prepare(store, optimizer.Adam().LearningRate(0.01).Done(), loader,
		WithGradientAccumulation(topoAccum), WithClipGradNorm(0.5))
	if err != nil {
		return toyResult{}, StepStats{}, err
	}
	train := job.TrainStep(func(s *model.Scope, b GraphBatch) *Node {
		lv := CrossEntropy(mlpLogits(s, b.Inputs[0]), b.Labels, b.Mask)
		a.Backward(s, lv)
		return lv
	})
	var res toyResult
	for len(res.losses) < topoUpdates*topoAccum {
		for gb, err := range job.Batches() {
			if err != nil {
				return toyResult{}, StepStats{}, err
			}
			l, err := train.Run(gb)
			if err != nil {
				return toyResult{}, StepStats{}, err
			}
			lv, err := l.Value()
			if err != nil {
				return toyResult{}, StepStats{}, err
			}
			if res.losses = append(res.losses, lv); len(res.losses) == topoUpdates*topoAccum {
				break
			}
		}
	}
	res.params = map[string][]float32{}
	for v := range store.IterVariables() {
		if v.Trainable {
			val, err := v.Value()
			if err != nil {
				return toyResult{}, StepStats{}, err
			}
			res.params[v.Path()] = flatF32(val.Value())
		}
	}
	return res, train.Stats(), nil
}

// compareTopology checks one layout's ranks against the 1x1 run: every batch's loss and the
// final variables within equivTol, and every rank identical to rank 0.
func compareTopology(t *testing.T, layout string, ref toyResult, ranks []toyResult) {
	t.Helper()
	worstLoss, worstParam := 0.0, 0.0
	for r, got := range ranks {
		if len(got.losses) != len(ref.losses) {
			t.Fatalf("%s rank %d: %d losses, want %d", layout, r, len(got.losses), len(ref.losses))
		}
		for i := range got.losses {
			worstLoss = math.Max(worstLoss, math.Abs(got.losses[i]-ref.losses[i]))
			if got.losses[i] != ranks[0].losses[i] {
				t.Errorf("%s: rank %d's loss of batch %d is %.9g, rank 0's %.9g", layout, r, i+1, got.losses[i], ranks[0].losses[i])
			}
		}
		for name, p := range ref.params {
			worstParam = math.Max(worstParam, maxDiff(got.params[name], p))
			if d := maxDiff(got.params[name], ranks[0].params[name]); d != 0 {
				t.Errorf("%s: rank %d's %s differs from rank 0's by %g", layout, r, name, d)
			}
		}
	}
	if worstLoss > equivTol || worstParam > equivTol {
		t.Errorf("%s: max |loss diff| %g, max |param diff| %g from 1x1 (tolerance %g)", layout, worstLoss, worstParam, equivTol)
	}
	t.Logf("%s: %d updates; max |loss diff| %.2g, max |param diff| %.2g from 1x1", layout, topoUpdates, worstLoss, worstParam)
}

// TestSameRunOnEveryTopology: the program above on 1x1, 1x2, 1x3, 1x4 (processes x devices) and on
// 2x1 and 2x2 (loopback processes) computes the same losses and variables (TestSameRunOverMPI
// runs 2x1 and 2x2 as real processes).
func TestSameRunOnEveryTopology(t *testing.T) {
	t.Parallel()
	ref, _, err := topoRun(newXLA(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	if ref.losses[len(ref.losses)-1] >= ref.losses[0] {
		t.Fatalf("the toy model did not learn: loss %g -> %g", ref.losses[0], ref.losses[len(ref.losses)-1])
	}
	devices, ranks := []int{2, 3, 4}, []int{1, 2}
	if testing.Short() { // tier 1: 3 devices (masked shares) and 2 processes x 2 devices; all in make test-all
		devices, ranks = []int{3}, []int{2}
	}
	for _, n := range devices {
		got, _, err := topoRun(newXLA(t, n))
		if err != nil {
			t.Fatal(err)
		}
		compareTopology(t, fmt.Sprintf("1x%d", n), ref, []toyResult{got})
	}
	for _, devices := range ranks {
		ranks := runProcesses(t, 2, devices, func(a *Accelerator) (toyResult, error) {
			res, _, err := topoRun(a)
			return res, err
		})
		compareTopology(t, fmt.Sprintf("2x%d (loopback)", devices), ref, ranks)
	}
}

// TestSameRunOverMPI is TestSameRunOnEveryTopology's 2x1 and 2x2 as real processes, MPI
// between them, and 2x2 again with GOACCEL_VERIFY=1 set for the launched program (every update
// checked against one device on rank 0).
func TestSameRunOverMPI(t *testing.T) {
	t.Parallel()
	testutil.NeedMPI(t)
	ref, _, err := topoRun(newXLA(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	layouts := []struct{ devices, verify int }{{1, 0}, {2, 0}, {2, 1}}
	if testing.Short() { // tier 1: 2 x 2 with every update verified; 2 x 1 and 2 x 2 unverified in make test-all
		layouts = layouts[2:]
	}
	for _, c := range layouts {
		t.Run(fmt.Sprintf("2x%d, verify %d", c.devices, c.verify), func(t *testing.T) {
			dir := t.TempDir()
			start := time.Now()
			err, out := launchWorkers(t, "topology", 2, 2*c.devices, workerOut+"="+dir, "GOACCEL_TIMEOUT=3m",
				fmt.Sprintf("%s=%d", envvar.Verify.Name, c.verify))
			if err != nil {
				t.Fatalf("launch 2x%d (GOACCEL_VERIFY=%d): %v\n%s", c.devices, c.verify, err, out)
			}
			ranks := make([]toyResult, 2)
			for r := range ranks {
				var res topoResult
				readRankResult(t, dir, r, out, &res)
				ranks[r] = toyResult{res.Losses, res.Params}
				if res.Devices != c.devices || res.Verify != c.verify {
					t.Errorf("rank %d ran on %d devices with Verify %d, want %d and %d", r, res.Devices, res.Verify, c.devices, c.verify)
				}
				want := int64(topoUpdates)*(res.Stats.SyncBytes+8) + int64(16*topoUpdates*(topoAccum-1))
				if res.Stats.SyncBytes == 0 || res.Stats.Updates != topoUpdates || res.Stats.SyncedBytes != want {
					t.Errorf("rank %d all-reduced %d bytes in %d updates of %d gradient bytes; want one all-reduce of the "+
						"gradients per update and the loss of each batch: %d bytes", r, res.Stats.SyncedBytes,
						res.Stats.Updates, res.Stats.SyncBytes, want)
				}
			}
			compareTopology(t, fmt.Sprintf("2x%d (MPI, GOACCEL_VERIFY=%d, %s)", c.devices, c.verify, time.Since(start).Round(time.Millisecond)), ref, ranks)
		})
	}
}

// topoResult is what a rank of the "topology" worker writes.
type topoResult struct {
	Devices int
	Verify  int
	Losses  []float64
	Params  map[string][]float32
	Stats   StepStats
}

// topologyWorker is a rank of TestSameRunOverMPI.
func topologyWorker(a *Accelerator) error {
	res, st, err := topoRun(a)
	if err != nil {
		return err
	}
	return writeRankResult(a, topoResult{Devices: a.NumDevices(), Verify: a.verify, Losses: res.losses, Params: res.params, Stats: st})
}
