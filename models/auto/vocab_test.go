package auto

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/bert"
	"github.com/goaccel/goaccel/models/bert/sample"
	"github.com/gomlx/gomlx/ml/model"
)

// TestPaddedVocabEveryFamily: a checkpoint whose word embeddings have more rows than its
// tokenizer has tokens (transformers' pad_to_multiple_of) is one rule for every family: the
// tokenizer's ids need only be below vocab_size. A BERT made in code with 8 padding rows is
// saved and loaded back with the same logits; a tokenizer past vocab_size is refused,
// naming the first token past it.
func TestPaddedVocabEveryFamily(t *testing.T) {
	tok, err := bert.NewTokenizerFromVocab(sample.Vocab(), 16)
	if err != nil {
		t.Fatal(err)
	}
	clf, err := bert.NewClassifier(bert.TinyConfig(tok.VocabSize()+8), model.NewStore())
	if err != nil {
		t.Fatal(err)
	}
	m, err := BERT(clf, tok, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := logits(t, m, texts)
	dir := t.TempDir()
	if err := m.SavePretrained(dir); err != nil {
		t.Fatalf("SavePretrained of a padded vocabulary: %v", err)
	}
	back, err := Load(dir, nil, Options{MaxLen: 16, LoadHead: true})
	if err != nil {
		t.Fatalf("Load of a padded vocabulary: %v", err)
	}
	if d := testutil.MaxAbsDiff(t, "logits", logits(t, back, texts), want); d != 0 {
		t.Errorf("logits after the round trip differ by %g, want 0", d)
	}

	// Nine tokens more: one past the rows, in a BERT folder and a ModernBERT one.
	padded := sample.Vocab()[:tok.VocabSize():tok.VocabSize()]
	for i := range 9 {
		padded = append(padded, "[unused"+string(rune('a'+i))+"]")
	}
	if err := os.WriteFile(filepath.Join(dir, "vocab.txt"), []byte(strings.Join(padded, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(dir, nil, Options{MaxLen: 16})
	if err == nil || !strings.Contains(err.Error(), `"[unusedi]"`) || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("a token past vocab_size in a bert folder: err = %v, want one naming [unusedi] and config.json", err)
	}
	big := modernBERTFolder(t)
	if err := os.WriteFile(filepath.Join(big, "vocab.txt"), []byte(strings.Join(append(sample.Vocab()[:100], "[NEW]"), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big, nil, Options{MaxLen: 12}); err == nil || !strings.Contains(err.Error(), `"[NEW]"`) {
		t.Errorf("101 tokens for vocab_size 100: err = %v, want one naming [NEW]", err)
	}
}
