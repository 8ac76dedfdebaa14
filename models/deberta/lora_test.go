package deberta

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/models/internal/familytest"
	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/goaccel/goaccel/models/lora"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/ml/model"
)

// loraKit is the tiny checkpoint (DeBERTa-v3's layout: share_att_key, position buckets, no
// token types) for models/internal/familytest's LoRA checks: default targets query_proj and
// value_proj, the extra target "dense" (attention.output.dense, intermediate.dense,
// output.dense and pooler.dense, which PEFT adapts though it does not train it), the pooler
// frozen as PEFT leaves it.
func loraKit(t *testing.T) familytest.LoRAKit[*Classifier] {
	return familytest.LoRAKit[*Classifier]{
		Family: "deberta-v2", Dir: filepath.Join("testdata", "tiny"), Train: loadFixtures(t).Models["tiny"].Train,
		Load: func(dir string) (*Classifier, error) {
			return LoadPretrained(dir, model.NewStore(), LoadOptions{LoadHead: true})
		},
		SavePretrained: SavePretrained, LoadAdapter: LoadAdapter,
		Defaults: []string{"query_proj", "value_proj"}, Extra: "dense", HeadFrozen: []string{"pooler.dense.weight", "pooler.dense.bias"},
		Lacks: "Wqkv", Has: `"attention.self.query_proj"`,
	}
}

// TestLoRA: familytest.LoRAKit.Check: a fresh adapter is the base bit for bit; Adam steps
// train only A, B and the classifier (pooler.dense stays as loaded, as in PEFT); SavePretrained writes the
// merged folder and PEFT's files, and with GOACCEL_TORCH_PYTHON PEFT and transformers give
// goaccel's logits within 1e-5 and PEFT trains the same tensors; bad targets and adapters
// that do not fit are errors naming what is wrong.
func TestLoRA(t *testing.T) { loraKit(t).Check(t) }

// TestLoRATokenHead: a token classifier's adapter is TOKEN_CLS, with the classifier to train
// (the token classifier has no pooler).
func TestLoRATokenHead(t *testing.T) {
	cfg, err := LoadConfig(filepath.Join("testdata", "tiny", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Head = hf.TokenClassification
	b := cfg.LoRABase("")
	if b.TaskType != lora.TokenCls || len(b.Head) != 2 || b.Head[0].Name != "classifier.weight" || b.Linears[len(b.Linears)-1].Module == "pooler.dense" {
		t.Errorf("token classifier's base: task %s, head %v; want TOKEN_CLS and the classifier", b.TaskType, b.Head)
	}
}

// TestLoRAAdapterNeedsThePooler: an adapter (which holds A, B and the classifier, not the
// frozen pooler, as PEFT's files do) loaded onto a base without a pooler, such as
// microsoft/deberta-v3-base, is refused naming pooler.dense: the pooler would be drawn afresh
// and the model would not be the one trained. On the base with the pooler it loads.
func TestLoRAAdapterNeedsThePooler(t *testing.T) {
	k := loraKit(t)
	clf, err := k.Load(k.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clf.AttachLoRA(lora.Config{R: 2}, k.Dir); err != nil {
		t.Fatal(err)
	}
	adapter := filepath.Join(t.TempDir(), "adapter")
	if _, err := LoadAdapter(adapter, clf); err == nil {
		t.Error("LoadAdapter onto a classifier that has an adapter gave no error")
	}
	if err := SaveAdapter(adapter, clf); err == nil {
		t.Fatal("SaveAdapter before A and B exist gave no error")
	}
	exec, err := model.NewExec(familytest.XLA(t), clf.Store(), func(s *model.Scope, ids, mask *Node) *Node {
		return clf.Logits(s, []*Node{ids, mask})
	})
	if err != nil {
		t.Fatal(err)
	}
	b := k.Train.Batches[0]
	if _, err := exec.Call(familytest.Matrix(b.InputIDs), familytest.Matrix(b.AttentionMask)); err != nil {
		t.Fatal(err)
	}
	if err := SaveAdapter(adapter, clf); err != nil {
		t.Fatal(err)
	}
	noPooler := familytest.CopyFolder(t, k.Dir, func(l []safetensors.Named) []safetensors.Named {
		return familytest.Without("pooler.dense.bias")(familytest.Without("pooler.dense.weight")(l))
	}, nil)
	base, err := LoadPretrained(noPooler, model.NewStore(), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = LoadAdapter(adapter, base)
	t.Logf("adapter onto a base without a pooler: %v", err)
	if err == nil || !strings.Contains(err.Error(), "pooler.dense.weight") || !strings.Contains(err.Error(), "merged folder") {
		t.Errorf("adapter onto a base without a pooler: got %v, want an error naming pooler.dense and the merged folder", err)
	}
	if base.Adapter() != nil {
		t.Error("the refused adapter was attached")
	}
	if _, err := LoadAdapter(adapter, loraKitBase(t, k)); err != nil {
		t.Errorf("adapter onto the base with its pooler: %v", err)
	}
}

// loraKitBase loads the kit's checkpoint without its classifier (the adapter brings it).
func loraKitBase(t *testing.T, k familytest.LoRAKit[*Classifier]) *Classifier {
	t.Helper()
	c, err := LoadPretrained(k.Dir, model.NewStore(), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
