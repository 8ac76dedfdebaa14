package trainer

import (
	"bytes"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// resumeTol is the largest difference allowed between a resumed run and an uninterrupted
// one, in the weights and in every logged number. The resumed run restores the exact
// weights, optimizer moments, random state and data position and runs the same compiled
// steps on the same devices, so the XLA CPU results are identical: the tolerance is 0.
const resumeTol = 0

var errCrash = errors.New("simulated crash")

// resumeRun trains the toy MLP, with dropout, on 4 devices for 3 epochs of 6 updates (12
// batches of 8, accumulation 2), with a cosine schedule, clipping, a checkpoint every 4 updates, a
// training record every 3 updates and an evaluation every epoch. crashAt > 0 makes a
// callback fail at that step, as a crash would. async saves the checkpoints in the background.
func resumeRun(t *testing.T, dir string, crashAt int64, async bool) (*Result, *model.Store, string, error) {
	t.Helper()
	acc := accOn(t, 4)
	store := model.NewStore()
	tr, err := New(acc, store, optimizer.Adam().Done(), toyDropoutTask(8, 0.2))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := tr.Fit(toyLoader(t, 96, 0, 2, true), toyLoader(t, 20, 500, 2, false), Config{
		OutputDir: dir, Epochs: 3, LearningRate: 0.03, Schedule: "cosine", WarmupSteps: 2, ClipGradNorm: 1,
		GradientAccumulation: 2, SaveEvery: 4, LogEvery: 3, BestMetric: "loss", Output: &out, AsyncSave: async,
		Callbacks: Callbacks{OnStep: func(e StepEvent) error {
			if e.Step == crashAt {
				return errCrash
			}
			return nil
		}},
	})
	return res, store, out.String(), err
}

func TestResumeEqualsUninterrupted(t *testing.T) { checkResumeEqualsUninterrupted(t, false) }

// TestResumeEqualsUninterruptedAsync: with the checkpoints saved in the background while the
// next steps run, the crashed session's checkpoint holds the state of its step (the resumed
// run is the uninterrupted one, to the bit), and Fit's error path waits for the save.
func TestResumeEqualsUninterruptedAsync(t *testing.T) { checkResumeEqualsUninterrupted(t, true) }

// checkResumeEqualsUninterrupted crashes a run at step 11 and resumes it; the result must be
// the uninterrupted run's (which saves synchronously).
func checkResumeEqualsUninterrupted(t *testing.T, async bool) {
	root := t.TempDir()
	full, fullStore, _, err := resumeRun(t, filepath.Join(root, "full"), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "resumed")
	// The first session crashes at step 11: the last checkpoint is at step 8 (mid-epoch 2),
	// and the training record of step 9 was written after it.
	if _, _, _, err := resumeRun(t, dir, 11, async); !errors.Is(err, errCrash) {
		t.Fatalf("first session: %v, want the simulated crash", err)
	}
	if recs := readRecords(t, dir); recs[len(recs)-1].Step != 9 {
		t.Fatalf("the crashed session's last record is at step %d, want 9", recs[len(recs)-1].Step)
	}
	res, store, out, err := resumeRun(t, dir, 0, async)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(res.Resumed, "ckpt-000000008") || !strings.Contains(out, "dropped 1 record(s)") {
		t.Errorf("resumed from %q; output:\n%s", res.Resumed, out)
	}
	if res.Steps != full.Steps || res.Steps != 18 {
		t.Errorf("resumed run ended at step %d, uninterrupted at %d, want 18", res.Steps, full.Steps)
	}
	want, got := readRecords(t, filepath.Join(root, "full")), readRecords(t, dir)
	if len(got) != len(want) {
		t.Fatalf("resumed metrics.jsonl has %d records, uninterrupted %d", len(got), len(want))
	}
	for i := range want {
		a, b := want[i], got[i]
		if a.Kind != b.Kind || a.Step != b.Step || a.Epoch != b.Epoch {
			t.Fatalf("record %d: resumed %s step %d epoch %g, uninterrupted %s step %d epoch %g (gap or repeat)",
				i, b.Kind, b.Step, b.Epoch, a.Kind, a.Step, a.Epoch)
		}
		for _, v := range [][2]float64{{a.Loss, b.Loss}, {a.LR, b.LR}, {a.GradNorm, b.GradNorm},
			{a.Eval["loss"], b.Eval["loss"]}, {a.Eval["accuracy"], b.Eval["accuracy"]}} {
			if !(math.IsNaN(v[0]) && math.IsNaN(v[1])) && math.Abs(v[0]-v[1]) > resumeTol {
				t.Errorf("record %d (%s step %d): resumed %v, uninterrupted %v", i, a.Kind, a.Step, v[1], v[0])
			}
		}
	}
	if d, where := maxAbsDiff(weights(t, store), weights(t, fullStore)); d > resumeTol {
		t.Errorf("final weights differ by %g at %s (tolerance %g)", d, where, float64(resumeTol))
	}
	if res.Best != full.Best || res.BestStep != full.BestStep {
		t.Errorf("best loss %g at step %d, uninterrupted %g at %d", res.Best, res.BestStep, full.Best, full.BestStep)
	}
}
