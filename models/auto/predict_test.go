package auto

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// pipelineFixture is testdata/predict_pipeline.json (scripts/make_predict_fixtures.py).
type pipelineFixture struct {
	MaxLen      int                  `json:"max_len"`
	Texts       []string             `json:"texts"`
	Labels      []string             `json:"labels"`
	SingleLabel []map[string]float64 `json:"single_label"`
	MultiLabel  []map[string]float64 `json:"multi_label"`
}

// predictFixture is testdata/predict_pipeline.json.
func predictFixture(t *testing.T) pipelineFixture {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "predict_pipeline.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f pipelineFixture
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestPredictMatchesPipeline: a Predictor on a DeBERTa-v3 folder answers what transformers'
// text-classification pipeline answers on it, the same top label and every score within 1e-5:
// softmax for a single-label head, sigmoid for a multi-label one (the same weights, the
// folder's problem_type changed), on texts with accents, CJK, emoji, special tokens, an empty
// text and one longer than max_len, in batches of 4 (a short last batch).
func TestPredictMatchesPipeline(t *testing.T) {
	f := predictFixture(t)
	for _, c := range []struct {
		name string
		want []map[string]float64
		opts Options
	}{
		{"single-label", f.SingleLabel, Options{MaxLen: f.MaxLen, LoadHead: true}},
		{"multi-label", f.MultiLabel, Options{MaxLen: f.MaxLen, LoadHead: true, Labels: f.Labels, ProblemType: "multi_label_classification"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := Load(copyFolder(t, filepath.Join("..", "deberta", "testdata", "tiny")), nil, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewPredictor(m, goBackend(t), 4)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Predict(f.Texts)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(f.Texts) {
				t.Fatalf("%d predictions for %d texts", len(got), len(f.Texts))
			}
			var worst float64
			for i, pred := range got {
				names := m.Labels()
				bestName, best := "", -1.0
				for j, score := range pred.Scores {
					name := labelName(names, j)
					want, ok := c.want[i][name]
					if !ok {
						t.Fatalf("text %d: the pipeline has no score for %q (it has %v)", i, name, c.want[i])
					}
					worst = math.Max(worst, math.Abs(score-want))
					if want > best {
						bestName, best = name, want
					}
				}
				if pred.Label != bestName {
					t.Errorf("text %d (%q): top label %s, the pipeline's %s", i, f.Texts[i], pred.Label, bestName)
				}
			}
			t.Logf("%s: %d texts, the same top label, scores within %.2g of the pipeline's", c.name, len(got), worst)
			if worst > 1e-5 {
				t.Errorf("scores differ from the pipeline's by %g, want at most 1e-5", worst)
			}
		})
	}
}

// labelName is id2label's name of class i, transformers' LABEL_i when unnamed.
func labelName(names []string, i int) string {
	if names != nil {
		return names[i]
	}
	return "LABEL_" + strconv.Itoa(i)
}
