package auto

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// nerFixture is testdata/ner_pipeline.json (scripts/make_ner_fixtures.py): transformers'
// token-classification pipeline on the texts, per model and aggregation strategy.
type nerFixture struct {
	MaxLen  int                           `json:"max_len"`
	Texts   []string                      `json:"texts"`
	Bert    map[string][][]map[string]any `json:"bert"`
	Deberta map[string][][]map[string]any `json:"deberta"`
	Roberta map[string][][]map[string]any `json:"roberta"`
}

// TestTokenPredictorMatchesPipeline: a TokenPredictor on a tiny random BERT (uncased
// WordPiece, vocab.txt), DeBERTa-v3 (spm.model) and RoBERTa (byte-level BPE) answers what
// pipeline("token-classification", aggregation_strategy=...) answers for each strategy
// (none, simple, first, average, max): the same entities in the same order, with the same
// label, word, start and end (characters; bytes agree with them), scores within 1e-5, on
// texts with accents, CJK, emoji, a long word, whitespace runs and an empty text, in batches
// of 3 (a short last batch). The fixture must hold multi-token groups and words.
func TestTokenPredictorMatchesPipeline(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "ner_pipeline.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f nerFixture
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	for _, family := range []struct {
		name string
		want map[string][][]map[string]any
	}{{"bert", f.Bert}, {"deberta", f.Deberta}, {"roberta", f.Roberta}} {
		backend := goBackend(t)
		m, err := Load(copyFolder(t, filepath.Join("testdata", "ner_"+family.name)), nil, Options{Head: TokenClassification, LoadHead: true, MaxLen: f.MaxLen})
		if err != nil {
			t.Fatal(err)
		}
		for _, agg := range []Aggregation{AggregateNone, AggregateSimple, AggregateFirst, AggregateAverage, AggregateMax} {
			t.Run(family.name+"/"+string(agg), func(t *testing.T) {
				want := family.want[string(agg)]
				if len(want) != len(f.Texts) {
					t.Fatalf("the fixture has %d results for %d texts", len(want), len(f.Texts))
				}
				multi := nonTrivial(family.want, agg)
				if multi < 3 {
					t.Fatalf("the fixture has %d entities that this strategy makes of several tokens or words: too few for the test to tell groupings apart", multi)
				}
				p, err := NewTokenPredictor(m, backend, 3, agg)
				if err != nil {
					t.Fatal(err)
				}
				got, err := p.Predict(f.Texts)
				if err != nil {
					t.Fatal(err)
				}
				checkEntities(t, family.name+" "+string(agg), agg, f.Texts, want, got, multi)
			})
		}
	}
}

// checkEntities compares a TokenPredictor's entities of texts with the pipeline's (want, one
// list per text): the same entities in the same order, with the same label, word, start and
// end (characters; bytes agree with them) and index, scores within 1e-5. multi is logged: the
// number of entities the strategy made of several tokens or words.
func checkEntities(t *testing.T, what string, agg Aggregation, texts []string, want [][]map[string]any, got [][]Entity, multi int) {
	t.Helper()
	if len(got) != len(texts) {
		t.Fatalf("%s: %d results for %d texts", what, len(got), len(texts))
	}
	var worst float64
	n := 0
	for i, text := range texts {
		if len(got[i]) != len(want[i]) {
			t.Errorf("text %d (%q): %d entities, the pipeline's %d:\n%+v\n%v", i, text, len(got[i]), len(want[i]), got[i], want[i])
			continue
		}
		for j, e := range got[i] {
			w := want[i][j]
			label, _ := w["entity"].(string)
			if agg != AggregateNone {
				label, _ = w["entity_group"].(string)
			}
			index := -1
			if agg == AggregateNone {
				index = int(w["index"].(float64))
			}
			if e.Entity != label || e.Word != w["word"] || e.Start != int(w["start"].(float64)) || e.End != int(w["end"].(float64)) || e.Index != index {
				t.Errorf("text %d (%q) entity %d: %+v, the pipeline's %v", i, text, j, e, w)
			}
			if []rune(text)[e.Start:e.End] == nil && e.End > e.Start || string([]rune(text)[e.Start:e.End]) != text[e.StartByte:e.EndByte] {
				t.Errorf("text %d entity %d: characters [%d, %d) and bytes [%d, %d) differ", i, j, e.Start, e.End, e.StartByte, e.EndByte)
			}
			worst = math.Max(worst, math.Abs(e.Score-w["score"].(float64)))
			n++
		}
	}
	t.Logf("%s: %d entities (%d made of several), scores within %.2g of the pipeline's", what, n, multi, worst)
	if worst > 1e-5 {
		t.Errorf("scores differ from the pipeline's by %g, want at most 1e-5", worst)
	}
}

