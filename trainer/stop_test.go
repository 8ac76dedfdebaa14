package trainer

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// scriptedTask is the toy task whose evaluation reports a scripted "score" (the n-th
// evaluation gets scores[n]), so that early stopping can be checked exactly.
func scriptedTask(scores []float64, evals *int) Task {
	task := toyTask(4)
	task.Metrics = func(g *accelerator.Gathered) (map[string]float64, error) {
		v := scores[min(*evals, len(scores)-1)]
		*evals++
		return map[string]float64{"score": v}, nil
	}
	task.MetricNames = []string{"score"}
	return task
}

func TestEarlyStopping(t *testing.T) {
	cases := []struct {
		name      string
		scores    []float64
		mode      string
		patience  int
		minDelta  float64
		wantEpoch int // epochs run (one evaluation per epoch)
		wantBest  float64
	}{
		// Improvements at epochs 1 and 2; 3 and 4 do not improve: stop after epoch 4.
		{"max, equal is no improvement", []float64{0.5, 0.6, 0.6, 0.55, 0.9}, "max", 2, 0, 4, 0.6},
		// With min_delta 0.05, 0.62 and 0.64 do not count as improvements over 0.6.
		{"max with min delta", []float64{0.5, 0.6, 0.62, 0.64, 0.9}, "max", 2, 0.05, 4, 0.6},
		{"min, patience 1", []float64{3, 2, 2.5, 1}, "min", 1, 0, 3, 2},
		{"never triggers", []float64{1, 2, 3, 4, 5, 6}, "max", 2, 0, 6, 6},
	}
	acc := accOn(t, 1)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evals, epochsEnded := 0, 0
			tr, err := New(acc, model.NewStore(), optimizer.Adam().Done(), scriptedTask(c.scores, &evals))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			res, err := tr.Fit(toyLoader(t, 16, 0, 8, false), toyLoader(t, 8, 100, 8, false), Config{
				OutputDir: filepath.Join(t.TempDir(), "run"), Epochs: 6, LearningRate: 0.01, BestMetric: "score",
				BestMode: c.mode, Patience: c.patience, MinDelta: c.minDelta, Output: &out, DisableCheckpoints: true,
				Callbacks: Callbacks{OnEpochEnd: func(EpochEvent) error { epochsEnded++; return nil }},
			})
			if err != nil {
				t.Fatal(err)
			}
			if epochsEnded != c.wantEpoch || evals != c.wantEpoch || res.Steps != int64(2*c.wantEpoch) {
				t.Errorf("ran %d epochs (%d evals, %d steps), want %d", epochsEnded, evals, res.Steps, c.wantEpoch)
			}
			stopped := strings.HasPrefix(res.StopReason, "early stopping")
			if stopped != (c.wantEpoch < 6) {
				t.Errorf("stop reason %q", res.StopReason)
			}
			if res.Best != c.wantBest {
				t.Errorf("best %g, want %g", res.Best, c.wantBest)
			}
			if stopped && !strings.Contains(out.String(), "early stopping: score did not improve") {
				t.Errorf("output does not say why training stopped:\n%s", out.String())
			}
		})
	}
}

func TestCallbackStopAndAbort(t *testing.T) {
	acc := accOn(t, 1)
	dir := filepath.Join(t.TempDir(), "run")
	fitWith := func(cb Callbacks) (*Result, error) {
		tr, err := New(acc, model.NewStore(), optimizer.Adam().Done(), toyTask(4))
		if err != nil {
			t.Fatal(err)
		}
		return tr.Fit(toyLoader(t, 32, 0, 4, true), nil, Config{OutputDir: dir, Epochs: 3, LearningRate: 0.01,
			LogEvery: 2, Output: &bytes.Buffer{}, Callbacks: cb})
	}
	// ErrStop ends the run cleanly at step 5 with a checkpoint there.
	res, err := fitWith(Callbacks{OnStep: func(e StepEvent) error {
		if e.Step == 5 {
			return ErrStop
		}
		return nil
	}})
	if err != nil || res.Steps != 5 || res.StopReason != "callback" || !strings.HasSuffix(res.LastCheckpoint, "ckpt-000000005") {
		t.Fatalf("ErrStop: %+v, %v", res, err)
	}
	before := snapshot(t, dir)
	// Given again, the stopped run is complete: nothing runs and nothing changes.
	steps := 0
	res, err = fitWith(Callbacks{OnStep: func(StepEvent) error { steps++; return nil }})
	if err != nil || res.StopReason != "already complete" || steps != 0 {
		t.Fatalf("re-running a stopped run: %+v %v (%d steps)", res, err, steps)
	}
	if after := snapshot(t, dir); !sameFiles(before, after) {
		t.Errorf("re-running a complete run changed its directory")
	}
	// Any other error aborts at once and is returned.
	boom := errors.New("boom")
	dir2 := filepath.Join(t.TempDir(), "run2")
	tr, _ := New(acc, model.NewStore(), optimizer.Adam().Done(), toyTask(4))
	_, err = tr.Fit(toyLoader(t, 32, 0, 4, true), nil, Config{OutputDir: dir2, Epochs: 1, LearningRate: 0.01,
		Output: &bytes.Buffer{}, Callbacks: Callbacks{OnStep: func(StepEvent) error { return boom }}})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "Callbacks.OnStep at step 1") {
		t.Errorf("aborting callback: %v", err)
	}
}

func sameFiles(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
