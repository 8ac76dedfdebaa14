package deberta

import (
	"path/filepath"
	"testing"

	"github.com/goaccel/goaccel/models/bert"
	"github.com/goaccel/goaccel/models/internal/familytest"
	"github.com/goaccel/goaccel/models/lora"
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
	cfg.Head = bert.TokenClassification
	b := cfg.LoRABase("")
	if b.TaskType != lora.TokenCls || len(b.Head) != 2 || b.Head[0].Name != "classifier.weight" || b.Linears[len(b.Linears)-1].Module == "pooler.dense" {
		t.Errorf("token classifier's base: task %s, head %v; want TOKEN_CLS and the classifier", b.TaskType, b.Head)
	}
}
