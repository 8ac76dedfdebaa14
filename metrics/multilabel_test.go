package metrics

import (
	"math"
	"strings"
	"testing"
)

// TestMultiLabelHandComputed checks the scores against figures worked out by hand (those of
// scikit-learn's precision_recall_fscore_support with zero_division="warn").
func TestMultiLabelHandComputed(t *testing.T) {
	tests := []struct {
		name         string
		k            int
		threshold    float64
		logits       [][]float64
		labels       [][]int
		real         []bool
		count        int
		perLabel     []Scores
		micro, macro Scores
		subset       float64
	}{
		{
			// Predicted sets {0}, {1}, {2}; gold {0}, {0 1}, {}.
			name: "godoc example", k: 3,
			logits: [][]float64{{2, -1, -3}, {-0.5, 0.1, -2}, {-4, -4, 1}},
			labels: [][]int{{0}, {1, 0}, {}},
			count:  3,
			// Label 0: TP=1 FN=1. Label 1: TP=1. Label 2: FP=1.
			perLabel: []Scores{{1, 0.5, 2.0 / 3, 2}, {1, 1, 1, 1}, {0, 0, 0, 0}},
			micro:    Scores{2.0 / 3, 2.0 / 3, 2.0 / 3, 3},
			macro:    Scores{2.0 / 3, 0.5, 5.0 / 9, 3},
			subset:   1.0 / 3,
		},
		{
			// Label 1 is neither gold nor predicted anywhere: it counts as 0 in the macro
			// averages (scikit-learn's default), which halves them.
			name: "label with no gold and no prediction", k: 2,
			logits: [][]float64{{1, -1}, {1, -1}},
			labels: [][]int{{0}, {0}},
			count:  2,
			// An example with no gold label and no prediction would match; these match too.
			perLabel: []Scores{{1, 1, 1, 2}, {0, 0, 0, 0}},
			micro:    Scores{1, 1, 1, 2},
			macro:    Scores{0.5, 0.5, 0.5, 2},
			subset:   1,
		},
		{
			// A logit of exactly 0 is sigmoid 0.5, not above the threshold: not predicted,
			// as run_classification.py's logits > 0.
			name: "logit 0 is not predicted", k: 1,
			logits: [][]float64{{0}, {0.001}, {math.Inf(-1)}, {math.Inf(1)}},
			labels: [][]int{{0}, {0}, {}, {}},
			count:  4,
			// TP=1 (0.001), FN=1 (0), FP=1 (+Inf), TN=1.
			perLabel: []Scores{{0.5, 0.5, 0.5, 2}},
			micro:    Scores{0.5, 0.5, 0.5, 2}, macro: Scores{0.5, 0.5, 0.5, 2},
			subset: 0.5,
		},
		{
			// sigmoid(-1) ≈ 0.269 > 0.25: predicted at threshold 0.25.
			name: "threshold 0.25", k: 2, threshold: 0.25,
			logits: [][]float64{{-1, -1.2}, {-0.9, 3}},
			labels: [][]int{{0}, {1}},
			count:  2,
			// Label 0: TP=1 FP=1. Label 1: TP=1 (sigmoid(-1.2) ≈ 0.23 is not above).
			perLabel: []Scores{{0.5, 1, 2.0 / 3, 1}, {1, 1, 1, 1}},
			micro:    Scores{2.0 / 3, 1, 0.8, 2},
			macro:    Scores{0.75, 1, 5.0 / 6, 2},
			subset:   0.5,
		},
		{
			name: "padding is skipped, whatever it holds", k: 2,
			logits: [][]float64{{1, 1}, {math.NaN()}, {-1, -1}},
			labels: [][]int{{0, 1}, {7, 7}, {1}},
			real:   []bool{true, false, true},
			count:  2,
			// Label 0: TP=1. Label 1: TP=1 FN=1.
			perLabel: []Scores{{1, 1, 1, 1}, {1, 0.5, 2.0 / 3, 2}},
			micro:    Scores{1, 2.0 / 3, 0.8, 3},
			macro:    Scores{1, 0.75, 5.0 / 6, 3},
			subset:   0.5,
		},
		{name: "empty", k: 2, perLabel: []Scores{{}, {}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMultiLabel(tc.k)
			if tc.threshold != 0 {
				if err := m.SetThreshold(tc.threshold); err != nil {
					t.Fatal(err)
				}
			}
			if err := m.Add(tc.logits, tc.labels, tc.real); err != nil {
				t.Fatal(err)
			}
			if m.Count() != tc.count || !near(m.SubsetAccuracy(), tc.subset) {
				t.Errorf("count %d subset accuracy %g, want %d %g", m.Count(), m.SubsetAccuracy(), tc.count, tc.subset)
			}
			for k, want := range tc.perLabel {
				if got := m.Label(k); !nearScores(got, want) {
					t.Errorf("label %d: %+v, want %+v", k, got, want)
				}
			}
			if got := m.Micro(); !nearScores(got, tc.micro) {
				t.Errorf("micro %+v, want %+v", got, tc.micro)
			}
			if got := m.Macro(); !nearScores(got, tc.macro) {
				t.Errorf("macro %+v, want %+v", got, tc.macro)
			}
		})
	}
}

