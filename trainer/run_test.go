package trainer

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// loopState of TestRunResumesWhereItStopped: what a hand-written loop keeps in its checkpoint.
type toyLoop struct {
	Steps  int64     `json:"steps"`
	Losses []float64 `json:"losses"`
}

// toyRun prepares the toy MLP for a hand-written loop and opens its Run in dir.
func toyRun(t *testing.T, acc *accelerator.Accelerator, dir string, config any, st *toyLoop) (*Run, *accelerator.Job,
	*accelerator.TrainStep, *model.Store, error) {
	t.Helper()
	store := model.NewStore()
	job, err := acc.Prepare(store, optimizer.Adam().Done(), toyLoader(t, 32, 0, 8, true))
	if err != nil {
		t.Fatal(err)
	}
	loss := toyTask(4).Loss
	step := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *Node {
		l := loss(s, b)
		acc.Backward(s, l)
		return l
	})
	r, err := OpenRun(acc, dir, config, job, st)
	return r, job, step, store, err
}

// trainSteps runs n steps of a hand-written loop, logging each.
func trainSteps(t *testing.T, r *Run, job *accelerator.Job, step *accelerator.TrainStep, st *toyLoop, n int) {
	t.Helper()
	for gb, err := range job.Batches() {
		if err != nil {
			t.Fatal(err)
		}
		l, err := step.Run(gb)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := l.Value()
		st.Steps++
		st.Losses = append(st.Losses, v)
		if err := r.Log(Record{Kind: KindTrain, Step: st.Steps, Epoch: 0.25 * float64(st.Steps), Loss: v, LR: nan,
			GradNorm: nan, ExamplesPerSec: nan}); err != nil {
			t.Fatal(err)
		}
		if n--; n == 0 {
			return
		}
	}
}

// TestRunResumesWhereItStopped: a hand-written loop saves its Run after step 2 and runs one
// more step (logged, not saved) before it is stopped; OpenRun on the same directory and
// configuration loads the weights of step 2, the data position and the loop's state, and cuts
// metrics.jsonl to the 2 records before the checkpoint; the next 2 steps then have the losses
// of an uninterrupted run's steps 3 and 4. Another configuration, or a directory that is not
// a loop's run, is refused and left unchanged.
func TestRunResumesWhereItStopped(t *testing.T) {
	acc := accOn(t, 1)
	cfg := map[string]any{"lr": 0.001, "hidden": 4}
	full := &toyLoop{}
	r, job, step, _, err := toyRun(t, acc, filepath.Join(t.TempDir(), "full"), cfg, full)
	if err != nil {
		t.Fatal(err)
	}
	trainSteps(t, r, job, step, full, 4)
	_ = r.Close()

	dir := filepath.Join(t.TempDir(), "run")
	first := &toyLoop{}
	r, job, step, store, err := toyRun(t, acc, dir, cfg, first)
	if err != nil || r.Resumed != "" {
		t.Fatalf("new run: %v, resumed %q", err, r.Resumed)
	}
	trainSteps(t, r, job, step, first, 2)
	if err := r.Save(first.Steps); err != nil {
		t.Fatal(err)
	}
	atSave := weights(t, store)
	trainSteps(t, r, job, step, first, 1)
	if err := r.Interrupted(syscall.SIGINT, 2); err != nil { // a no-op save: step 2 is saved
		t.Fatal(err)
	}
	_ = r.Close()

	second := &toyLoop{}
	r, job, step, store, err = toyRun(t, acc, dir, cfg, second)
	if err != nil {
		t.Fatal(err)
	}
	if r.Resumed == "" || r.Step != 2 || second.Steps != 2 || len(second.Losses) != 2 || job.Source().State().BatchesConsumed != 2 {
		t.Fatalf("resumed from %q at step %d: loop state %+v, %d batches consumed; want step 2 and 2 batches",
			r.Resumed, r.Step, second, job.Source().State().BatchesConsumed)
	}
	if d, where := maxAbsDiff(atSave, weights(t, store)); d != 0 {
		t.Errorf("the resumed weights differ from step 2's by %g at %s", d, where)
	}
	if recs := readRecords(t, dir); len(recs) != 2 {
		t.Errorf("metrics.jsonl has %d records after the resume, want the 2 before the checkpoint", len(recs))
	}
	trainSteps(t, r, job, step, second, 2)
	for i := 2; i < 4; i++ {
		if second.Losses[i] != full.Losses[i] {
			t.Errorf("step %d: loss %v resumed, %v uninterrupted", i+1, second.Losses[i], full.Losses[i])
		}
	}
	if err := r.Finish(second.Steps); err != nil {
		t.Fatal(err)
	}
	_ = r.Close()
	for _, f := range []string{configFile, MetricsFile, CurvesPNG} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the run directory lacks %s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, interruptedFile)); err == nil {
		t.Errorf("%s is still there after Finish", interruptedFile)
	}

	before := snapshot(t, dir)
	other := map[string]any{"lr": 0.01, "hidden": 4}
	if _, _, _, _, err := toyRun(t, acc, dir, other, &toyLoop{}); err == nil ||
		!strings.Contains(err.Error(), "another configuration") || !strings.Contains(err.Error(), "lr: the run has 0.001, this one 0.01") {
		t.Errorf("another configuration: %v", err)
	}
	foreign := t.TempDir()
	_ = os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644)
	if _, _, _, _, err := toyRun(t, acc, foreign, cfg, &toyLoop{}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("a folder of other files: %v", err)
	}
	fitDir := filepath.Join(t.TempDir(), "fit")
	if _, _, out := fitToy(t, 1, fitDir); out == "" {
		t.Fatal("no Fit output")
	}
	if _, _, _, _, err := toyRun(t, acc, fitDir, cfg, &toyLoop{}); err == nil || !strings.Contains(err.Error(), "hand-written loop") {
		t.Errorf("Fit's run directory: %v", err)
	}
	if after := snapshot(t, dir); !sameFiles(before, after) {
		t.Error("a refused OpenRun changed the run directory")
	}
}