// nonTrivial counts the entities of strategy agg that are made of several: for none, the
// tokens glued to a tagged token before them (pieces of a word); for simple, the
// groups that hold several of none's entities; for the word strategies, the entities whose
// span differs from every one of simple's (word aggregation changed them).
func nonTrivial(want map[string][][]map[string]any, agg Aggregation) int {
	n := 0
	for i, es := range want[string(agg)] {
		for _, e := range es {
			start, end := e["start"].(float64), e["end"].(float64)
			switch agg {
			case AggregateNone:
				for _, t := range es {
					if t["end"].(float64) == start && t["index"].(float64) == e["index"].(float64)-1 {
						n++ // the token before it, with no gap, is tagged too
					}
				}
			case AggregateSimple:
				inside := 0
				for _, t := range want["none"][i] {
					if t["start"].(float64) >= start && t["end"].(float64) <= end {
						inside++
					}
				}
				if inside > 1 {
					n++
				}
			default:
				same := false
				for _, g := range want["simple"][i] {
					same = same || g["start"].(float64) == start && g["end"].(float64) == end
				}
				if !same {
					n++
				}
			}
		}
	}
	return n
}

// TestTokenPredictorRefuses: an unknown aggregation strategy, and a sequence-classification
// model, are errors that say what is wanted.
func TestTokenPredictorRefuses(t *testing.T) {
	m, err := Load(copyFolder(t, filepath.Join("testdata", "ner_deberta")), nil, Options{MaxLen: 16})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewTokenPredictor(m, goBackend(t), 2, "mean"); err == nil || !strings.Contains(err.Error(), `"mean"`) {
		t.Errorf("aggregation mean: error %v, want one naming it", err)
	}
	p, err := NewTokenPredictor(m, goBackend(t), 2, AggregateSimple)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Predict([]string{"a text"}); err == nil || !strings.Contains(err.Error(), "TokenClassification") {
		t.Errorf("a sequence-classification model: error %v, want one naming Options.Head TokenClassification", err)
	}
}

// TestTokenPredictorWithoutPostProcessor: with a tokenizer.json whose post_processor is null
// (no [CLS] or [SEP]: every token of the encoding is the text's), a TokenPredictor tags every
// token, the first and the last included, as pipeline("token-classification") does on the
// same folder (testdata/ner_nopost, scripts/make_nopost_fixture.py: ner_deberta's model),
// for every strategy, a text truncated at max_len included; the empty text has no entity.
func TestTokenPredictorWithoutPostProcessor(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "ner_nopost.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		MaxLen int                           `json:"max_len"`
		Texts  []string                      `json:"texts"`
		NoPost map[string][][]map[string]any `json:"nopost"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	dir := copyFolder(t, filepath.Join("testdata", "ner_deberta"))
	if err := os.Remove(filepath.Join(dir, "spm.model")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "ner_nopost", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Load(dir, nil, Options{Head: TokenClassification, LoadHead: true, MaxLen: f.MaxLen})
	if err != nil {
		t.Fatal(err)
	}
	backend := goBackend(t)
	for _, agg := range []Aggregation{AggregateNone, AggregateSimple, AggregateFirst, AggregateAverage, AggregateMax} {
		p, err := NewTokenPredictor(m, backend, 3, agg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Predict(append(slices.Clone(f.Texts), ""))
		if err != nil {
			t.Fatal(err)
		}
		if last := got[len(got)-1]; len(last) != 0 {
			t.Errorf("%s: the empty text has entities %+v, want none", agg, last)
		}
		checkEntities(t, "no post-processor "+string(agg), agg, f.Texts, f.NoPost[string(agg)], got[:len(f.Texts)], nonTrivial(f.NoPost, agg))
	}
}