func TestMultiLabelErrors(t *testing.T) {
	tests := []struct {
		name   string
		logits [][]float64
		labels [][]int
		real   []bool
		want   string
	}{
		{"lengths", [][]float64{{1, 1}}, nil, nil, "1 rows of logits but 0 label sets"},
		{"mask length", [][]float64{{1, 1}}, [][]int{{}}, []bool{true, false}, "1 examples but 2 mask values"},
		{"ragged row", [][]float64{{1, 1}, {1}}, [][]int{{}, {}}, nil, "example 1: 1 logits, want 2"},
		{"NaN", [][]float64{{1, math.NaN()}}, [][]int{{}}, nil, "example 0: the logit of label 1 is NaN"},
		{"label range", [][]float64{{1, 1}, {1, 1}}, [][]int{{0}, {2}}, nil, "example 1: label 2 out of range [0, 2)"},
		{"negative label", [][]float64{{1, 1}}, [][]int{{-1}}, nil, "example 0: label -1 out of range"},
		{"label twice", [][]float64{{1, 1}}, [][]int{{1, 0, 1}}, nil, "example 0: label 1 is listed twice in [1 0 1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMultiLabel(2)
			err := m.Add(tc.logits, tc.labels, tc.real)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "metrics: MultiLabel.Add: ") {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if m.Count() != 0 || m.Micro().Support != 0 {
				t.Error("a failed Add added examples")
			}
		})
	}
	m := NewMultiLabel(2)
	for _, p := range []float64{0, 1, -0.5, math.NaN()} {
		if err := m.SetThreshold(p); err == nil || !strings.Contains(err.Error(), "strictly between 0 and 1") {
			t.Errorf("SetThreshold(%g): %v", p, err)
		}
	}
	if m.Threshold() != 0.5 {
		t.Errorf("a refused threshold changed it to %g", m.Threshold())
	}
	if err := m.Merge(NewMultiLabel(3)); err == nil || !strings.Contains(err.Error(), "same NewMultiLabel(numLabels)") {
		t.Errorf("Merge: %v", err)
	}
	if s := m.Label(2); !math.IsNaN(s.F1) {
		t.Errorf("label out of range: %+v, want NaN", s)
	}
}

func TestMultiLabelValuesStringMergeReset(t *testing.T) {
	m := NewMultiLabel(3)
	logits := [][]float64{{2, -1, -3}, {-0.5, 0.1, -2}, {-4, -4, 1}}
	labels := [][]int{{0}, {1, 0}, {}}
	if err := m.Add(logits, labels, nil); err != nil {
		t.Fatal(err)
	}
	checkValues(t, m.Values(), map[string]float64{"count": 3, "subset_accuracy": 1.0 / 3, "micro_precision": 2.0 / 3,
		"micro_recall": 2.0 / 3, "micro_f1": 2.0 / 3, "macro_precision": 2.0 / 3, "macro_recall": 0.5, "macro_f1": 5.0 / 9})
	if s := m.String(); s != "n=3 subset_accuracy=0.3333 micro_precision=0.6667 micro_recall=0.6667 micro_f1=0.6667 macro_f1=0.5556" {
		t.Errorf("String() = %q", s)
	}
	// Two halves merged equal the whole.
	a, b := NewMultiLabel(3), NewMultiLabel(3)
	_ = a.Add(logits[:1], labels[:1], nil)
	_ = b.Add(logits[1:], labels[1:], nil)
	if err := a.Merge(b); err != nil || a.String() != m.String() {
		t.Errorf("merged %q (%v), want %q", a, err, m)
	}
	m.Reset()
	if m.Count() != 0 || m.Micro() != (Scores{}) || m.NumLabels() != 3 {
		t.Errorf("after Reset: %v", m)
	}
}
