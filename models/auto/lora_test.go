package auto

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/bert"
	"github.com/goaccel/goaccel/models/bert/sample"
	"github.com/goaccel/goaccel/models/lora"
	"github.com/gomlx/gomlx/ml/model"
)

// TestOptionsLoRA: Options.LoRA attaches an adapter to a BERT-family model loaded by Load (a
// fresh adapter: the logits are the base's); Model.SavePretrained writes the merged folder,
// which Load reads with the same logits, and PEFT's files in adapter/. TestOptionsLoRAEveryFamily
// does the same for ModernBERT and DeBERTa.
func TestOptionsLoRA(t *testing.T) {
	base, baseTok, err := sample.TinyClassifier(model.NewStore(), 16)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := BERT(base, baseTok, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := logits(t, plain, texts)
	baseDir := t.TempDir()
	if err := plain.SavePretrained(baseDir); err != nil {
		t.Fatal(err)
	}
	m, err := Load(baseDir, nil, Options{MaxLen: 16, LoadHead: true, LoRA: &lora.Config{R: 2}})
	if err != nil {
		t.Fatal(err)
	}
	clf := m.Classifier.(*bert.Classifier)
	if clf.Adapter() == nil || len(clf.Adapter().Targets()) == 0 {
		t.Fatal("Options.LoRA: the classifier has no adapter")
	}
	if d := testutil.MaxAbsDiff(t, "logits", logits(t, m, texts), want); d != 0 {
		t.Errorf("a fresh adapter changes the logits by %g", d)
	}
	dir := t.TempDir()
	if err := m.SavePretrained(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, bert.AdapterDir, "adapter_config.json")); err != nil {
		t.Errorf("SavePretrained with LoRA wrote no adapter: %v", err)
	}
	back, err := Load(dir, nil, Options{MaxLen: 16, LoadHead: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := testutil.MaxAbsDiff(t, "logits", logits(t, back, texts), want); d > 1e-6 {
		t.Errorf("the merged folder gives logits %g away", d)
	}
}

// TestOptionsLoRAEveryFamily: Options.LoRA attaches an adapter to ModernBERT and DeBERTa
// loaded by Load (with the checkpoints' heads), with their defaults (Wqkv; query_proj and
// value_proj) on every layer; a fresh adapter gives the base's logits; Model.SavePretrained writes the merged folder, which Load reads with the
// same logits, PEFT's files in adapter/ and the tokenizer; a target module the family lacks
// is an error naming the ones it has; gradient checkpointing is still refused.
func TestOptionsLoRAEveryFamily(t *testing.T) {
	for _, c := range []struct {
		family, dir string
		maxLen      int
		targets     []string // the default targets' last parts
		has         string   // a layer the family has, named by the error for "query"
	}{
		{"modernbert", modernBERTFolder(t), 12, []string{"Wqkv"}, `"Wo"`},
		{"deberta-v2", copyFolder(t, filepath.Join("..", "deberta", "testdata", "tiny")), 16, []string{"query_proj", "value_proj"}, `"pooler.dense"`},
	} {
		t.Run(c.family, func(t *testing.T) {
			opts := Options{MaxLen: c.maxLen, LoadHead: true}
			plain, err := Load(c.dir, nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			want := logits(t, plain, texts)
			opts.LoRA = &lora.Config{R: 2}
			m, err := Load(c.dir, nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			a := m.Classifier.(interface{ Adapter() *lora.Adapter }).Adapter()
			if a == nil || len(a.Targets()) != 3*len(c.targets) {
				t.Fatalf("Options.LoRA on %s: adapter %v, want %q in each of the 3 layers", c.family, a, c.targets)
			}
			if fmt.Sprint(a.Config().TargetModules) != fmt.Sprint(c.targets) {
				t.Errorf("default targets %q, want %q", a.Config().TargetModules, c.targets)
			}
			if d := testutil.MaxAbsDiff(t, "logits", logits(t, m, texts), want); d != 0 {
				t.Errorf("a fresh adapter changes the logits by %g", d)
			}
			dir := t.TempDir()
			if err := m.SavePretrained(dir); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"adapter/adapter_config.json", "adapter/adapter_model.safetensors", "config.json", "model.safetensors"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("SavePretrained with LoRA: %v", err)
				}
			}
			back, err := Load(dir, nil, Options{MaxLen: c.maxLen, LoadHead: true})
			if err != nil {
				t.Fatal(err)
			}
			if d := testutil.MaxAbsDiff(t, "logits", logits(t, back, texts), want); d > 1e-6 {
				t.Errorf("the merged folder gives logits %g away", d)
			}
			opts.LoRA = &lora.Config{TargetModules: []string{"query"}}
			if _, err := Load(c.dir, nil, opts); err == nil || !strings.Contains(err.Error(), `"query"`) || !strings.Contains(err.Error(), c.has) {
				t.Errorf("target query on %s: err = %v, want one naming it and the family's layers (%s)", c.family, err, c.has)
			}
			if _, err := Load(c.dir, nil, Options{MaxLen: c.maxLen, GradientCheckpointing: true, LoRA: &lora.Config{}}); err != nil {
				t.Errorf("GradientCheckpointing with LoRA on %s: %v", c.family, err)
			}
		})
	}
}
