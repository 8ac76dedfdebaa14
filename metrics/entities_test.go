package metrics

import (
	"slices"
	"strings"
	"testing"
)

// splitTags splits each sentence's tags, written separated by spaces.
func splitTags(sentences []string) [][]string {
	out := make([][]string, len(sentences))
	for i, s := range sentences {
		out[i] = strings.Fields(s)
	}
	return out
}

func tagRows(sentences ...string) [][]string { return splitTags(sentences) }

// TestEntitiesHandComputed checks both modes against figures worked out by hand (and
// matching seqeval's). Each case marks where the modes part.
func TestEntitiesHandComputed(t *testing.T) {
	type want struct {
		types                  map[string]Scores
		micro, macro, weighted Scores
	}
	tests := []struct {
		name              string
		gold, pred        [][]string
		real              []bool
		sentences, tokens int
		accuracy          float64
		conlleval, strict want
	}{
		{
			// The godoc example: the predicted I-LOC after O starts LOC[3] in conlleval mode and
			// nothing in strict mode.
			name: "I- after O", gold: tagRows("B-PER I-PER O B-LOC"), pred: tagRows("B-PER I-PER O I-LOC"),
			sentences: 1, tokens: 4, accuracy: 0.75,
			conlleval: want{
				types: map[string]Scores{"LOC": {1, 1, 1, 1}, "PER": {1, 1, 1, 1}},
				micro: Scores{1, 1, 1, 2}, macro: Scores{1, 1, 1, 2}, weighted: Scores{1, 1, 1, 2},
			},
			strict: want{
				types: map[string]Scores{"LOC": {0, 0, 0, 1}, "PER": {1, 1, 1, 1}},
				micro: Scores{1, 0.5, 2.0 / 3, 2}, macro: Scores{0.5, 0.5, 0.5, 2}, weighted: Scores{0.5, 0.5, 0.5, 2},
			},
		},
		{
			// Gold B-PER I-LOC: PER[0] and LOC[1] in conlleval mode; only PER[0] in strict mode,
			// where the predicted B-LOC is then a false positive of a type with no gold entity.
			name: "I- after another type", gold: tagRows("B-PER I-LOC O"), pred: tagRows("B-PER B-LOC O"),
			sentences: 1, tokens: 3, accuracy: 2.0 / 3,
			conlleval: want{
				types: map[string]Scores{"LOC": {1, 1, 1, 1}, "PER": {1, 1, 1, 1}},
				micro: Scores{1, 1, 1, 2}, macro: Scores{1, 1, 1, 2}, weighted: Scores{1, 1, 1, 2},
			},
			strict: want{
				types: map[string]Scores{"LOC": {0, 0, 0, 0}, "PER": {1, 1, 1, 1}},
				micro: Scores{0.5, 1, 2.0 / 3, 1}, macro: Scores{0.5, 0.5, 0.5, 1}, weighted: Scores{1, 1, 1, 1},
			},
		},
		{
			// Entities do not cross sentences: the gold I-PER that opens sentence 1 starts a new
			// entity (conlleval) or none (strict); it never continues sentence 0's B-PER.
			name: "sentence boundary", gold: tagRows("B-PER", "I-PER O"), pred: tagRows("B-PER", "B-PER O"),
			sentences: 2, tokens: 3, accuracy: 2.0 / 3,
			conlleval: want{
				types: map[string]Scores{"PER": {1, 1, 1, 2}},
				micro: Scores{1, 1, 1, 2}, macro: Scores{1, 1, 1, 2}, weighted: Scores{1, 1, 1, 2},
			},
			strict: want{
				types: map[string]Scores{"PER": {0.5, 1, 2.0 / 3, 1}},
				micro: Scores{0.5, 1, 2.0 / 3, 1}, macro: Scores{0.5, 1, 2.0 / 3, 1}, weighted: Scores{0.5, 1, 2.0 / 3, 1},
			},
		},
		{
			// A span must match exactly: predicted PER[0,1] against gold PER[0,2] is wrong, and
			// B-ORG B-ORG is two entities. Gold: PER[0,2], ORG[4], ORG[5]; predicted: PER[0,1],
			// ORG[4,5]. No I- starts anything, so the modes agree.
			name: "spans", gold: tagRows("B-PER I-PER I-PER O B-ORG B-ORG"), pred: tagRows("B-PER I-PER O O B-ORG I-ORG"),
			sentences: 1, tokens: 6, accuracy: 4.0 / 6,
			conlleval: want{
				types: map[string]Scores{"ORG": {0, 0, 0, 2}, "PER": {0, 0, 0, 1}},
				micro: Scores{0, 0, 0, 3}, macro: Scores{0, 0, 0, 3}, weighted: Scores{0, 0, 0, 3},
			},
			strict: want{
				types: map[string]Scores{"ORG": {0, 0, 0, 2}, "PER": {0, 0, 0, 1}},
				micro: Scores{0, 0, 0, 3}, macro: Scores{0, 0, 0, 3}, weighted: Scores{0, 0, 0, 3},
			},
		},
		{
			// Padding sentences are skipped, even with tags outside the scheme. Counted: gold
			// MISC[1], LOC[0]; predicted MISC[1], LOC[0,1].
			name: "padding is skipped", gold: tagRows("O B-MISC", "?? X", "B-LOC O"), pred: tagRows("O B-MISC", "", "B-LOC I-LOC"),
			real: []bool{true, false, true}, sentences: 2, tokens: 4, accuracy: 0.75,
			conlleval: want{
				types: map[string]Scores{"LOC": {0, 0, 0, 1}, "MISC": {1, 1, 1, 1}},
				micro: Scores{0.5, 0.5, 0.5, 2}, macro: Scores{0.5, 0.5, 0.5, 2}, weighted: Scores{0.5, 0.5, 0.5, 2},
			},
			strict: want{
				types: map[string]Scores{"LOC": {0, 0, 0, 1}, "MISC": {1, 1, 1, 1}},
				micro: Scores{0.5, 0.5, 0.5, 2}, macro: Scores{0.5, 0.5, 0.5, 2}, weighted: Scores{0.5, 0.5, 0.5, 2},
			},
		},
		{name: "empty", gold: tagRows("", "O"), pred: tagRows("", "O"), sentences: 2, tokens: 1, accuracy: 1},
	}
	for _, tc := range tests {
		for _, mode := range []EntityMode{Conlleval, StrictIOB2} {
			t.Run(tc.name+"/"+mode.String(), func(t *testing.T) {
				w := tc.conlleval
				if mode == StrictIOB2 {
					w = tc.strict
				}
				e := NewEntities(nil, mode)
				if err := e.Add(tc.pred, tc.gold, tc.real); err != nil {
					t.Fatal(err)
				}
				if e.Count() != tc.sentences || e.Tokens() != tc.tokens || !near(e.TokenAccuracy(), tc.accuracy) {
					t.Errorf("sentences %d tokens %d accuracy %g, want %d %d %g", e.Count(), e.Tokens(), e.TokenAccuracy(),
						tc.sentences, tc.tokens, tc.accuracy)
				}
				var types []string
				for typ, want := range w.types {
					types = append(types, typ)
					if got := e.Type(typ); !nearScores(got, want) {
						t.Errorf("%s: %+v, want %+v", typ, got, want)
					}
				}
				slices.Sort(types)
				if got := e.Types(); !slices.Equal(got, types) {
					t.Errorf("types %q, want %q", got, types)
				}
				for _, avg := range []struct {
					name      string
					got, want Scores
				}{{"micro", e.Micro(), w.micro}, {"macro", e.Macro(), w.macro}, {"weighted", e.Weighted(), w.weighted}} {
					if !nearScores(avg.got, avg.want) {
						t.Errorf("%s %+v, want %+v", avg.name, avg.got, avg.want)
					}
				}
			})
		}
	}
}

