package convnext

import (
	"path/filepath"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/internal/familytest"
	"github.com/gomlx/gomlx/ml/model"
)

// tolerance is the largest max-abs difference accepted between this package and
// transformers on the tiny checkpoints, in float32; trainTolerance bounds the losses and
// weights after 20 SGD steps.
const (
	tolerance      = 1e-5
	trainTolerance = 1e-4
)

func loadFixtures(t *testing.T) *familytest.ImageFixtures { return familytest.LoadImageFixtures(t, 2) }

func loadFixture(t *testing.T, m *familytest.ImageModel, opts LoadOptions) *Classifier {
	t.Helper()
	clf, err := LoadPretrained(filepath.Join("testdata", m.Folder), model.NewStore(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return clf
}

// TestTensorsMatchTransformers: the tensors this package lists are those transformers saved,
// name for name and shape for shape (layer scale in V1, GRN in V2).
func TestTensorsMatchTransformers(t *testing.T) {
	for name, m := range loadFixtures(t).Models {
		t.Run(name, func(t *testing.T) {
			familytest.CheckTensors(t, filepath.Join("testdata", m.Folder), func(configPath string) ([]TensorSpec, error) {
				cfg, err := LoadConfig(configPath)
				return cfg.Tensors(), err
			})
		})
	}
}

// TestParityWithTransformers: in evaluation mode (drop path off), the last hidden state and
// the logits of ConvNeXt and ConvNeXt-V2 match transformers' within tolerance on XLA's CPU
// backend, at 32x32 and at 40x48.
func TestParityWithTransformers(t *testing.T) {
	f := loadFixtures(t)
	backend := familytest.XLA(t)
	for name, m := range f.Models {
		clf := loadFixture(t, m, LoadOptions{LoadHead: true})
		for _, r := range m.Runs {
			hidden, logits := familytest.ImageForward(t, backend, clf.Store(), r.Pixels(t), false, clf.Encoder, clf.Head)
			dh := testutil.MaxAbsDiff(t, name+" hidden", hidden, r.Hidden(t))
			dl := testutil.MaxAbsDiff(t, name+" logits", logits, r.Logits(t))
			t.Logf("%s %v: last hidden state max abs diff %.2g, logits %.2g (transformers %s)", name, r.PixelsShape, dh, dl, f.Transformers)
			if dh > tolerance || dl > tolerance {
				t.Errorf("%s %v: hidden diff %g, logits diff %g, want <= %g", name, r.PixelsShape, dh, dl, tolerance)
			}
		}
	}
}

// TestTrainingParity: 20 SGD steps (lr 0.1, drop path off) through the accelerator on one
// XLA CPU device, from each checkpoint, give PyTorch's losses and weights within 1e-4.
func TestTrainingParity(t *testing.T) {
	f := loadFixtures(t)
	for name, m := range f.Models {
		t.Run(name, func(t *testing.T) {
			if name == "v2" {
				testutil.Long(t, "compiles a second ConvNeXt training graph, about 40 s on 2 cores (tier 1: tiny's)")
			}
			clf := loadFixture(t, m, LoadOptions{LoadHead: true})
			clf.Config.DropPathRate = 0
			var weights float64
			state := filepath.Join("testdata", m.Train.State)
			losses := m.Train.Train(t, clf, clf.Logits, "no", func() {
				weights = familytest.CompareState(t, clf.Store(), state, func(string) bool { return true }, isKernel)
			})
			dl := m.Train.MaxLossDiff(losses)
			t.Logf("%s: %d SGD steps, losses %.4f -> %.4f, max abs diff from PyTorch %.2g; weights after them %.2g",
				name, len(losses), losses[0], losses[len(losses)-1], dl, weights)
			if dl > trainTolerance || weights > trainTolerance {
				t.Errorf("losses diff %g, weights %g, want <= %g", dl, weights, trainTolerance)
			}
		})
	}
}
