package familytest

import (
	"math"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/ml/model"
)

// CheckMixed runs the record's first steps SGD steps under the accelerator's mixed precision
// (precision "bf16" or "fp16": Prepare hands the compute dtype to clf's SetComputeDType) and
// fails the test when a loss differs from PyTorch's float32 one by more than tolerance
// relative to it (to at least 0.1), or when every loss equals it (no product ran in half
// precision). It returns the largest relative difference.
func (r *ImageTrainRun) CheckMixed(t testing.TB, clf model.StoreProvider, logits func(s *model.Scope, inputs []*Node) *Node, precision string, steps int, tolerance float64) float64 {
	t.Helper()
	run := *r
	run.Losses = r.Losses[:steps]
	losses := run.Train(t, clf, logits, precision, nil)
	worst, worstRel := 0.0, 0.0
	for i, want := range run.Losses {
		d := math.Abs(losses[i] - want)
		rel := d / max(math.Abs(want), 0.1)
		worst, worstRel = max(worst, d), max(worstRel, rel)
		if !(rel <= tolerance) {
			t.Errorf("step %d: loss %.6f in %s, PyTorch's %.6f in float32 (relative diff %.3g)", i+1, losses[i], precision, want, rel)
		}
	}
	if worst == 0 {
		t.Errorf("%s: every loss equals float32's: the products did not run in half precision", precision)
	}
	return worstRel
}
