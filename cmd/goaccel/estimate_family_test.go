package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/models/auto"
	"github.com/goaccel/goaccel/models/auto/autotest"
	"github.com/goaccel/goaccel/models/deberta"
	"github.com/goaccel/goaccel/models/modernbert"
	"github.com/goaccel/goaccel/models/vit"
	"github.com/gomlx/gomlx/ml/model"
)

// countOf is the parameter count of the classifier of the config.json at path with 5
// classes, as the family's own package builds it.
func countOf[C any, K interface{ NumParameters() int }](t *testing.T, path string, load func(string) (C, error),
	labels func(*C) *int, build func(C, *model.Store) (K, error)) int {
	t.Helper()
	cfg, err := load(path)
	if err != nil {
		t.Fatal(err)
	}
	*labels(&cfg) = 5
	clf, err := build(cfg, model.NewStore())
	if err != nil {
		t.Fatal(err)
	}
	return clf.NumParameters()
}

// TestEstimateEveryFamily: `goaccel estimate` plans the step of every family models/auto
// loads, not only BERT's: the ModernBERT and DeBERTa fixtures, with their parameter counts
// as the families' own classifiers give them.
func TestEstimateEveryFamily(t *testing.T) {
	for _, c := range []struct {
		dir, family string
		params      func(t *testing.T, config string) int
	}{
		{"../../models/modernbert/testdata/tiny", "modernbert", func(t *testing.T, config string) int {
			return countOf(t, config, modernbert.LoadConfig, func(c *modernbert.Config) *int { return &c.NumLabels }, modernbert.NewClassifier)
		}},
		{"../../models/deberta/testdata/tiny", "deberta-v2", func(t *testing.T, config string) int {
			return countOf(t, config, deberta.LoadConfig, func(c *deberta.Config) *int { return &c.NumLabels }, deberta.NewClassifier)
		}},
		{"../../models/vit/testdata/tiny", "vit", func(t *testing.T, config string) int { // 32x32 images, its image_size
			return countOf(t, config, vit.LoadConfig, func(c *vit.Config) *int { return &c.NumLabels }, vit.NewClassifier)
		}},
	} {
		t.Run(c.family, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run([]string{"estimate", "--batch_size", "2", "--seq_len", "16", "--num_labels", "5", "--device_memory", "1GiB", c.dir}, &out, &errOut)
			t.Logf("%s%s", out.String(), errOut.String())
			if code != 0 {
				t.Fatalf("exit %d, want 0", code)
			}
			want := fmt.Sprintf("%s classifier, %d parameters", c.family, c.params(t, filepath.Join(c.dir, "config.json")))
			for _, w := range []string{want, "fits the budget of 1.0 GiB"} {
				if !strings.Contains(out.String(), w) {
					t.Errorf("the output does not say %q", w)
				}
			}
		})
	}
	// --seq_len beyond the model's positions is the family's error, naming the flag.
	var out, errOut bytes.Buffer
	if code := run([]string{"estimate", "--seq_len", "4096", "../../models/modernbert/testdata/tiny"}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), "--seq_len 4096") || !strings.Contains(errOut.String(), "max_position_embeddings") {
		t.Errorf("--seq_len 4096 on ModernBERT: exit %d, %s", code, errOut.String())
	}
}

// TestEstimateRegisteredFamily: a family registered through auto.Register (the toy of
// models/auto/autotest, which goaccel does not name) is planned as the built-in ones are.
func TestEstimateRegisteredFamily(t *testing.T) {
	if auto.FamilyOf(autotest.ModelType) == nil {
		if err := auto.Register(autotest.Family); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	cfg := `{"model_type": "toy-bag", "vocab_size": 8, "hidden_size": 4, "max_length": 16, "num_labels": 2}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run([]string{"estimate", "--batch_size", "2", "--seq_len", "16", "--num_labels", "3", dir}, &out, &errOut)
	if code != 0 || !strings.Contains(out.String(), "toy-bag classifier, 47 parameters") { // 8x4 + 4x3 + 3
		t.Errorf("exit %d:\n%s%s", code, out.String(), errOut.String())
	}
}
