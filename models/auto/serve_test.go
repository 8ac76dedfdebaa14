package auto

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/models/bert/sample"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// What a Predictor does when a service wraps it: the work a short batch costs, the programs
// it compiles, sharing it across goroutines, a second Load into a store, a closed backend.

// countingTokenizer is a model's tokenizer that counts the texts it is given to process.
type countingTokenizer struct {
	*textTokenizer
	texts atomic.Int64
}

func (c *countingTokenizer) Process(texts []string) ([]*tensors.Tensor, error) {
	c.texts.Add(int64(len(texts)))
	return c.textTokenizer.Process(texts)
}

// watchedNetwork is a model's network whose Logits records the shapes it builds.
type watchedNetwork struct {
	Network
	progs *programs
}

func (w watchedNetwork) Logits(s *model.Scope, inputs []*Node) *Node {
	d := inputs[0].Shape().Dimensions
	w.progs.mu.Lock()
	w.progs.shapes = append(w.progs.shapes, [2]int{d[0], d[1]})
	w.progs.mu.Unlock()
	return w.Network.Logits(s, inputs)
}

// programs records the input shape ([batch, length]) of every forward pass m's graph
// function builds: one per program a Predictor compiles.
type programs struct {
	mu     sync.Mutex
	shapes [][2]int
}

// watch counts m's tokenized texts and its compiled programs (set before a Predictor of m
// runs).
func watch(t *testing.T, m *Model) (*countingTokenizer, *programs) {
	t.Helper()
	tok, ok := m.Processor.(*textTokenizer)
	if !ok {
		t.Fatalf("the model's processor is a %T", m.Processor)
	}
	counting := &countingTokenizer{textTokenizer: tok}
	m.Processor = counting
	progs := &programs{}
	m.net = watchedNetwork{m.net, progs}
	return counting, progs
}

