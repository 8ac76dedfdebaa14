package auto

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
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

// TestWordPieceJSONSavedAsRead: a WordPiece tokenizer.json that vocab.txt cannot say (a
// continuing_subword_prefix other than "##", a max_input_chars_per_word other than 100, no
// normalizer) is written back as the tokenizer.json it was, and the saved folder encodes
// every text as the original tokenizer does.
func TestWordPieceJSONSavedAsRead(t *testing.T) {
	vocab := map[string]int{}
	for _, tok := range sample.Vocab() {
		tok = strings.Replace(tok, "##", "@@", 1)
		if _, dup := vocab[tok]; !dup {
			vocab[tok] = len(vocab)
		}
	}
	texts := []string{"a charming , often hilarious movie .", "Dull and FAR too long", "unbelievably overwrought"}
	for name, c := range map[string]struct {
		normalizer any
		model      map[string]any
	}{
		"prefix @@":     {map[string]any{"type": "BertNormalizer", "lowercase": true}, map[string]any{"continuing_subword_prefix": "@@"}},
		"max chars 6":   {map[string]any{"type": "BertNormalizer", "lowercase": true}, map[string]any{"continuing_subword_prefix": "@@", "max_input_chars_per_word": 6}},
		"no normalizer": {nil, map[string]any{"continuing_subword_prefix": "@@"}},
	} {
		t.Run(name, func(t *testing.T) {
			m := map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "vocab": vocab}
			for k, v := range c.model {
				m[k] = v
			}
			doc := map[string]any{"normalizer": c.normalizer, "pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
				"post_processor": map[string]any{"type": "BertProcessing", "cls": []any{"[CLS]", vocab["[CLS]"]}, "sep": []any{"[SEP]", vocab["[SEP]"]}},
				"model":          m}
			b, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			src := t.TempDir()
			if err := os.WriteFile(filepath.Join(src, "tokenizer.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			tok, err := bert.LoadTokenizer(src, 16)
			if err != nil {
				t.Fatal(err)
			}
			clf, err := bert.NewClassifier(bert.TinyConfig(tok.VocabSize()), model.NewStore())
			if err != nil {
				t.Fatal(err)
			}
			mdl, err := BERT(clf, tok, Options{})
			if err != nil {
				t.Fatal(err)
			}
			logits(t, mdl, texts)
			out := t.TempDir()
			if err := mdl.SavePretrained(out); err != nil {
				t.Fatal(err)
			}
			back, err := bert.LoadTokenizer(out, 16)
			if err != nil {
				t.Fatal(err)
			}
			for _, text := range texts {
				if got, want := back.Encode(text), tok.Encode(text); !slices.Equal(got, want) {
					t.Errorf("Encode(%q) after the round trip %v, before %v", text, got, want)
				}
			}
		})
	}
}
