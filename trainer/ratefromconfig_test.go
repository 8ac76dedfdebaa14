package trainer

import (
	"io"
	"math"
	"path/filepath"
	"testing"

	"github.com/goaccel/goaccel/optim"
	"github.com/gomlx/gomlx/ml/model"
)

// TestFitSetsTheRateOfAnOptimizerBuiltWithout: the README's snippet, an optimizer built with
// torch.optim.Adam's defaults and no rate, trains under Fit at Config.LearningRate, the one
// place the rate is given: metrics.jsonl records it.
func TestFitSetsTheRateOfAnOptimizerBuiltWithout(t *testing.T) {
	opt, err := optim.Adam(optim.AdamConfig{WeightDecay: 0.01})
	if err != nil {
		t.Fatalf("optim.Adam(optim.AdamConfig{WeightDecay: 0.01}): %v", err)
	}
	tr, err := New(accOn(t, 1), model.NewStore(), opt, toyTask(8))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := tr.Fit(toyLoader(t, 32, 0, 8, true), nil, Config{OutputDir: dir, MaxSteps: 3, LearningRate: 0.02,
		LogEvery: 1, Output: io.Discard}); err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, dir)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for _, r := range recs {
		if math.Abs(r.LR-0.02) > 1e-8 { // the rate is a float32 variable

			t.Errorf("step %d: learning rate %g, want Config.LearningRate 0.02", r.Step, r.LR)
		}
	}
}