// loadTinyDeBERTa loads models/deberta's tiny classifier with its head at maxLen.
func loadTinyDeBERTa(t *testing.T, maxLen int) *Model {
	t.Helper()
	m, err := Load(copyFolder(t, filepath.Join("..", "deberta", "testdata", "tiny")), nil, Options{MaxLen: maxLen, LoadHead: true})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// fullLength returns the scores of texts as a Predictor computed them before it padded to
// buckets: every text padded to MaxLen, all in one batch, softmax of the logits.
func fullLength(t *testing.T, m *Model, texts []string) [][]float64 {
	t.Helper()
	flat := logits(t, m, texts)
	k := m.NumLabels()
	out := make([][]float64, len(texts))
	for i := range out {
		row := make([]float64, k)
		for j := range row {
			row[j] = float64(flat[i*k+j])
		}
		out[i] = softmax(row)
	}
	return out
}

// TestPredictorShortBatch: one text at batch 32 is tokenized once (not once per row of the
// batch) and runs as a batch of one, padded to the shortest length bucket; a batch of a few
// texts runs at the next power of two of their count and their longest length; every
// program is one of the buckets, at most 6 of them (batches 1, 2, 4, lengths 16, 32) over texts of every
// length and batches of every size; and the scores are those of the whole batch padded to
// MaxLen (within 1e-6: another length sums the same terms in another order).
func TestPredictorShortBatch(t *testing.T) {
	f := predictFixture(t)
	m := loadTinyDeBERTa(t, f.MaxLen)
	tok, progs := watch(t, m)
	backend := goBackend(t)
	p, err := NewPredictor(m, backend, 32)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Predict([]string{"a charming movie"}); err != nil {
		t.Fatal(err)
	}
	if n := tok.texts.Load(); n != 1 {
		t.Errorf("one text at batch 32: %d texts tokenized, want 1", n)
	}
	if !slices.Equal(progs.shapes, [][2]int{{1, 16}}) {
		t.Errorf("one short text at batch 32: programs %v, want one of [1 16]", progs.shapes)
	}

	q, err := NewPredictor(m, backend, 4)
	if err != nil {
		t.Fatal(err)
	}
	progs.shapes = nil
	got, err := q.Predict(f.Texts)
	if err != nil {
		t.Fatal(err)
	}
	// 9 texts at batch 4: two batches of 4 and one of 1, each at the bucket of its longest.
	var shapes [][2]int
	for start := 0; start < len(f.Texts); start += 4 {
		chunk := f.Texts[start:min(start+4, len(f.Texts))]
		longest := 0
		for _, s := range chunk {
			longest = max(longest, len(tok.Encode(s).IDs))
		}
		shape := [2]int{len(chunk), 16}
		if longest > 16 {
			shape[1] = 32
		}
		if !slices.Contains(shapes, shape) {
			shapes = append(shapes, shape)
		}
	}
	if !slices.Equal(progs.shapes, shapes) {
		t.Errorf("the fixture's texts at batch 4: programs %v, want %v", progs.shapes, shapes)
	}
	want := fullLength(t, loadTinyDeBERTa(t, f.MaxLen), f.Texts)
	var worst float64
	for i, pred := range got {
		for j, s := range pred.Scores {
			worst = max(worst, abs(s-want[i][j]))
		}
	}
	t.Logf("scores within %.2g of the whole batch padded to %d", worst, f.MaxLen)
	if worst > 1e-6 {
		t.Errorf("scores differ from the whole batch padded to MaxLen by %g", worst)
	}

	words := strings.Fields(strings.Repeat("word ", f.MaxLen))
	for n := 1; n <= 4; n++ {
		for length := 0; length <= f.MaxLen; length += 3 {
			batch := make([]string, n)
			for i := range batch {
				batch[i] = strings.Join(words[:max(0, length-i)], " ")
			}
			if _, err := q.Predict(batch); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("batch 4, MaxLen %d: %d programs %v", f.MaxLen, len(progs.shapes), progs.shapes)
	if len(progs.shapes) > 6 {
		t.Errorf("%d programs: want at most 6 (batches 1, 2, 4 x lengths 16, 32)", len(progs.shapes))
	}
	for i, s := range progs.shapes {
		if !slices.Contains([]int{1, 2, 4}, s[0]) || !slices.Contains([]int{16, 32}, s[1]) || slices.Contains(progs.shapes[:i], s) {
			t.Errorf("program %v: not a bucket, or compiled twice", s)
		}
	}
}

// abs is |x|.
func abs(x float64) float64 { return max(x, -x) }

// TestPredictorConcurrent (run it with -race): one Predictor and one TokenPredictor shared by
// 8 goroutines, their first calls at once (the fresh head's variables are made and drawn on
// the first call) and on texts of several lengths (programs compiled at once), answer as
// one goroutine alone answers the same texts after them. Run with -race, checkptr off:
//
//	go test -race -gcflags=all=-d=checkptr=0 -run TestPredictorConcurrent ./models/auto
//
// (the pure-Go backend's matrix product trips checkptr, which -race turns on, in any test).
func TestPredictorConcurrent(t *testing.T) {
	f := predictFixture(t)
	dir := copyFolder(t, filepath.Join("..", "deberta", "testdata", "tiny"))
	m, err := Load(dir, nil, Options{MaxLen: f.MaxLen}) // a fresh head: made on the first call
	if err != nil {
		t.Fatal(err)
	}
	backend := goBackend(t)
	p, err := NewPredictor(m, backend, 2)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := Load(copyFolder(t, filepath.Join("testdata", "ner_bert")), nil, Options{Head: TokenClassification, LoadHead: true, MaxLen: 64})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := NewTokenPredictor(tm, backend, 2, AggregateSimple)
	if err != nil {
		t.Fatal(err)
	}
	const workers = 8
	preds := make([][]Prediction, workers)
	ents := make([][][]Entity, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			texts := f.Texts[w%len(f.Texts):]
			if preds[w], errs[w] = p.Predict(texts); errs[w] == nil {
				ents[w], errs[w] = tp.Predict(texts)
			}
		}()
	}
	wg.Wait()
	for w := range workers {
		if errs[w] != nil {
			t.Fatalf("goroutine %d: %v", w, errs[w])
		}
		texts := f.Texts[w%len(f.Texts):]
		want, err := p.Predict(texts)
		if err != nil {
			t.Fatal(err)
		}
		wantEnts, err := tp.Predict(texts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range texts {
			if !slices.Equal(preds[w][i].Scores, want[i].Scores) {
				t.Errorf("goroutine %d text %q: scores %v, alone %v", w, texts[i], preds[w][i].Scores, want[i].Scores)
			}
			if fmt.Sprint(ents[w][i]) != fmt.Sprint(wantEnts[i]) {
				t.Errorf("goroutine %d text %q: entities %v, alone %v", w, texts[i], ents[w][i], wantEnts[i])
			}
		}
	}
}

// tinyBERTFolder saves a tiny BERT made in code, its weights drawn from seed, and returns its
// folder.
func tinyBERTFolder(t *testing.T, seed int64) string {
	t.Helper()
	store := model.NewStore()
	if err := store.SetRNGStateFromSeed(seed); err != nil {
		t.Fatal(err)
	}
	clf, tok, err := sample.TinyClassifier(store, 16)
	if err != nil {
		t.Fatal(err)
	}
	m, err := BERT(clf, tok, Options{})
	if err != nil {
		t.Fatal(err)
	}
	logits(t, m, texts) // draws the weights
	dir := t.TempDir()
	if err := m.SavePretrained(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLoadRefusesAUsedStore: Load into a store that already holds a model (a Predictor's) is
// an error naming the store's variables and the fix, and the first model's answers do not
// change; a store with only a random-number state (SetRNGStateFromSeed) is not refused.
func TestLoadRefusesAUsedStore(t *testing.T) {
	first, second := tinyBERTFolder(t, 1), tinyBERTFolder(t, 2)
	store := model.NewStore()
	if err := store.SetRNGStateFromSeed(3); err != nil {
		t.Fatal(err)
	}
	m, err := Load(first, store, Options{MaxLen: 16, LoadHead: true})
	if err != nil {
		t.Fatalf("Load into a store with only its random state: %v", err)
	}
	p, err := NewPredictor(m, goBackend(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	before, err := p.Predict(texts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Load(second, store, Options{MaxLen: 16, LoadHead: true})
	t.Logf("a second Load into the store: %v", err)
	if err == nil || !strings.Contains(err.Error(), second) || !strings.Contains(err.Error(), "already holds") || !strings.Contains(err.Error(), "nil") {
		t.Errorf("a second Load into the store: error %v, want one naming the folder, the store's variables and nil", err)
	}
	after, err := p.Predict(texts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range texts {
		if !slices.Equal(before[i].Scores, after[i].Scores) {
			t.Errorf("text %d: scores %v after the second Load, %v before", i, after[i].Scores, before[i].Scores)
		}
	}
}

// TestPredictAfterClose: once the accelerator is closed, Predict (and a TokenPredictor's)
// fails with one line that says so, without a dump of the input tensors.
func TestPredictAfterClose(t *testing.T) {
	acc, err := accelerator.New(accelerator.Config{Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	m := loadTinyDeBERTa(t, 16)
	p, err := NewPredictor(m, acc.Backend(), 2)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := Load(copyFolder(t, filepath.Join("testdata", "ner_bert")), nil, Options{Head: TokenClassification, LoadHead: true, MaxLen: 16})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := NewTokenPredictor(tm, acc.Backend(), 2, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Predict([]string{"before"}); err != nil {
		t.Fatal(err)
	}
	acc.Close()
	_, err = p.Predict([]string{"after"})
	_, terr := tp.Predict([]string{"after"})
	for _, e := range []error{err, terr} {
		t.Logf("after Close: %v", e)
		if e == nil || strings.Contains(e.Error(), "\n") || !strings.Contains(e.Error(), "closed") {
			t.Errorf("Predict after Close: error %q, want one line saying the accelerator is closed", e)
		}
	}
}
