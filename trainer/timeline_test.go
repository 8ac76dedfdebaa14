package trainer

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/internal/timeline"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// TestFitTimelineHasCheckpointSaves: with Config.Timeline set, Fit's checkpoint saves (the
// best model's and the last one) are spans of the timeline.
func TestFitTimelineHasCheckpointSaves(t *testing.T) {
	tl := filepath.Join(t.TempDir(), "timeline")
	acc, err := accelerator.New(accelerator.Config{Backend: cpuPlugin(t), Devices: 1, Quiet: true, Seed: 7, Timeline: tl})
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	tr, err := New(acc, model.NewStore(), optimizer.Adam().Done(), toyTask(16))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := tr.Fit(toyLoader(t, 48, 0, 8, true), toyLoader(t, 21, 1000, 8, false), Config{
		OutputDir: filepath.Join(t.TempDir(), "run"), Epochs: 2, LearningRate: 0.05, BestMetric: "accuracy", Output: &out,
	}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	acc.Close()
	f, err := timeline.Read(filepath.Join(tl, timeline.RankFile(0)))
	if err != nil {
		t.Fatal(err)
	}
	names := f.Counts()
	if names["checkpoint save"] == 0 || names["checkpoint save (best)"] == 0 || names["step"] != 12 {
		t.Errorf("spans %v; want 12 steps and the best and last checkpoint saves", names)
	}
}
