package trainer

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// TestOnTrainBegin: Callbacks.OnTrainBegin runs once per session, before the first step,
// with the model's variables in place: on a new run at step 0 with the weights the first
// step starts from, on a resumed run at the checkpoint's step with the checkpoint's weights
// (those the first session had after that step). An error from it stops Fit before any step.
func TestOnTrainBegin(t *testing.T) {
	acc := accOn(t, 1)
	dir := filepath.Join(t.TempDir(), "run")
	var store *model.Store // the session's, read by the callbacks
	session := func(maxSteps int64, onStep func(StepEvent) error, begin func(TrainBeginEvent) error) error {
		store = model.NewStore()
		tr, err := New(acc, store, optimizer.Adam().Done(), toyTask(8))
		if err != nil {
			t.Fatal(err)
		}
		_, err = tr.Fit(toyLoader(t, 48, 0, 8, true), toyLoader(t, 16, 300, 8, false), Config{OutputDir: dir,
			Epochs: 1, MaxSteps: maxSteps, LearningRate: 0.05, Output: &bytes.Buffer{}, SaveEvery: 2,
			Callbacks: Callbacks{OnStep: onStep, OnTrainBegin: begin}})
		return err
	}
	var calls []TrainBeginEvent
	var atBegin, afterStep2 map[string][]float32
	steps := 0
	err := session(2, func(StepEvent) error {
		steps++
		if steps == 2 {
			afterStep2 = weights(t, store)
		}
		return nil
	}, func(ev TrainBeginEvent) error {
		if steps != 0 {
			t.Errorf("OnTrainBegin after %d steps, want before the first", steps)
		}
		calls = append(calls, ev)
		atBegin = weights(t, store)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0].Step != 0 || calls[0].Resumed != "" {
		t.Fatalf("OnTrainBegin calls %+v, want one at step 0 of a new run", calls)
	}
	if len(atBegin) == 0 {
		t.Fatal("OnTrainBegin saw no variable: the model is built before it runs")
	}
	if d, where := maxAbsDiff(atBegin, afterStep2); d == 0 {
		t.Fatalf("the weights at OnTrainBegin equal those after step 2 (%s): the callback ran after training", where)
	}

	// The second session resumes at step 2, and an error stops it before any step.
	calls, steps = nil, 0
	boom := errors.New("boom")
	err = session(4, func(StepEvent) error { steps++; return nil }, func(ev TrainBeginEvent) error {
		calls = append(calls, ev)
		atBegin = weights(t, store)
		return boom
	})
	if !errors.Is(err, boom) || steps != 0 {
		t.Fatalf("resumed session: Fit returned %v after %d steps; want OnTrainBegin's error before any step", err, steps)
	}
	if len(calls) != 1 || calls[0].Step != 2 || calls[0].Resumed == "" {
		t.Fatalf("OnTrainBegin calls %+v, want one at step 2 of a resumed run", calls)
	}
	if d, where := maxAbsDiff(atBegin, afterStep2); d != 0 {
		t.Errorf("resumed: the weights at OnTrainBegin differ from the checkpoint's by %g at %s", d, where)
	}
}
