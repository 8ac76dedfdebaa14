package bert

import (
	"bufio"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/data/text"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// sampleDataDir is models/bert/sample, the built-in dataset of the examples (go test runs in
// the package's folder; a path from runtime.Caller would be the import path under -trimpath).
func sampleDataDir() string { return "sample" }

// readSampleData reads sample.pos (label 1) and sample.neg (label 0).
func readSampleData(t *testing.T) []text.Labeled {
	t.Helper()
	var examples []text.Labeled
	for _, f := range []struct {
		name  string
		label int
	}{{"sample.neg", 0}, {"sample.pos", 1}} {
		fh, err := os.Open(filepath.Join(sampleDataDir(), f.name))
		if err != nil {
			t.Fatalf("the built-in dataset is missing: %v", err)
		}
		sc := bufio.NewScanner(fh)
		line := 0
		for sc.Scan() {
			line++
			sentence := sc.Text()
			if strings.TrimSpace(sentence) == "" || sentence != strings.ToLower(sentence) {
				t.Errorf("%s:%d: want a non-empty lower-case sentence, got %q", f.name, line, sentence)
			}
			examples = append(examples, text.Labeled{Text: sentence, Label: f.label})
		}
		_ = fh.Close()
		if line < 300 {
			t.Errorf("%s has %d lines, want a few hundred", f.name, line)
		}
	}
	return examples
}

// TestSampleVocab checks that the committed vocab.txt of the tiny model is what
// scripts/make_sample_vocab.go makes from the sample sentences, and covers them.
func TestSampleVocab(t *testing.T) {
	examples := readSampleData(t)
	texts := make([]string, len(examples))
	for i, ex := range examples {
		texts[i] = ex.Text
	}
	tok, err := NewTokenizer(filepath.Join(sampleDataDir(), "vocab.txt"), 64)
	if err != nil {
		t.Fatal(err)
	}
	if want := BuildVocab(texts, DefaultVocabWords); !slices.Equal(tok.Vocab(), want) {
		t.Errorf("models/bert/sample/vocab.txt (%d tokens) is stale: run `go run scripts/make_sample_vocab.go` (want %d tokens)",
			tok.VocabSize(), len(want))
	}
	longest := 0
	for _, text := range texts {
		ids := tok.Encode(text)
		longest = max(longest, len(ids))
		for _, id := range ids {
			if id == tok.seg.(*wordPiece).unk {
				t.Errorf("%q has an [UNK] token", text)
				break
			}
		}
	}
	t.Logf("vocab %d tokens, longest sample sentence %d tokens", tok.VocabSize(), longest)
}

// TestTinyModelLearnsSampleData trains the tiny random BERT on the built-in dataset for a
// few steps (plain Adam, the loop of the example in miniature) and checks that held-out
// accuracy is clearly above chance.
func TestTinyModelLearnsSampleData(t *testing.T) {
	examples := readSampleData(t)
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(examples), func(i, j int) { examples[i], examples[j] = examples[j], examples[i] })
	test, trainSet := examples[:80], examples[80:]

	tok, err := NewTokenizer(filepath.Join(sampleDataDir(), "vocab.txt"), 32)
	if err != nil {
		t.Fatal(err)
	}
	store := model.NewStore()
	if err := store.SetRNGStateFromSeed(42); err != nil {
		t.Fatal(err)
	}
	clf, err := NewClassifier(TinyConfig(tok.VocabSize()), store)
	if err != nil {
		t.Fatal(err)
	}
	backend := mustGoBackend(t)
	opt := optimizer.Adam().LearningRate(1e-3).Done()
	trainStep := trainExec(t, backend, clf, opt, nil)
	predict, err := model.NewExec(backend, store, func(s *model.Scope, ids, mask, types *Node) *Node {
		return ArgMax(clf.Logits(s, []*Node{ids, mask, types}), -1)
	})
	if err != nil {
		t.Fatal(err)
	}
	accuracy := func() float64 {
		in, labels, err := tok.Collate(test)
		if err != nil {
			t.Fatal(err)
		}
		out, err := predict.Call(in[0], in[1], in[2])
		if err != nil {
			t.Fatal(err)
		}
		preds := tensors.MustCopyFlatData[int32](out[0])
		want := tensors.MustCopyFlatData[int32](labels)
		correct := 0
		for i := range preds {
			if preds[i] == want[i] {
				correct++
			}
		}
		return float64(correct) / float64(len(preds))
	}

	const batch, epochs = 32, 2
	start := time.Now()
	var lastLoss float32
	steps := 0
	for range epochs {
		for b := 0; b+batch <= len(trainSet); b += batch {
			in, labels, err := tok.Collate(trainSet[b : b+batch])
			if err != nil {
				t.Fatal(err)
			}
			out, err := trainStep.Call(in[0], in[1], in[2], labels)
			if err != nil {
				t.Fatalf("train step %d: %v", steps, err)
			}
			lastLoss = tensors.MustCopyFlatData[float32](out[0])[0]
			steps++
		}
	}
	acc := accuracy()
	t.Logf("tiny BERT (%d parameters) on the sample data: %d steps of %d in %s, last loss %.3f, held-out accuracy %.3f",
		clf.NumParameters(), steps, batch, time.Since(start).Round(time.Millisecond), lastLoss, acc)
	if acc < 0.8 {
		t.Errorf("held-out accuracy %.3f after %d steps, want >= 0.8", acc, steps)
	}
}
