package resnet

import (
	"path/filepath"
	"testing"

	"github.com/goaccel/goaccel/models/internal/familytest"
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

// TestTwoDevicesSameRun: on 2 XLA CPU devices (2 images of each global batch of 4 on each),
// BatchNorm's statistics are the global batch's, so the 20 SGD steps give the losses,
// running statistics and weights of PyTorch's one-device run (within the bounds of
// TestTrainingParity).
func TestTwoDevicesSameRun(t *testing.T) {
	m := loadFixtures(t).Models["bottleneck"]
	clf := loadFixture(t, m)
	var buffers float64
	state := filepath.Join("testdata", m.Train.State)
	losses := m.Train.TrainOn(t, 2, clf, clf.Logits, "no", func() {
		buffers = familytest.CompareState(t, clf.Store(), state, isBuffer, isKernel)
	})
	d := m.Train.MaxLossDiff(losses)
	t.Logf("2 devices: 20 SGD steps, losses max abs diff from PyTorch's 1-device run %.2g, running statistics after them %.2g", d, buffers)
	if d > trainTolerance || buffers > tolerance {
		t.Errorf("2 devices: losses diff %g, running statistics %g", d, buffers)
	}
}
