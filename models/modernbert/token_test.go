package modernbert

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/bert"
	"github.com/goaccel/goaccel/models/internal/familytest"
	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// tokenOpts loads a folder as a token classifier, with its head.
var tokenOpts = LoadOptions{LoadHead: true, Head: bert.TokenClassification}

// tokenLogitsOf runs Classifier.Logits once (inference) and returns the logits and their shape.
func tokenLogitsOf(t *testing.T, backend compute.Backend, clf *Classifier, ids, mask [][]int32) ([]float32, []int) {
	t.Helper()
	exec, err := model.NewExec(backend, clf.Store(), func(s *model.Scope, ids, mask *Node) *Node {
		return clf.Logits(s, []*Node{ids, mask})
	})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := exec.Call(familytest.Matrix(ids), familytest.Matrix(mask))
	if err != nil {
		t.Fatalf("running Logits: %v", err)
	}
	return tensors.MustCopyFlatData[float32](outs[0]), outs[0].Shape().Dimensions
}

// TestTokenParityWithTransformers: both checkpoints read as ModernBertForTokenClassification
// (the config.json and tensors transformers saved) have transformers' tensors, and give its
// per-token logits of a padded batch (rows of 40, 23, 9 and 1 tokens) within tolerance on the
// pure-Go and the XLA CPU backends: the prediction head (dense, activation, norm), then the
// classifier, on every token.
func TestTokenParityWithTransformers(t *testing.T) {
	f := familytest.LoadTokenFixtures(t)
	for name, m := range f.Models {
		dir := m.WriteFolder(t)
		familytest.CheckTensors(t, dir, func(configPath string) ([]TensorSpec, error) {
			cfg, err := LoadConfig(configPath)
			if err == nil && cfg.Head != bert.TokenClassification {
				t.Errorf("%s: Head %v from architectures %s, want TokenClassification", name, cfg.Head, m.Class)
			}
			return cfg.Tensors(), err
		})
		for _, b := range familytest.Backends(t) {
			t.Run(name+"/"+b.Name, func(t *testing.T) {
				clf, err := LoadPretrained(dir, model.NewStore(), tokenOpts)
				if err != nil {
					t.Fatal(err)
				}
				got, shape := tokenLogitsOf(t, b.Backend, clf, m.InputIDs, m.AttentionMask)
				if !slices.Equal(shape, m.LogitsShape) {
					t.Fatalf("logits shape %v, want %v", shape, m.LogitsShape)
				}
				d := testutil.MaxAbsDiff(t, "logits", got, m.Logits(t))
				t.Logf("%s token classifier on %s vs transformers %s: per-token logits %v max abs diff %.3g", name, b.Name, f.Transformers, shape, d)
				if d > tolerance {
					t.Errorf("max abs diff %g, want <= %g", d, tolerance)
				}
			})
		}
	}
}

// TestTokenSavePretrained: the token classifier saved by SavePretrained is a
// ModernBertForTokenClassification folder (no problem_type) that loads back with its head and
// the same logits and, with GOACCEL_TORCH_PYTHON (a Python with torch and transformers,
// outside the repository), gives transformers' AutoModelForTokenClassification the same
// logits within tolerance.
func TestTokenSavePretrained(t *testing.T) {
	m := familytest.LoadTokenFixtures(t).Models["tiny_bias"]
	backend := familytest.Go(t)
	clf, err := LoadPretrained(m.WriteFolder(t), model.NewStore(), tokenOpts)
	if err != nil {
		t.Fatal(err)
	}
	clf.Config.Labels = []string{"O", "B-PER", "I-PER"}
	out := filepath.Join(t.TempDir(), "saved")
	if err := SavePretrained(out, clf); err != nil {
		t.Fatal(err)
	}
	familytest.CheckTokenConfig(t, out, "ModernBertForTokenClassification")
	back, err := LoadPretrained(out, model.NewStore(), tokenOpts)
	if err != nil {
		t.Fatalf("loading the saved folder: %v", err)
	}
	want, _ := tokenLogitsOf(t, backend, clf, m.InputIDs, m.AttentionMask)
	if got, _ := tokenLogitsOf(t, backend, back, m.InputIDs, m.AttentionMask); testutil.MaxAbsDiff(t, "logits", got, want) != 0 {
		t.Error("the saved folder gives other logits")
	}
	python := os.Getenv("GOACCEL_TORCH_PYTHON")
	if python == "" {
		t.Skip("SKIPPING the transformers half: GOACCEL_TORCH_PYTHON (a Python with torch and transformers, outside the repository) is not set")
	}
	class, id2label, logits := familytest.TransformersTokenLogits(t, python, out, m.InputIDs, m.AttentionMask, nil)
	if class != "ModernBertForTokenClassification" || id2label["1"] != "B-PER" {
		t.Errorf("transformers read %s with id2label %v", class, id2label)
	}
	d := testutil.MaxAbsDiff(t, "logits", logits, want)
	t.Logf("transformers loaded the saved folder as %s: per-token logits max abs diff %.3g", class, d)
	if d > tolerance {
		t.Errorf("transformers' logits differ by %g, want <= %g", d, tolerance)
	}
}

// TestTokenFromSequenceCheckpoint: the sequence checkpoint tiny/ loaded for a token
// classifier without LoadHead gives the encoder's last hidden states (transformers') and its
// prediction head, with a fresh classifier of NumLabels; and LoadHead with the other head than
// the folder's architectures is an error naming both, in both directions.
func TestTokenFromSequenceCheckpoint(t *testing.T) {
	f := loadFixtures(t)
	in := f.Models["tiny"].Batch
	store := model.NewStore()
	clf, err := LoadPretrained(filepath.Join("testdata", "tiny"), store, LoadOptions{NumLabels: 9, Head: bert.TokenClassification})
	if err != nil {
		t.Fatal(err)
	}
	if store.GetVariable(VarPath("head.dense.weight")) == nil || store.GetVariable(VarPath("classifier.weight")) != nil {
		t.Error("want the prediction head loaded and the classifier fresh")
	}
	exec, err := model.NewExec(familytest.Go(t), store, func(s *model.Scope, ids, mask *Node) (*Node, *Node) {
		h := clf.Encoder(s, ids, mask)
		return h, clf.TokenHead(s, h)
	})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := exec.Call(familytest.Matrix(in.InputIDs), familytest.Matrix(in.AttentionMask))
	if err != nil {
		t.Fatal(err)
	}
	if d := testutil.MaxAbsDiff(t, "hidden", tensors.MustCopyFlatData[float32](outs[0]), in.Hidden(t)); d > tolerance {
		t.Errorf("last hidden states differ from transformers' by %g", d)
	}
	if dims := outs[1].Shape().Dimensions; !slices.Equal(dims, []int{4, 40, 9}) {
		t.Errorf("token logits shaped %v, want [4 40 9]", dims)
	}

	tokenDir := familytest.LoadTokenFixtures(t).Models["tiny"].WriteFolder(t)
	for _, c := range []struct {
		dir  string
		head bert.Head
		want []string
	}{
		{tokenDir, bert.SequenceClassification, []string{"ModernBertForTokenClassification", "a TokenClassification checkpoint", "is SequenceClassification"}},
		{filepath.Join("testdata", "tiny"), bert.TokenClassification, []string{"ModernBertForSequenceClassification", "a SequenceClassification checkpoint", "is TokenClassification"}},
	} {
		_, err := LoadPretrained(c.dir, model.NewStore(), LoadOptions{LoadHead: true, Head: c.head})
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("LoadHead with Head %s on %s: error %v, want one saying %q", c.head, c.dir, err, w)
			}
		}
	}
}