// TestEntitiesAddIDs: gathered ids with -100 at the ignored positions give the figures of the
// tags of the other positions, whatever is predicted at the ignored ones.
func TestEntitiesAddIDs(t *testing.T) {
	tags := []string{"O", "B-PER", "I-PER", "B-LOC", "I-LOC"}
	const X = IgnoreIndex
	e := NewEntities(tags, Conlleval)
	err := e.AddIDs(
		[][]int{{0, 1, 99, 2, 0, -5, 4}, {1, 2}, {0, 0}},
		[][]int{{X, 1, X, 2, 0, X, 3}, {7, 7}, {0, X}},
		[]bool{true, false, true})
	if err != nil {
		t.Fatal(err)
	}
	want := NewEntities(nil, Conlleval)
	if err := want.Add(tagRows("B-PER I-PER O I-LOC", "O"), tagRows("B-PER I-PER O B-LOC", "O"), nil); err != nil {
		t.Fatal(err)
	}
	if e.Report() != want.Report() || e.String() != want.String() {
		t.Errorf("AddIDs gave\n%s%s\nAdd gave\n%s%s", e.Report(), e, want.Report(), want)
	}
	if e.Tokens() != 5 || e.Count() != 2 {
		t.Errorf("tokens %d sentences %d, want 5 2", e.Tokens(), e.Count())
	}
}

