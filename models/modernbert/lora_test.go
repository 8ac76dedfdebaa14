package modernbert

import (
	"path/filepath"
	"testing"

	"github.com/goaccel/goaccel/models/internal/familytest"
	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/goaccel/goaccel/models/lora"
	"github.com/gomlx/gomlx/ml/model"
)

// loraKit is the tiny checkpoint for models/internal/familytest's LoRA checks: default target
// Wqkv, the extra target "dense" (head.dense, which PEFT adapts though it does not train it),
// head.dense and head.norm frozen as PEFT leaves them.
func loraKit(t *testing.T) familytest.LoRAKit[*Classifier] {
	return familytest.LoRAKit[*Classifier]{
		Family: "modernbert", Dir: filepath.Join("testdata", "tiny"), Train: loadFixtures(t).Models["tiny"].Train,
		Load: func(dir string) (*Classifier, error) {
			return LoadPretrained(dir, model.NewStore(), LoadOptions{LoadHead: true})
		},
		SavePretrained: SavePretrained, LoadAdapter: LoadAdapter,
		Defaults: []string{"Wqkv"}, Extra: "dense", HeadFrozen: []string{"head.dense.weight", "head.norm.weight"},
		Lacks: "query", Has: `"attn.Wo"`,
	}
}

// TestLoRA: familytest.LoRAKit.Check: a fresh adapter is the base bit for bit; Adam steps
// train only A, B and the classifier (head.dense and head.norm stay as loaded, as in PEFT); SavePretrained writes the
// merged folder and PEFT's files, and with GOACCEL_TORCH_PYTHON PEFT and transformers give
// goaccel's logits within 1e-5 and PEFT trains the same tensors; bad targets and adapters
// that do not fit are errors naming what is wrong.
func TestLoRA(t *testing.T) { loraKit(t).Check(t) }

// TestLoRATokenHead: a token classifier's adapter is TOKEN_CLS, with the same frozen
// prediction head and the classifier to train.
func TestLoRATokenHead(t *testing.T) {
	cfg, err := LoadConfig(filepath.Join("testdata", "tiny", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Head = hf.TokenClassification
	b := cfg.LoRABase("")
	if b.TaskType != lora.TokenCls || len(b.Head) != 2 || b.Head[0].Name != "classifier.weight" {
		t.Errorf("token classifier's base: task %s, head %v; want TOKEN_CLS and the classifier", b.TaskType, b.Head)
	}
}

// TestLoRAOnWi: an adapter on Wi (whose two halves linearHalves multiplies apart when no
// adapter targets it) gives the logits of its merged folder, loaded without an adapter,
// within 1e-5 (familytest.LoRAKit.CheckSave with Wi as the extra target).
func TestLoRAOnWi(t *testing.T) {
	k := loraKit(t)
	k.Extra = "Wi"
	k.CheckSave(t)
}
