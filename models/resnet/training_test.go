package resnet

import (
	"testing"
)

// TestGradientCheckpointing: with each residual layer recomputed in the backward pass, the
// 20 SGD steps give PyTorch's losses as the plain graph does (within 1e-5).
func TestGradientCheckpointing(t *testing.T) {
	m := loadFixtures(t).Models["bottleneck"]
	clf := loadFixture(t, m)
	clf.Config.GradientCheckpointing = true
	losses := m.Train.Train(t, clf, clf.Logits, "no", nil)
	d := m.Train.MaxLossDiff(losses)
	t.Logf("gradient checkpointing: 20 SGD steps, max abs diff from PyTorch %.2g", d)
	if d > tolerance {
		t.Errorf("losses differ from PyTorch's by %g with gradient checkpointing", d)
	}
}

// TestMixedPrecision: under bf16 (the convolutions and the classifier on bfloat16 operands,
// BatchNorm and the residual sums in float32) the 20 SGD steps stay within 10% of PyTorch's
// float32 losses.
func TestMixedPrecision(t *testing.T) {
	m := loadFixtures(t).Models["bottleneck"]
	clf := loadFixture(t, m)
	rel := m.Train.CheckMixed(t, clf, clf.Logits, "bf16", 20, 0.1)
	t.Logf("bf16: 20 SGD steps, largest difference from PyTorch's float32 losses %.2g relative", rel)
}
