package modernbert

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/internal/familytest"
	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

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

// tokenKit is what familytest's token checks need of this package.
var tokenKit = familytest.TokenKit[*Classifier]{
	Prefix: "ModernBert", Tolerance: tolerance,
	Load: func(dir string, head hf.Head) (*Classifier, error) {
		return LoadPretrained(dir, model.NewStore(), LoadOptions{LoadHead: true, Head: head})
	},
	Config: func(clf *Classifier) (hf.Head, []TensorSpec) { return clf.Config.Head, clf.Config.Tensors() },
	Logits: func(t *testing.T, b compute.Backend, clf *Classifier, m *familytest.TokenModel) []float32 {
		got, _ := tokenLogitsOf(t, b, clf, m.InputIDs, m.AttentionMask)
		return got
	},
	Save: func(dir string, clf *Classifier, labels []string) error {
		clf.Config.Labels = labels
		return SavePretrained(dir, clf)
	},
}

// TestTokenParityWithTransformers: both checkpoints read as ModernBertForTokenClassification
// (the config.json and tensors transformers saved) have transformers' tensors, and give its
// per-token logits of a padded batch (rows of 40, 23, 9 and 1 tokens) within tolerance on the
// pure-Go and the XLA CPU backends: the prediction head (dense, activation, norm), then the
// classifier, on every token.
func TestTokenParityWithTransformers(t *testing.T) {
	tokenKit.CheckParity(t, familytest.LoadTokenFixtures(t))
}

// TestTokenSavePretrained: the token classifier (tiny_bias) saved by SavePretrained is a
// ModernBertForTokenClassification folder (no problem_type) that loads back with its head and
// the same logits and, with GOACCEL_TORCH_PYTHON (a Python with torch and transformers,
// outside the repository), gives transformers' AutoModelForTokenClassification the same
// logits within tolerance.
func TestTokenSavePretrained(t *testing.T) {
	tokenKit.CheckSave(t, familytest.LoadTokenFixtures(t).Models["tiny_bias"], []string{"O", "B-PER", "I-PER"})
}

// TestTokenFromSequenceCheckpoint: the sequence checkpoint tiny/ loaded for a token
// classifier without LoadHead gives the encoder's last hidden states (transformers') and its
// prediction head, with a fresh classifier of NumLabels; and LoadHead with the other head than
// the folder's architectures is an error naming both, in both directions.
func TestTokenFromSequenceCheckpoint(t *testing.T) {
	f := loadFixtures(t)
	in := f.Models["tiny"].Batch
	store := model.NewStore()
	clf, err := LoadPretrained(filepath.Join("testdata", "tiny"), store, LoadOptions{NumLabels: 9, Head: hf.TokenClassification})
	if err != nil {
		t.Fatal(err)
	}
	if store.GetVariable(hf.VarPath("head.dense.weight")) == nil || store.GetVariable(hf.VarPath("classifier.weight")) != nil {
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
	familytest.CheckHeadMismatch(t, "ModernBert", tokenDir, filepath.Join("testdata", "tiny"), func(dir string, head hf.Head) error {
		_, err := LoadPretrained(dir, model.NewStore(), LoadOptions{LoadHead: true, Head: head})
		return err
	})
}
