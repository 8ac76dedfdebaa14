package deberta

import (
	"path/filepath"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/internal/familytest"
	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// tokenKit is what familytest's token checks need of this package.
var tokenKit = familytest.TokenKit[*Classifier]{
	Prefix: "DebertaV2", Tolerance: tolerance,
	Load: func(dir string, head hf.Head) (*Classifier, error) {
		return LoadPretrained(dir, model.NewStore(), LoadOptions{LoadHead: true, Head: head})
	},
	Config: func(clf *Classifier) (hf.Head, []TensorSpec) { return clf.Config.Head, clf.Config.Tensors() },
	Logits: func(t *testing.T, b compute.Backend, clf *Classifier, m *familytest.TokenModel) []float32 {
		r := &run{Run: familytest.Run{InputIDs: m.InputIDs, AttentionMask: m.AttentionMask, TokenTypeIDs: m.TokenTypeIDs}}
		return logitsOf(t, b, clf, r, false)
	},
	Save: func(dir string, clf *Classifier, labels []string) error {
		clf.Config.Labels = labels
		return SavePretrained(dir, clf)
	},
}

// TestTokenParityWithTransformers: tiny (DeBERTa-v3's layout) and tiny_alt (token types,
// embed_proj, unshared position projections) read as DebertaV2ForTokenClassification (the
// config.json and tensors transformers saved: no pooler) have transformers' tensors and give
// its per-token logits of a padded batch (rows of 40, 23, 9 and 1 tokens) within tolerance on
// the pure-Go and the XLA CPU backends.
func TestTokenParityWithTransformers(t *testing.T) {
	tokenKit.CheckParity(t, familytest.LoadTokenFixtures(t))
}

// TestTokenSavePretrained: the token classifier (tiny_alt) saved by SavePretrained is a
// DebertaV2ForTokenClassification folder (no pooler, no problem_type) that loads back with
// its head and the same logits and, with GOACCEL_TORCH_PYTHON (a Python with torch and
// transformers, outside the repository), gives transformers' AutoModelForTokenClassification
// the same logits within tolerance.
func TestTokenSavePretrained(t *testing.T) {
	tokenKit.CheckSave(t, familytest.LoadTokenFixtures(t).Models["tiny_alt"], []string{"O", "B-PER"})
}

// TestTokenFromSequenceCheckpoint: the sequence checkpoint tiny/ loaded for a token
// classifier without LoadHead gives the encoder's last hidden states (transformers') with a
// fresh classifier of NumLabels, its pooler passed over; a token checkpoint loaded for a
// sequence classifier gets a fresh pooler; and LoadHead with the other head than the folder's
// architectures is an error naming both, in both directions.
func TestTokenFromSequenceCheckpoint(t *testing.T) {
	in := loadFixtures(t).Models["tiny"].Batch
	store := model.NewStore()
	clf, err := LoadPretrained(filepath.Join("testdata", "tiny"), store, LoadOptions{NumLabels: 9, Head: hf.TokenClassification})
	if err != nil {
		t.Fatal(err)
	}
	if store.GetVariable(hf.VarPath("pooler.dense.weight")) != nil || store.GetVariable(hf.VarPath("classifier.weight")) != nil {
		t.Error("want the pooler passed over and the classifier fresh")
	}
	exec, err := model.NewExec(familytest.Go(t), store, func(s *model.Scope, ids, mask, types *Node) (*Node, *Node) {
		h := clf.Encoder(s, ids, mask, types)
		return h, clf.TokenHead(s, h)
	})
	if err != nil {
		t.Fatal(err)
	}
	inputs := inputsOf(in)
	outs, err := exec.Call(inputs[0], inputs[1], inputs[2])
	if err != nil {
		t.Fatal(err)
	}
	if d := testutil.MaxAbsDiff(t, "hidden", tensors.MustCopyFlatData[float32](outs[0]), in.Hidden(t)); d > tolerance {
		t.Errorf("last hidden states differ from transformers' by %g", d)
	}
	if dims := outs[1].Shape().Dimensions; len(dims) != 3 || dims[2] != 9 {
		t.Errorf("token logits shaped %v, want [4 40 9]", dims)
	}

	tokenDir := familytest.LoadTokenFixtures(t).Models["tiny"].WriteFolder(t)
	seqStore := model.NewStore()
	if _, err := LoadPretrained(tokenDir, seqStore, LoadOptions{}); err != nil || seqStore.GetVariable(hf.VarPath("pooler.dense.weight")) != nil {
		t.Errorf("a token checkpoint for a sequence classifier: error %v, pooler loaded %v; want a fresh pooler",
			err, seqStore.GetVariable(hf.VarPath("pooler.dense.weight")) != nil)
	}
	familytest.CheckHeadMismatch(t, "DebertaV2", tokenDir, filepath.Join("testdata", "tiny"), func(dir string, head hf.Head) error {
		_, err := LoadPretrained(dir, model.NewStore(), LoadOptions{LoadHead: true, Head: head})
		return err
	})
}
