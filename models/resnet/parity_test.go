package resnet

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/internal/familytest"
	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// tolerance is the largest max-abs difference accepted between this package and
// transformers on the tiny checkpoints, in float32 (the bound for outputs; 1e-4 for
// the losses of 20 SGD steps, 1e-5 for the running statistics after them).
const (
	tolerance      = 1e-5
	trainTolerance = 1e-4
)

func loadFixtures(t *testing.T) *familytest.ImageFixtures { return familytest.LoadImageFixtures(t, 2) }

func loadFixture(t *testing.T, m *familytest.ImageModel) *Classifier {
	t.Helper()
	clf, err := LoadPretrained(filepath.Join("testdata", m.Folder), model.NewStore(), LoadOptions{LoadHead: true})
	if err != nil {
		t.Fatal(err)
	}
	return clf
}

// forward runs the encoder and the head once, in training mode when train.
func forward(t *testing.T, backend compute.Backend, clf *Classifier, pixels *tensors.Tensor, train bool) (hidden, logits []float32) {
	t.Helper()
	return familytest.ImageForward(t, backend, clf.Store(), pixels, train,
		func(s *model.Scope, x *Node) *Node { return clf.Encoder(s, x, nil) }, clf.Head)
}

// TestTensorsMatchTransformers: the tensors this package lists are those transformers saved,
// name for name and shape for shape.
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

// TestParityWithTransformers: in evaluation mode (the running statistics), the last hidden
// state and the logits of both checkpoints match transformers' within tolerance on XLA's
// CPU backend, at 32x32 and at 40x48.
func TestParityWithTransformers(t *testing.T) {
	f := loadFixtures(t)
	backend := familytest.XLA(t)
	for name, m := range f.Models {
		clf := loadFixture(t, m)
		for _, r := range m.Runs {
			hidden, logits := forward(t, backend, clf, r.Pixels(t), false)
			dh := testutil.MaxAbsDiff(t, name+" hidden", hidden, r.Hidden(t))
			dl := testutil.MaxAbsDiff(t, name+" logits", logits, r.Logits(t))
			t.Logf("%s %v: last hidden state max abs diff %.2g, logits %.2g (transformers %s)", name, r.PixelsShape, dh, dl, f.Transformers)
			if dh > tolerance || dl > tolerance {
				t.Errorf("%s %v: hidden diff %g, logits diff %g, want <= %g", name, r.PixelsShape, dh, dl, tolerance)
			}
		}
	}
}

// TestTrainModeForward: one forward pass in training mode gives transformers' logits (from
// the batch's statistics) and leaves the running statistics and num_batches_tracked as
// PyTorch's BatchNorm2d does after it.
func TestTrainModeForward(t *testing.T) {
	f := loadFixtures(t)
	backend := familytest.XLA(t)
	for name, m := range f.Models {
		clf := loadFixture(t, m)
		r := m.TrainForward
		_, logits := forward(t, backend, clf, r.Pixels(t), true)
		dl := testutil.MaxAbsDiff(t, name+" logits", logits, r.Logits(t))
		ds := familytest.CompareState(t, clf.Store(), filepath.Join("testdata", r.State), isBuffer, isKernel)
		t.Logf("%s: train-mode logits max abs diff %.2g, running statistics after the forward %.2g", name, dl, ds)
		if dl > tolerance || ds > tolerance {
			t.Errorf("%s: train-mode logits diff %g, running statistics diff %g, want <= %g", name, dl, ds, tolerance)
		}
	}
}

// TestTrainingParity: 20 SGD steps (lr 0.1) through the accelerator on one XLA CPU device,
// from each checkpoint, give PyTorch's losses within 1e-4, and the running statistics after
// them within 1e-5 (num_batches_tracked equal), the weights within 1e-4; the state's
// differences are relative to the value above 1 in magnitude (familytest.CompareState).
func TestTrainingParity(t *testing.T) {
	f := loadFixtures(t)
	for name, m := range f.Models {
		t.Run(name, func(t *testing.T) {
			clf := loadFixture(t, m)
			var buffers, weights float64
			state := filepath.Join("testdata", m.Train.State)
			losses := m.Train.Train(t, clf, clf.Logits, "no", func() {
				buffers = familytest.CompareState(t, clf.Store(), state, isBuffer, isKernel)
				weights = familytest.CompareState(t, clf.Store(), state, func(n string) bool { return !isBuffer(n) }, isKernel)
			})
			dl := m.Train.MaxLossDiff(losses)
			t.Logf("%s: %d SGD steps, losses %.4f -> %.4f, max abs diff from PyTorch %.2g; after them running statistics %.2g, weights %.2g",
				name, len(losses), losses[0], losses[len(losses)-1], dl, buffers, weights)
			if dl > trainTolerance || buffers > tolerance || weights > trainTolerance {
				t.Errorf("losses diff %g (want <= %g), running statistics %g (want <= %g), weights %g (want <= %g)",
					dl, trainTolerance, buffers, tolerance, weights, trainTolerance)
			}
		})
	}
}

// TestTrainModeMaskKeepsPaddingOut: in training mode, a batch of the fixture's pixels
// followed by padding slots of other pixels (large values, as a wrap-around copy of some other
// image could be) and a mask marking them gives transformers' running statistics of the real
// examples alone: the padding of a last batch never reaches BatchNorm's statistics (the mask
// that examples/image_classify passes after the pixels).
func TestTrainModeMaskKeepsPaddingOut(t *testing.T) {
	f := loadFixtures(t)
	backend := familytest.XLA(t)
	for name, m := range f.Models {
		clf := loadFixture(t, m)
		r := m.TrainForward
		real := r.Pixels(t)
		dims := real.Shape().Dimensions
		n, per := dims[0], real.Shape().Size()/dims[0]
		flat := tensors.MustCopyFlatData[float32](real)
		padded := append(slices.Clone(flat), make([]float32, 2*per)...)
		for i := n * per; i < len(padded); i++ {
			padded[i] = float32(5 + i%7) // far from the real pixels' statistics
		}
		pdims := slices.Clone(dims)
		pdims[0] = n + 2
		mask := make([]bool, n+2)
		for i := range n {
			mask[i] = true
		}
		familytest.ImageForward(t, backend, clf.Store(), tensors.FromFlatDataAndDimensions(padded, pdims...), true,
			func(s *model.Scope, x *Node) *Node { return clf.Encoder(s, x, Const(x.Graph(), mask)) }, clf.Head)
		ds := familytest.CompareState(t, clf.Store(), filepath.Join("testdata", r.State), isBuffer, isKernel)
		t.Logf("%s: running statistics after a masked forward with 2 padding slots: max diff %.2g from transformers' on the %d real examples", name, ds, n)
		if ds > tolerance {
			t.Errorf("%s: running statistics diff %g with padding masked out, want <= %g", name, ds, tolerance)
		}
	}
}
