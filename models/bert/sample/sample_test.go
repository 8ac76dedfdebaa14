package sample

import (
	"reflect"
	"slices"
	"strings"
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

// TestEntitiesSpelledByTheVocab: the synthetic entity sentences are the same for a seed,
// tag every word with one of EntityTags in IOB2, have entities of each type, and make no
// [UNK] with the tiny BERT's tokenizer.
func TestEntitiesSpelledByTheVocab(t *testing.T) {
	a, b := Entities(200, 7), Entities(200, 7)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("Entities differs for the same seed")
	}
	_, tok, err := TinyClassifier(nil, 64)
	if err != nil {
		t.Fatal(err)
	}
	unk, _ := tok.ID("[UNK]")
	tags := EntityTags()
	seen := map[string]bool{}
	for _, s := range a {
		if len(s.Words) != len(s.Tags) || len(s.Words) == 0 {
			t.Fatalf("sentence %+v", s)
		}
		for i, id := range s.Tags {
			tag := tags[id]
			seen[tag] = true
			if strings.HasPrefix(tag, "I-") && (i == 0 || strings.TrimPrefix(strings.TrimPrefix(tags[s.Tags[i-1]], "B-"), "I-") != tag[2:]) {
				t.Errorf("%q: %s does not continue an entity", s.Words, tag)
			}
		}
		ids, _ := tok.EncodeWords(s.Words)
		if slices.Contains(ids, unk) {
			t.Errorf("%q makes [UNK]", s.Words)
		}
	}
	for _, tag := range tags {
		if !seen[tag] {
			t.Errorf("no word tagged %s in 200 sentences", tag)
		}
	}
}
