package trainer

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/accelerator"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// TestFitShowsSkippedUpdates: under fp16, a loss 1000 times the cross-entropy overflows the
// scaled float16 gradients of the first updates; metrics.jsonl counts the skipped updates
// beside the loss scale, and the progress line shows them.
func TestFitShowsSkippedUpdates(t *testing.T) {
	acc, err := accelerator.New(accelerator.Config{Backend: cpuPlugin(t), Devices: 1, Quiet: true, Seed: 7, MixedPrecision: "fp16"})
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	task := toyTask(4)
	ce := task.Loss
	task.Loss = func(s *model.Scope, b accelerator.GraphBatch) *Node { return MulScalar(ce(s, b), 1000) }
	tr, err := New(acc, model.NewStore(), optimizer.Adam().Done(), task)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	out, err := os.Create(filepath.Join(t.TempDir(), "out.txt"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tr.Fit(toyLoader(t, 32, 0, 4, true), nil, Config{OutputDir: dir, Epochs: 2, LearningRate: 0.01, Output: out,
		LogEvery: 4, PlainInterval: time.Nanosecond, DisableCheckpoints: true})
	out.Close()
	if err != nil {
		t.Fatal(err)
	}
	var last Record
	for _, r := range readRecords(t, dir) {
		if r.Kind == KindTrain {
			last = r
		}
	}
	if last.LossScale <= 0 || last.LossScale >= 65536 || last.SkippedUpdates == 0 {
		t.Errorf("last training record: loss scale %g, %d skipped updates; want a lowered scale and skips", last.LossScale, last.SkippedUpdates)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if !strings.Contains(string(raw), `"skipped_updates":`) {
		t.Errorf("metrics.jsonl has no skipped_updates:\n%s", raw)
	}
	printed, _ := os.ReadFile(out.Name())
	if !regexp.MustCompile(`step 16/16: loss \S+ \| \d+ skipped \|`).Match(printed) {
		t.Errorf("the progress line does not show the skipped updates:\n%s", printed)
	}
	t.Logf("last record: loss scale %g, skipped %d; %s", last.LossScale, last.SkippedUpdates,
		regexp.MustCompile(`(?m)^.*step 16/16.*$`).Find(printed))
}
