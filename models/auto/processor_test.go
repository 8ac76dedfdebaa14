package auto

import (
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
