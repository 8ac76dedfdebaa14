package vit

import (
	"encoding/json"
	"math"
	"os"
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
// transformers on the tiny checkpoints, in float32.
const tolerance = 1e-5

// imageRun is one input of fixtures.json with transformers' outputs on it.
type imageRun struct {
	PixelsShape []int  `json:"pixels_shape"`
	PixelsB64   string `json:"pixels_f32_b64"`
	Interpolate bool   `json:"interpolate_pos_encoding"`
	HiddenShape []int  `json:"hidden_shape"`
	HiddenB64   string `json:"last_hidden_state_f32_b64"`
	LogitsShape []int  `json:"logits_shape"`
	LogitsB64   string `json:"logits_f32_b64"`
}

// pixels is the run's input as a tensor [B, H, W, 3].
func (r *imageRun) pixels(t testing.TB) *tensors.Tensor {
	return tensors.FromFlatDataAndDimensions(testutil.DecodeF32(t, "pixels", r.PixelsB64, r.PixelsShape), r.PixelsShape...)
}

// trainRun is the record of 20 SGD steps from tiny/.
type trainRun struct {
	LearningRate float64 `json:"learning_rate"`
	Losses       []float64
	Batches      []struct {
		PixelsShape []int   `json:"pixels_shape"`
		PixelsB64   string  `json:"pixels_f32_b64"`
		Labels      []int32 `json:"labels"`
	} `json:"batches"`
}

// fixtureModel is one checkpoint of fixtures.json (written by scripts/make_vit_fixtures.py).
type fixtureModel struct {
	Folder string               `json:"folder"`
	Runs   map[string]*imageRun `json:"runs"`
	Train  *trainRun            `json:"train"`
}

// fixtures is testdata/fixtures.json.
type fixtures struct {
	Transformers string                   `json:"transformers_version"`
	Models       map[string]*fixtureModel `json:"models"`
}

func loadFixtures(t testing.TB) *fixtures {
	t.Helper()
	contents, err := os.ReadFile(filepath.Join("testdata", "fixtures.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f fixtures
	if err := json.Unmarshal(contents, &f); err != nil {
		t.Fatalf("parsing testdata/fixtures.json: %v", err)
	}
	if len(f.Models) != 4 {
		t.Fatalf("testdata/fixtures.json has %d models, want 4", len(f.Models))
	}
	return &f
}

// loadTiny loads a fixture checkpoint with its head.
func loadTiny(t testing.TB, name string) *Classifier {
	t.Helper()
	clf, err := LoadPretrained(filepath.Join("testdata", name), nil, LoadOptions{LoadHead: true})
	if err != nil {
		t.Fatal(err)
	}
	return clf
}

// hiddenAndLogits runs the encoder and the classifier once (inference).
func hiddenAndLogits(t testing.TB, backend compute.Backend, clf *Classifier, pixels *tensors.Tensor) (hidden, logits []float32) {
	t.Helper()
	exec, err := model.NewExec(backend, clf.Store(), func(s *model.Scope, x *Node) (*Node, *Node) {
		return clf.Encoder(s, x), clf.Logits(s, []*Node{x})
	})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := exec.Call(pixels)
	if err != nil {
		t.Fatalf("running the classifier: %v", err)
	}
	return tensors.MustCopyFlatData[float32](outs[0]), tensors.MustCopyFlatData[float32](outs[1])
}

// maxAbsDiff is the largest |a[i] - b[i]|; a length mismatch fails the test.
func maxAbsDiff(t testing.TB, what string, a, b []float32) float64 {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d values, transformers has %d", what, len(a), len(b))
	}
	worst := 0.0
	for i := range a {
		worst = max(worst, math.Abs(float64(a[i])-float64(b[i])))
	}
	return worst
}

// TestParity: the last hidden states and logits of the tiny ViT and DINOv2 checkpoints equal
// transformers' within 1e-5, at the checkpoint's image size and, with the position
// embeddings interpolated, at larger, smaller, non-square and non-multiple sizes; on the
// pure-Go and the XLA CPU backends.
func TestParity(t *testing.T) {
	f := loadFixtures(t)
	for _, be := range familytest.Backends(t) {
		for _, name := range []string{"tiny", "tiny_alt", "dinov2", "dinov2_swiglu"} {
			m := f.Models[name]
			for _, runName := range slices.Sorted(func(yield func(string) bool) {
				for k := range m.Runs {
					if !yield(k) {
						return
					}
				}
			}) {
				r := m.Runs[runName]
				clf := loadTiny(t, m.Folder)
				clf.Config.InterpolatePosEncoding = r.Interpolate
				hidden, logits := hiddenAndLogits(t, be.Backend, clf, r.pixels(t))
				dh := maxAbsDiff(t, "last_hidden_state", hidden, testutil.DecodeF32(t, "hidden", r.HiddenB64, r.HiddenShape))
				dl := maxAbsDiff(t, "logits", logits, testutil.DecodeF32(t, "logits", r.LogitsB64, r.LogitsShape))
				t.Logf("%s %s/%s %v: last hidden state max abs diff %.2g, logits %.2g (transformers %s)",
					be.Name, name, runName, r.PixelsShape, dh, dl, f.Transformers)
				if dh > tolerance || dl > tolerance {
					t.Errorf("%s %s/%s: last hidden state differs by %.3g, logits by %.3g (bound %g)", be.Name, name, runName, dh, dl, tolerance)
				}
			}
		}
	}
}
