package sample

import (
	"reflect"
	"slices"
	"testing"

	"github.com/goaccel/goaccel/data/text"
	"github.com/gomlx/gomlx/ml/model"
)

// TestPolarityReadsLikeLoadPolarity: the embedded sentences are what text.LoadPolarity reads
// from the same two files, in the same order, and the tiny classifier's tokenizer covers
// them all (no [UNK]).
func TestPolarityReadsLikeLoadPolarity(t *testing.T) {
	want, err := text.LoadPolarity("sample.pos", "sample.neg")
	if err != nil {
		t.Fatal(err)
	}
	got := Polarity()
	if len(got) != 800 || !reflect.DeepEqual(got, want) {
		t.Fatalf("Polarity has %d sentences; LoadPolarity %d; equal: %v", len(got), len(want), reflect.DeepEqual(got, want))
	}
	if v := Vocab(); len(v) < 5 || slices.Contains(v, "") {
		t.Fatalf("Vocab has %d tokens, or an empty one", len(v))
	}
	_, tok, err := TinyClassifier(model.NewStore(), 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range got {
		for _, piece := range tok.Tokenize(ex.Text) {
			if piece == "[UNK]" {
				t.Fatalf("%q has an unknown token", ex.Text)
			}
		}
	}
	if _, _, err := TinyClassifier(model.NewStore(), 4096); err == nil {
		t.Error("max_len 4096 accepted by the tiny BERT (512 positions)")
	}
}
