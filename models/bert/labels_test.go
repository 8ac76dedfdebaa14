package bert

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/gomlx/ml/model"
)

// TestSavePretrainedKeepsLabelNames: a classifier whose Config.Labels names its classes is
// saved with id2label, label2id and problem_type in config.json, as transformers writes them,
// and loads back with the same names; unnamed classes are written as transformers' LABEL_i and
// read back unnamed; another NumLabels at load drops the names of the old head.
func TestSavePretrainedKeepsLabelNames(t *testing.T) {
	clf, tok := newMicroModel(t, mustGoBackend(t), 5, 12)
	clf.Config.Labels = []string{"negative", "neutral", "positive"}
	dir := filepath.Join(t.TempDir(), "named")
	if err := SavePretrained(dir, clf, tok); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		ID2Label    map[string]string `json:"id2label"`
		Label2ID    map[string]int    `json:"label2id"`
		ProblemType string            `json:"problem_type"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	wantID2Label := map[string]string{"0": "negative", "1": "neutral", "2": "positive"}
	wantLabel2ID := map[string]int{"negative": 0, "neutral": 1, "positive": 2}
	if !mapsEqual(got.ID2Label, wantID2Label) || !mapsEqual(got.Label2ID, wantLabel2ID) ||
		got.ProblemType != "single_label_classification" {
		t.Errorf("config.json has id2label %v, label2id %v, problem_type %q; want %v, %v, single_label_classification",
			got.ID2Label, got.Label2ID, got.ProblemType, wantID2Label, wantLabel2ID)
	}
	back, _, err := LoadPretrained(dir, model.NewStore(), LoadOptions{MaxLen: 12})
	if err != nil || !slices.Equal(back.Config.Labels, clf.Config.Labels) {
		t.Errorf("loaded back: labels %q (%v), want %q", back.Config.Labels, err, clf.Config.Labels)
	}
	if other, _, err := LoadPretrained(dir, nil, LoadOptions{NumLabels: 2}); err != nil || other.Config.Labels != nil {
		t.Errorf("NumLabels 2 on a folder of 3 named classes: labels %q (%v), want none", other.Config.Labels, err)
	}
	if same, _, err := LoadPretrained(dir, nil, LoadOptions{NumLabels: 3}); err != nil || len(same.Config.Labels) != 3 {
		t.Errorf("NumLabels 3 on a folder of 3 named classes: labels %q (%v), want the folder's", same.Config.Labels, err)
	}

	clf.Config.Labels = nil
	unnamed := filepath.Join(t.TempDir(), "unnamed")
	if err := SavePretrained(unnamed, clf, tok); err != nil {
		t.Fatal(err)
	}
	raw, _ = os.ReadFile(filepath.Join(unnamed, "config.json"))
	if !strings.Contains(string(raw), `"2": "LABEL_2"`) || !strings.Contains(string(raw), `"LABEL_0": 0`) {
		t.Errorf("unnamed classes: config.json lacks transformers' default names:\n%s", raw)
	}
	if back, _, err := LoadPretrained(unnamed, nil, LoadOptions{MaxLen: 12}); err != nil || back.Config.Labels != nil {
		t.Errorf("unnamed classes loaded back as %q (%v), want none", back.Config.Labels, err)
	}
}

func mapsEqual[V comparable](a, b map[string]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestLabelNamesRefused: id2label that does not describe the head is an error naming the key.
func TestLabelNamesRefused(t *testing.T) {
	base := `"vocab_size": 10, "hidden_size": 4, "num_hidden_layers": 1, "num_attention_heads": 1, "intermediate_size": 4`
	for _, c := range []struct{ json, want string }{
		{`"id2label": {"0": "a", "2": "b"}`, `id2label has the key "2": want the class ids 0 to 1`},
		{`"id2label": {"0": "a", "1": 7}`, `id2label["1"] is 7: want a string`},
		{`"id2label": {"0": "a", "1": "a"}`, `id2label names classes 0 and 1 both "a"`},
		{`"id2label": {"0": "a", "1": "b"}, "label2id": {"a": 1, "b": 0}`, `label2id["a"] is 1, but id2label names the classes ["a" "b"]`},
	} {
		if _, err := ParseConfig([]byte("{"+base+", "+c.json+"}"), "x/config.json"); err == nil ||
			!strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "x/config.json") {
			t.Errorf("%s: %v, want an error naming x/config.json and containing %q", c.json, err, c.want)
		}
	}
	cfg := TinyConfig(10)
	cfg.Labels = []string{"a", "b", "c"}
	if _, err := NewClassifier(cfg, model.NewStore()); err == nil || !strings.Contains(err.Error(), "num_labels is 2") {
		t.Errorf("3 label names for 2 classes: %v, want an error", err)
	}
}

// TestLabelNamesReadByTransformers: transformers' AutoConfig (no torch needed) reads the names
// a saved folder carries. Without a python3 that imports transformers it is skipped with a line
// that starts with SKIPPING, except under CI, where it fails.
func TestLabelNamesReadByTransformers(t *testing.T) {
	py := testutil.Python(t, "transformers", "pip's transformers (make deps)")
	clf, tok := newMicroModel(t, mustGoBackend(t), 5, 12)
	clf.Config.Labels = []string{"negative", "neutral", "positive"}
	dir := filepath.Join(t.TempDir(), "named")
	if err := SavePretrained(dir, clf, tok); err != nil {
		t.Fatal(err)
	}
	script := `import json, sys
from transformers import AutoConfig
c = AutoConfig.from_pretrained(sys.argv[1])
print(json.dumps({"id2label": {str(k): v for k, v in c.id2label.items()}, "problem_type": c.problem_type}))`
	out, err := exec.Command(py, "-c", script, dir).Output()
	if err != nil {
		t.Fatalf("transformers' AutoConfig on %s: %v", dir, err)
	}
	var got struct {
		ID2Label    map[string]string `json:"id2label"`
		ProblemType string            `json:"problem_type"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := map[string]string{"0": "negative", "1": "neutral", "2": "positive"}
	if !mapsEqual(got.ID2Label, want) || got.ProblemType != "single_label_classification" {
		t.Errorf("AutoConfig.from_pretrained: id2label %v, problem_type %q; want %v, single_label_classification",
			got.ID2Label, got.ProblemType, want)
	}
}