func TestEntitiesErrors(t *testing.T) {
	tags := []string{"O", "B-PER", "I-PER", "E-PER"}
	tests := []struct {
		name string
		run  func(e *Entities) error
		want string
	}{
		{"sentences", func(e *Entities) error { return e.Add(tagRows("O"), nil, nil) },
			"Entities.Add: 1 predicted sentences but 0 gold sentences"},
		{"mask", func(e *Entities) error { return e.Add(tagRows("O"), tagRows("O"), []bool{true, true}) },
			"Entities.Add: 1 sentences but 2 mask values"},
		{"tokens", func(e *Entities) error { return e.Add(tagRows("O", "O O"), tagRows("O", "O"), nil) },
			"Entities.Add: sentence 1: 2 predicted tags but 1 gold tags"},
		{"gold tag", func(e *Entities) error { return e.Add(tagRows("O O", "O O"), tagRows("O O", "O S-LOC"), nil) },
			`Entities.Add: sentence 1, position 1: gold tag "S-LOC" is not O, B-<type> or I-<type>`},
		{"predicted tag", func(e *Entities) error { return e.Add(tagRows("B-"), tagRows("O"), nil) },
			`sentence 0, position 0: predicted tag "B-" is not O`},
		{"lower case", func(e *Entities) error { return e.Add(tagRows("b-PER"), tagRows("O"), nil) }, `tag "b-PER"`},
		{"no dash", func(e *Entities) error { return e.Add(tagRows("BPER"), tagRows("O"), nil) }, `tag "BPER"`},
		{"id rows", func(e *Entities) error { return e.AddIDs([][]int{{0}}, [][]int{{0, 0}}, nil) },
			"Entities.AddIDs: sentence 0: 1 predicted ids but 2 gold ids"},
		{"gold id", func(e *Entities) error { return e.AddIDs([][]int{{0, 0}}, [][]int{{0, -1}}, nil) },
			"Entities.AddIDs: sentence 0, position 1: gold id -1 out of range [0, 4)"},
		{"predicted id", func(e *Entities) error { return e.AddIDs([][]int{{0}, {4}}, [][]int{{0}, {0}}, nil) },
			"sentence 1, position 0: predicted id 4 out of range [0, 4) of the tags given to NewEntities (-100 marks"},
		{"tag of an id", func(e *Entities) error { return e.AddIDs([][]int{{0, 3}}, [][]int{{0, 0}}, nil) },
			`Entities.AddIDs: sentence 0, position 1: predicted tag "E-PER" is not O`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEntities(tags, Conlleval)
			_ = e.Add(tagRows("B-PER"), tagRows("B-PER"), nil)
			err := tc.run(e)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "metrics: Entities.") {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if e.Count() != 1 || e.Tokens() != 1 || e.Micro() != (Scores{1, 1, 1, 1}) {
				t.Errorf("a failed add changed the counts: %v", e)
			}
		})
	}
	if err := NewEntities(nil, Conlleval).Merge(NewEntities(nil, StrictIOB2)); err == nil ||
		!strings.Contains(err.Error(), "cannot merge results read in strict IOB2 mode into conlleval mode") {
		t.Errorf("Merge of modes: %v", err)
	}
}

func TestEntitiesValuesReportMergeReset(t *testing.T) {
	gold := tagRows("B-PER I-PER O B-LOC", "B-ORG O")
	pred := tagRows("B-PER I-PER O I-LOC", "B-LOC O")
	e := NewEntities(nil, StrictIOB2)
	if err := e.Add(pred, gold, nil); err != nil {
		t.Fatal(err)
	}
	// PER: 1/1 correct. LOC: gold 1, predicted 1 (sentence 1), none correct. ORG: gold 1.
	checkValues(t, e.Values(), map[string]float64{"count": 2, "tokens": 6, "precision": 0.5, "recall": 1.0 / 3,
		"f1": 0.4, "accuracy": 4.0 / 6, "macro_precision": 1.0 / 3, "macro_recall": 1.0 / 3, "macro_f1": 1.0 / 3})
	if s := e.String(); s != "n=2 tokens=6 precision=0.5000 recall=0.3333 f1=0.4000 accuracy=0.6667 macro_f1=0.3333" {
		t.Errorf("String() = %q", s)
	}
	report := `             precision    recall  f1-score   support

         LOC    0.0000    0.0000    0.0000         1
         ORG    0.0000    0.0000    0.0000         1
         PER    1.0000    1.0000    1.0000         1

   micro avg    0.5000    0.3333    0.4000         3
   macro avg    0.3333    0.3333    0.3333         3
weighted avg    0.3333    0.3333    0.3333         3
`
	if got := e.Report(); got != report {
		t.Errorf("Report():\n%s\nwant\n%s", got, report)
	}
	a, b := NewEntities(nil, StrictIOB2), NewEntities(nil, StrictIOB2)
	_ = a.Add(pred[:1], gold[:1], nil)
	_ = b.Add(pred[1:], gold[1:], nil)
	if err := a.Merge(b); err != nil || a.Report() != e.Report() || a.String() != e.String() {
		t.Errorf("merged halves (%v):\n%s%s\nwant\n%s%s", err, a.Report(), a, e.Report(), e)
	}
	e.Reset()
	if e.Count() != 0 || e.Tokens() != 0 || len(e.Types()) != 0 || e.Mode() != StrictIOB2 {
		t.Errorf("after Reset: %v %v", e, e.Types())
	}
	if EntityMode(7).String() != "EntityMode(7)" {
		t.Error(EntityMode(7).String())
	}
}
