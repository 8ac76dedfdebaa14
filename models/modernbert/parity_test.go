package modernbert

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/internal/familytest"
	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// tolerance is the largest max-abs difference accepted between this package and
// transformers on the tiny checkpoints, in float32.
const tolerance = 1e-5

// run is one input of fixtures.json with transformers' outputs.
type run = familytest.Run

// fixtureModel is one checkpoint of fixtures.json (written by
// scripts/make_modernbert_fixtures.py) and transformers' outputs on it.
type fixtureModel struct {
	Folder     string               `json:"folder"`
	Single     *run                 `json:"single"`
	Batch      *run                 `json:"batch"`
	MeanSingle *run                 `json:"mean_single"`
	MeanBatch  *run                 `json:"mean_batch"`
	Train      *familytest.TrainRun `json:"train"`
}

// fixtures is testdata/fixtures.json.
type fixtures struct {
	Transformers string                   `json:"transformers_version"`
	Models       map[string]*fixtureModel `json:"models"`
}

func loadFixtures(t *testing.T) *fixtures {
	t.Helper()
	contents, err := os.ReadFile(filepath.Join("testdata", "fixtures.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f fixtures
	if err := json.Unmarshal(contents, &f); err != nil {
		t.Fatalf("parsing testdata/fixtures.json: %v", err)
	}
	if len(f.Models) != 2 {
		t.Fatalf("testdata/fixtures.json has %d models, want 2", len(f.Models))
	}
	return &f
}

// mustBackend returns the XLA CPU backend; without the plugin the test skips loudly (fails under CI).
func mustBackend(t *testing.T) compute.Backend { return familytest.XLA(t) }

// hiddenAndLogits runs the encoder and the classifier once (inference).
func hiddenAndLogits(t *testing.T, backend compute.Backend, clf *Classifier, ids, mask [][]int32) (hidden, logits []float32) {
	t.Helper()
	exec, err := model.NewExec(backend, clf.Store(), func(s *model.Scope, ids, mask *Node) (*Node, *Node) {
		h := clf.Encoder(s, ids, mask)
		return h, clf.Head(s, clf.Pool(h, mask))
	})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := exec.Call(familytest.Matrix(ids), familytest.Matrix(mask))
	if err != nil {
		t.Fatalf("running the classifier: %v", err)
	}
	return tensors.MustCopyFlatData[float32](outs[0]), tensors.MustCopyFlatData[float32](outs[1])
}

// logitsOf runs Classifier.Logits once, in training mode when train (dropout on), else in inference.
func logitsOf(t *testing.T, backend compute.Backend, clf *Classifier, ids, mask [][]int32, train bool) []float32 {
	t.Helper()
	exec, err := model.NewExec(backend, clf.Store(), func(s *model.Scope, ids, mask *Node) *Node {
		s.Store().SetTraining(ids.Graph(), train)
		return clf.Logits(s, []*Node{ids, mask})
	})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := exec.Call(familytest.Matrix(ids), familytest.Matrix(mask))
	if err != nil {
		t.Fatalf("running Logits: %v", err)
	}
	return tensors.MustCopyFlatData[float32](outs[0])
}

// TestTensorsMatchTransformers: the tensors this package builds are those transformers saved,
// name for name and shape for shape, with and without biases.
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

// TestParityWithTransformers: on both checkpoints, the last hidden states (padding positions
// included) and the logits of a 40-token sequence (five local windows) and of a padded batch
// match transformers' within tolerance on XLA's CPU backend, with the checkpoint's pooling
// and, for tiny, "mean" pooling too.
func TestParityWithTransformers(t *testing.T) {
	f := loadFixtures(t)
	backend := mustBackend(t)
	for name, m := range f.Models {
		clf, err := LoadPretrained(filepath.Join("testdata", m.Folder), model.NewStore(), LoadOptions{LoadHead: true})
		if err != nil {
			t.Fatal(err)
		}
		pooling := clf.Config.ClassifierPooling
		for _, c := range []struct {
			what, pooling string
			run           *run
		}{{"single", pooling, m.Single}, {"batch", pooling, m.Batch}, {"mean_single", "mean", m.MeanSingle}, {"mean_batch", "mean", m.MeanBatch}} {
			if c.run == nil {
				continue
			}
			t.Run(name+"/"+c.what, func(t *testing.T) {
				clf.Config.ClassifierPooling = c.pooling
				defer func() { clf.Config.ClassifierPooling = pooling }()
				hidden, logits := hiddenAndLogits(t, backend, clf, c.run.InputIDs, c.run.AttentionMask)
				dh := testutil.MaxAbsDiff(t, "hidden", hidden, c.run.Hidden(t))
				dl := testutil.MaxAbsDiff(t, "logits", logits, c.run.Logits(t))
				t.Logf("%s %s (%s pooling, shape %v) vs transformers %s: last_hidden_state max abs diff %.3g, logits max abs diff %.3g",
					name, c.what, c.pooling, c.run.HiddenShape, f.Transformers, dh, dl)
				if dh > tolerance || dl > tolerance {
					t.Errorf("max abs diff hidden=%g logits=%g, want both <= %g", dh, dl, tolerance)
				}
				if got := logitsOf(t, backend, clf, c.run.InputIDs, c.run.AttentionMask, false); testutil.MaxAbsDiff(t, "Logits", got, logits) != 0 {
					t.Errorf("Logits differs from Encoder, Pool and Head")
				}
			})
		}
	}
}

// TestTrainingParity: from the tiny checkpoint (every dropout rate 0), 20 plain SGD steps on
// two fixed batches taken in turn, run the way users train (accelerator.New, Prepare,
// TrainStep, CrossEntropy, Backward, on one XLA CPU device), give transformers' + PyTorch's
// losses within 1e-4.
func TestTrainingParity(t *testing.T) {
	f := loadFixtures(t)
	clf, err := LoadPretrained(filepath.Join("testdata", f.Models["tiny"].Folder), model.NewStore(), LoadOptions{LoadHead: true})
	if err != nil {
		t.Fatal(err)
	}
	f.Models["tiny"].Train.Check(t, clf, clf.Logits, 1e-4, f.Transformers)
}

// TestMixedPrecision: under bf16 and fp16 (SetComputeDType) the logits of the padded batch
// stay within 5% of float32's and are not equal to them, on both checkpoints (global and
// local layers); and the training record's 20 SGD steps under the accelerator's bf16 stay
// within 5% of PyTorch's float32 losses (relative, see CheckMixed; goaccel's move by 1.5% at
// most, those of PyTorch's own bf16 autocast by 1.1%: scripts/autocast_drift.py).
func TestMixedPrecision(t *testing.T) {
	f := loadFixtures(t)
	backend := mustBackend(t)
	for name, m := range f.Models {
		t.Run(name, func(t *testing.T) {
			clf, err := LoadPretrained(filepath.Join("testdata", m.Folder), model.NewStore(), LoadOptions{LoadHead: true})
			if err != nil {
				t.Fatal(err)
			}
			familytest.CheckMixedLogits(t, backend, clf, clf.Logits, m.Batch.InputIDs, m.Batch.AttentionMask)
		})
	}
	clf, err := LoadPretrained(filepath.Join("testdata", f.Models["tiny"].Folder), model.NewStore(), LoadOptions{LoadHead: true})
	if err != nil {
		t.Fatal(err)
	}
	f.Models["tiny"].Train.CheckMixed(t, clf, clf.Logits, "bf16", 0.05, f.Transformers)
}

// TestGradientCheckpointing: with GradientCheckpointing, and dropout on in every layer (0.1),
// the training record's 20 SGD steps (6 in -short) give the plain graph's losses, and the
// training graph has more matrix products (see familytest's CheckGradientCheckpointing).
func TestGradientCheckpointing(t *testing.T) {
	m := loadFixtures(t).Models["tiny"]
	m.Train.CheckGradientCheckpointing(t, func(checkpoint bool) (model.StoreProvider, func(*model.Scope, []*Node) *Node) {
		clf, err := LoadPretrained(filepath.Join("testdata", m.Folder), model.NewStore(), LoadOptions{LoadHead: true})
		if err != nil {
			t.Fatal(err)
		}
		clf.Config.AttentionDropout, clf.Config.MLPDropout, clf.Config.GradientCheckpointing = 0.1, 0.1, checkpoint
		return clf, clf.Logits
	}, m.Batch.InputIDs, m.Batch.AttentionMask)
}
