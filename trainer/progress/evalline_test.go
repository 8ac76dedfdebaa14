package progress

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestEvalLineFits100Columns: the evaluation line keeps the headline metric first and fits
// a 100-column terminal even with large numbers and many metrics (the others, the loss
// included, are in metrics.jsonl only).
func TestEvalLineFits100Columns(t *testing.T) {
	many := map[string]float64{"accuracy": 0.85571, "f1": 0.8512, "loss": 0.33123, "precision": 0.84, "recall": 0.86}
	for _, e := range []EvalSummary{
		{Step: 1234567, Epoch: 123.45, Metrics: many, Headline: "f1", Best: 0.9123, BestStep: 1234000, Examples: 1234567,
			Duration: 12345 * time.Second},
		{Step: 8, Epoch: 1, Metrics: many, Headline: "accuracy", Improved: true, Best: 0.85571, BestStep: 8,
			Examples: 1067, Duration: 25 * time.Second},
		{Step: 3, Epoch: 0.13, Metrics: map[string]float64{"accuracy": 0.5}, Best: math.NaN(), Examples: 80},
	} {
		line := EvalLine(e)
		if len(line) > 100 {
			t.Errorf("%d columns: %s", len(line), line)
		}
		head := e.Headline
		if head == "" {
			head = "accuracy"
		}
		if !strings.HasPrefix(line[strings.Index(line, ": ")+2:], head+" ") {
			t.Errorf("the headline %s is not first: %s", head, line)
		}
		t.Log(line)
	}
}
