package auto

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data/text"
	"github.com/goaccel/goaccel/models/bert"
	"github.com/goaccel/goaccel/models/bert/sample"
	"github.com/gomlx/gomlx/core/tensors"
)

// TestTagCollatorAsTheTokenizers: the task's tag collation (text.TagCollator over the
// processor's ProcessWords) gives the inputs and labels that models/bert's CollateTagged
// gives, with and without labels on a word's later pieces, for the tokenizer of every
// family's fixture; a sentence whose words and tags differ in number is refused naming it.
func TestTagCollatorAsTheTokenizers(t *testing.T) {
	wp, err := bert.NewTokenizerFromVocab(sample.Vocab(), 12)
	if err != nil {
		t.Fatal(err)
	}
	toks := map[string]*bert.Tokenizer{"wordpiece": wp}
	for _, dir := range []string{"../bert/testdata/roberta_bpe", "../deberta/testdata/tiny", "../../tokenizers/testdata/xlmr"} {
		tok, err := bert.LoadTokenizer(dir, 12)
		if err != nil {
			t.Fatal(err)
		}
		toks[dir] = tok
	}
	batch := []text.Tagged{{Words: []string{"the", "unbelievable", "film"}, Tags: []int{0, 1, 2}},
		{Words: []string{"Ça", "va", "très", "bien", "mercredi", "soir", "à", "Paris", "?"}, Tags: []int{1, 2, 0, 0, 1, 2, 0, 1, 0}}}
	for name, tok := range toks {
		for _, piece := range []func(int) int{nil, func(tag int) int { return tag + 10 }} {
			wantIn, wantLabels, err := tok.CollateTagged(batch, piece)
			if err != nil {
				t.Fatal(err)
			}
			gotIn, gotLabels, err := text.TagCollator(NewTokenizer(tok, "").ProcessWords, piece)(batch)
			if err != nil {
				t.Fatal(err)
			}
			for i := range wantIn {
				if !slices.Equal(tensors.MustCopyFlatData[int32](gotIn[i]), tensors.MustCopyFlatData[int32](wantIn[i])) {
					t.Errorf("%s: input %d differs", name, i)
				}
			}
			if g, w := tensors.MustCopyFlatData[int32](gotLabels), tensors.MustCopyFlatData[int32](wantLabels); !slices.Equal(g, w) {
				t.Errorf("%s: labels %v, want %v", name, g, w)
			}
		}
	}
	bad := []text.Tagged{batch[0], {Words: []string{"a", "b"}, Tags: []int{0}}}
	if _, _, err := text.TagCollator(NewTokenizer(wp, "").ProcessWords, nil)(bad); err == nil ||
		!strings.Contains(err.Error(), "sentence 1 has 2 words and 1 tags") {
		t.Errorf("a sentence with fewer tags: %v", err)
	}
}

// TestLoadTokenizerAsBERTs: auto.LoadTokenizer (tokenizers.FromFolder, its own padding rule)
// makes the inputs that models/bert's tokenizer makes of the same folder, ids, mask and types,
// padded with the same token, on the tokenizer folders of every text family (WordPiece from a
// vocab.txt, byte-level BPE, Unigram from spm.model and from tokenizer.json), and the same
// words of ProcessWords; a folder whose vocabulary has no padding token is refused naming it.
func TestLoadTokenizerAsBERTs(t *testing.T) {
	texts := []string{"the unbelievable film", "Ça va très bien, mercredi soir à Paris ?", "", "[MASK] <mask> 東京 🎉 naïve"}
	words := [][]string{{"the", "unbelievable", "film"}, {"Ça", "va", "très", "bien", "?"}}
	wordPiece := t.TempDir()
	if err := os.WriteFile(filepath.Join(wordPiece, "vocab.txt"), []byte(strings.Join(sample.Vocab(), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{wordPiece, "../bert/testdata/roberta_bpe", "../deberta/testdata/tiny",
		"../../tokenizers/testdata/xlmr", "../../tokenizers/testdata/deberta"} {
		want, err := bert.LoadTokenizer(dir, 24)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		got, err := LoadTokenizer(dir, 24)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if got.MaxLen() != 24 || got.VocabSize() != want.VocabSize() || got.Kind() != want.Kind() {
			t.Errorf("%s: MaxLen %d, %d tokens, %s; models/bert's 24, %d, %s", dir, got.MaxLen(), got.VocabSize(), got.Kind(), want.VocabSize(), want.Kind())
		}
		in, err := got.Process(texts)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range want.EncodeBatch(texts).Tensors() {
			if g := tensors.MustCopyFlatData[int32](in[i]); !slices.Equal(g, tensors.MustCopyFlatData[int32](w)) {
				t.Errorf("%s: input %d %v, models/bert's %v", dir, i, g, tensors.MustCopyFlatData[int32](w))
			}
		}
		inW, wordIDs, err := got.ProcessWords(words)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range words {
			ids, w := want.EncodeWords(s)
			row := tensors.MustCopyFlatData[int32](inW[0])[i*24 : i*24+len(ids)]
			if !slices.Equal(row, ids) || !slices.Equal(wordIDs[i], w) {
				t.Errorf("%s: words %q: %v %v, models/bert's %v %v", dir, s, row, wordIDs[i], ids, w)
			}
		}
		t.Logf("%s: %s, %d tokens, the same inputs as models/bert's tokenizer", dir, got.Kind(), got.VocabSize())
	}
	// roberta_bpe's tokenizer.json with its <pad> renamed: no token to pad with.
	raw, err := os.ReadFile("../bert/testdata/roberta_bpe/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(strings.ReplaceAll(string(raw), `"<pad>"`, `"<pud>"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTokenizer(dir, 8); err == nil || !strings.Contains(err.Error(), "no padding token (<pad>, [PAD])") || !strings.Contains(err.Error(), dir) {
		t.Errorf("a vocabulary without <pad> or [PAD]: %v", err)
	}
}
