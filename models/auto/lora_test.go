package auto

import (
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
// which Load reads with the same logits, and PEFT's files in adapter/; ModernBERT refuses the
// option.
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
	if _, err := Load(modernBERTFolder(t), nil, Options{MaxLen: 12, LoRA: &lora.Config{}}); err == nil || !strings.Contains(err.Error(), "LoRA") {
		t.Errorf("LoRA on modernbert: err = %v, want one saying it is not supported", err)
	}
}
