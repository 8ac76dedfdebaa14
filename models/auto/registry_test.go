package auto_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/text"
	"github.com/goaccel/goaccel/models/auto"
	"github.com/goaccel/goaccel/models/auto/autotest"
	"github.com/goaccel/goaccel/models/lora"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// registerToy registers the toy family once per test binary.
var registerToy = sync.OnceValue(func() error { return auto.Register(autotest.Family) })

// toyFolder writes a toy folder (config.json and vocab.txt, no weights) into a new folder.
func toyFolder(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cfg := `{"model_type": "toy-bag", "vocab_size": 8, "hidden_size": 4, "max_length": 6, "num_labels": 2}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	vocab := "[PAD]\n[UNK]\ngood\nbad\nfine\nawful\n"
	if err := os.WriteFile(filepath.Join(dir, "vocab.txt"), []byte(vocab), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRegisterToyFamily: a family that only this test registers (models/auto/autotest) is
// inspected, loaded, trained, predicted with and saved through models/auto, and what it
// saved loads back with its head and predicts the same; estimate's blank builds it.
func TestRegisterToyFamily(t *testing.T) {
	if err := registerToy(); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(auto.Families(), autotest.ModelType) || auto.FamilyOf(autotest.ModelType) != autotest.Family {
		t.Fatalf("Families() = %v after Register", auto.Families())
	}
	if err := auto.Register(autotest.Family); err == nil || !strings.Contains(err.Error(), "toy") {
		t.Errorf("registering the toy twice: %v", err)
	}
	dir := toyFolder(t)
	m, err := auto.Load(dir, nil, auto.Options{Labels: []string{"neg", "pos"}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Family != autotest.ModelType || m.Processor.Kind() != "words" || m.NumLabels() != 2 || m.Labels()[1] != "pos" {
		t.Fatalf("loaded %s with a %s processor, labels %v", m.Family, m.Processor.Kind(), m.Labels())
	}
	train := data.Slice[text.Labeled]{{Text: "good fine", Label: 1}, {Text: "bad awful", Label: 0},
		{Text: "fine", Label: 1}, {Text: "awful bad", Label: 0}}
	acc, err := accelerator.New(accelerator.Config{Backend: "go", Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	loader, err := data.NewLoader(train, data.LoaderConfig[text.Labeled]{BatchSize: 4, Collate: text.Collator(m.Tokenizer().Process)})
	if err != nil {
		t.Fatal(err)
	}
	job, err := acc.Prepare(m.Classifier, optimizer.Adam().LearningRate(0.1).Done(), loader)
	if err != nil {
		t.Fatal(err)
	}
	step := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *Node {
		l := accelerator.CrossEntropy(m.Logits(s, b.Inputs), b.Labels, b.Mask)
		acc.Backward(s, l)
		return l
	})
	var losses []float64
	for range 15 {
		for batch, err := range job.Batches() {
			if err != nil {
				t.Fatal(err)
			}
			loss, err := step.Run(batch)
			if err != nil {
				t.Fatal(err)
			}
			v, err := loss.Value()
			if err != nil {
				t.Fatal(err)
			}
			losses = append(losses, v)
		}
	}
	if last := losses[len(losses)-1]; !(last < losses[0]/2) {
		t.Errorf("losses %v: the toy did not learn", losses)
	}
	texts := []string{"good", "awful", "fine good"}
	p, err := auto.NewPredictor(m, acc.Backend(), 2)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Predict(texts)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Label != "pos" || got[1].Label != "neg" || got[2].Label != "pos" {
		t.Errorf("predictions %+v", got)
	}
	out := t.TempDir()
	if err := m.SavePretrained(out); err != nil {
		t.Fatal(err)
	}
	back, err := auto.Load(out, nil, auto.Options{LoadHead: true})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := auto.NewPredictor(back, acc.Backend(), 2)
	if err != nil {
		t.Fatal(err)
	}
	again, err := p2.Predict(texts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if again[i].Label != got[i].Label || again[i].Score != got[i].Score {
			t.Errorf("text %q: %+v after save and load, %+v before", texts[i], again[i], got[i])
		}
	}
	blank, err := auto.NewBlank(out, 3, 6)
	if err != nil || blank.Family != autotest.ModelType || blank.Inputs != 2 || blank.Classifier.NumParameters() != 8*4+4*3+3 {
		t.Errorf("NewBlank of the toy: %+v, %v", blank, err)
	}
	if _, err := auto.Load(dir, nil, auto.Options{LoRA: &lora.Config{}}); err == nil || !strings.Contains(err.Error(), "toy: no LoRA") {
		t.Errorf("LoRA on the toy: %v", err)
	}
}

// TestToyUsesPublicPackages: the toy family imports no internal package, so a family of
// another module can do what it does.
func TestToyUsesPublicPackages(t *testing.T) {
	files, err := filepath.Glob("autotest/*.go")
	if err != nil || len(files) == 0 {
		t.Fatal(files, err)
	}
	for _, f := range files {
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal") {
				t.Errorf("%s imports %s", f, path)
			}
			if strings.HasPrefix(path, "github.com/goaccel/goaccel/models/") && path != "github.com/goaccel/goaccel/models/auto" &&
				path != "github.com/goaccel/goaccel/models/lora" {
				t.Errorf("%s imports another model package, %s", f, path)
			}
		}
	}
}
