package convnext

import (
	"slices"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
)

// TestGradientCheckpointingWithDropPath: with drop path at 0.5 (the random draws
// recomputed in the backward pass), 3 SGD steps with each block checkpointed give the losses
// of the plain graph (within 1e-5), and differ from the steps without drop path.
func TestGradientCheckpointingWithDropPath(t *testing.T) {
	testutil.Long(t, "compiles three ConvNeXt training graphs (about a minute on 2 cores)")
	m := loadFixtures(t).Models["tiny"]
	run := *m.Train
	run.Losses = run.Losses[:3]
	train := func(rate float64, checkpoint bool) []float64 {
		clf := loadFixture(t, m, LoadOptions{LoadHead: true})
		clf.Config.DropPathRate, clf.Config.GradientCheckpointing = rate, checkpoint
		return run.Train(t, clf, clf.Logits, "no", nil)
	}
	plain, checkpointed, none := train(0.5, false), train(0.5, true), train(0, false)
	worst := 0.0
	for i := range plain {
		worst = max(worst, abs(plain[i]-checkpointed[i]))
	}
	t.Logf("drop path 0.5: losses %v plain, %v checkpointed (max diff %.2g); without drop path %v", plain, checkpointed, worst, none)
	if worst > tolerance || slices.Equal(plain, none) {
		t.Errorf("checkpointed losses differ by %g; with and without drop path equal: %v", worst, slices.Equal(plain, none))
	}
}

func abs(x float64) float64 { return max(x, -x) }

// TestMixedPrecision: under bf16 (the patchify and downsampling convolutions, pwconv1,
// pwconv2 and the classifier on bfloat16 operands) 5 SGD steps stay within 3% of PyTorch's
// float32 losses.
func TestMixedPrecision(t *testing.T) {
	m := loadFixtures(t).Models["tiny"]
	clf := loadFixture(t, m, LoadOptions{LoadHead: true})
	clf.Config.DropPathRate = 0
	rel := m.Train.CheckMixed(t, clf, clf.Logits, "bf16", 5, 0.03)
	t.Logf("bf16: 5 SGD steps, largest difference from PyTorch's float32 losses %.2g relative", rel)
}
