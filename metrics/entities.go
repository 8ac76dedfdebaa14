package metrics

import (
	"fmt"
	"slices"
	"strings"
)

// IgnoreIndex is the label id of token positions that have no tag of their own: Hugging
// Face's -100 (PyTorch's CrossEntropyLoss ignore_index), which run_ner.py gives to special
// tokens, to the sub-word pieces after a word's first and to padding. Entities.AddIDs drops
// these positions.
const IgnoreIndex = -100

// EntityMode says how Entities reads a sentence's IOB2 (BIO) tags into entities.
type EntityMode int

const (
	// Conlleval reads tags as conlleval.pl and seqeval's default mode do: B-X starts an
	// entity of type X; I-X continues the open entity when it has type X, and otherwise
	// starts a new one (after O, at the start of a sentence, or after another type); O ends
	// the open entity. So O I-PER I-PER holds one PER entity, and B-PER I-LOC holds a PER
	// and a LOC.
	Conlleval EntityMode = iota
	// StrictIOB2 reads tags as seqeval's mode="strict" with scheme=IOB2: an entity is a B-X
	// followed by the I-X that continue it; an I- tag that does not continue an entity of its
	// own type belongs to none. So O I-PER I-PER holds no entity, and B-PER I-LOC holds only
	// the PER.
	StrictIOB2
)

// String returns "conlleval" or "strict IOB2".
func (m EntityMode) String() string {
	switch m {
	case Conlleval:
		return "conlleval"
	case StrictIOB2:
		return "strict IOB2"
	}
	return fmt.Sprintf("EntityMode(%d)", int(m))
}

// Entities accumulates the results of a token classifier (named-entity recognition with IOB2
// tags: O, B-<type>, I-<type>) sentence by sentence, and derives entity-level precision,
// recall and F1, per entity type and averaged, and the token accuracy. The zero value is not
// usable; create one with NewEntities.
//
// An entity is a type and a span of tokens in one sentence (EntityMode says how tags make
// spans); a predicted entity is correct when a gold entity has the same type and the same
// span. The figures are those of seqeval 1.2.2 (classification_report, f1_score...) with its
// default zero_division, and of the seqeval metric of Hugging Face's evaluate that run_ner.py
// reports:
//   - per type: Precision = correct/predicted, Recall = correct/gold, F1 = 2·P·R/(P+R), each 0
//     when its denominator is 0; Support = the number of gold entities of the type;
//   - Micro: the same on the counts summed over the types (seqeval's default average, and
//     run_ner.py's "precision", "recall" and "f1");
//   - Macro: the unweighted mean over the types that occur among the gold or the predicted
//     entities; Weighted: the mean weighted by the types' supports (0 with no gold entity);
//   - token accuracy: the fraction of tokens whose predicted tag equals the gold tag (O
//     tokens included, as seqeval's accuracy_score).
//
// With no entity and no token, every score is 0. seqeval's macro average is NaN (a mean of no
// scores) when no entity at all occurs; Macro gives 0 then, as Micro does.
//
// Example (Conlleval): gold [B-PER I-PER O B-LOC] and predicted [B-PER I-PER O I-LOC] both hold
// PER[0,1] and LOC[3]: P = R = F1 = 1, token accuracy 3/4. With StrictIOB2 the predicted I-LOC
// starts nothing: PER has P = R = 1 and LOC P = R = 0 (no prediction, one gold), so micro
// P = 1, R = 1/2, F1 = 2/3.
type Entities struct {
	mode      EntityMode
	tags      []string // tag of each id, for AddIDs
	types     map[string]*prCounts
	sentences int
	tokens    int
	correct   int // tokens whose predicted tag equals the gold one
}

// NewEntities returns an empty Entities that reads tags in the given mode. tags maps label
// ids to tag strings (the model's id2label: tags[id]), for AddIDs; it may be nil when only
// Add, with tag strings, is used.
func NewEntities(tags []string, mode EntityMode) *Entities {
	return &Entities{mode: mode, tags: slices.Clone(tags), types: map[string]*prCounts{}}
}

// Mode returns how tags are read into entities.
func (e *Entities) Mode() EntityMode { return e.mode }

// Add accumulates a batch of sentences: preds[i] and labels[i] are sentence i's predicted and
// gold tags, one per token that counts (positions that carry no tag, such as sub-word pieces
// and padding, left out). real marks the real sentences (true) and the padding (false); nil
// means every sentence is real. Nothing is added if a real sentence has a tag that is not O,
// B-<type> or I-<type>, if its two sequences differ in length, or if the lengths of the
// arguments differ; the error names the sentence, the position and the tag.
func (e *Entities) Add(preds, labels [][]string, real []bool) error {
	if err := e.checkBatch("Add", len(preds), len(labels), real); err != nil {
		return err
	}
	batch := e.newBatch()
	for i := range preds {
		if real != nil && !real[i] {
			continue
		}
		if len(preds[i]) != len(labels[i]) {
			return fmt.Errorf("metrics: Entities.Add: sentence %d: %d predicted tags but %d gold tags; pass one of "+
				"each per token", i, len(preds[i]), len(labels[i]))
		}
		if err := batch.sentence("Add", i, preds[i], labels[i]); err != nil {
			return err
		}
	}
	e.merge(batch)
	return nil
}

// AddIDs accumulates a batch of sentences given as tag ids, as a token classifier's gathered
// outputs come: preds[i][t] and labels[i][t] are the predicted (argmax) and gold tag ids of
// token position t of sentence i, tags[id] (NewEntities) their tags. Positions whose gold id
// is IgnoreIndex (-100) are dropped whatever their prediction, so the sub-word pieces and
// padding that the collator labelled -100 do not count; the rest is read as by Add. real marks
// the real sentences (true) and the padding (false); nil means every sentence is real. Nothing
// is added if a real sentence has an id out of range of tags, a tag that is not O, B-<type>
// or I-<type>, or rows of different lengths; the error names the sentence and the position.
func (e *Entities) AddIDs(preds, labels [][]int, real []bool) error {
	if err := e.checkBatch("AddIDs", len(preds), len(labels), real); err != nil {
		return err
	}
	batch := e.newBatch()
	var p, l []string
	for i := range preds {
		if real != nil && !real[i] {
			continue
		}
		if len(preds[i]) != len(labels[i]) {
			return fmt.Errorf("metrics: Entities.AddIDs: sentence %d: %d predicted ids but %d gold ids; pass rows of "+
				"the same length, with %d where a position has no tag", i, len(preds[i]), len(labels[i]), IgnoreIndex)
		}
		p, l = p[:0], l[:0]
		for t, gold := range labels[i] {
			if gold == IgnoreIndex {
				continue
			}
			for _, id := range []struct {
				what string
				id   int
			}{{"gold", gold}, {"predicted", preds[i][t]}} {
				if id.id < 0 || id.id >= len(e.tags) {
					return fmt.Errorf("metrics: Entities.AddIDs: sentence %d, position %d: %s id %d out of range [0, %d) "+
						"of the tags given to NewEntities (%d marks positions without a tag)", i, t, id.what, id.id,
						len(e.tags), IgnoreIndex)
				}
			}
			p, l = append(p, e.tags[preds[i][t]]), append(l, e.tags[gold])
		}
		if err := batch.sentence("AddIDs", i, p, l); err != nil {
			return err
		}
	}
	e.merge(batch)
	return nil
}

// checkBatch checks that preds, labels and real (unless nil) have one entry per sentence.
func (e *Entities) checkBatch(op string, preds, labels int, real []bool) error {
	if preds != labels {
		return fmt.Errorf("metrics: Entities.%s: %d predicted sentences but %d gold sentences; pass one gold "+
			"sequence per predicted one", op, preds, labels)
	}
	if real != nil && len(real) != preds {
		return fmt.Errorf("metrics: Entities.%s: %d sentences but %d mask values; pass one mask value per sentence, "+
			"or nil when all are real", op, preds, len(real))
	}
	return nil
}

// newBatch returns an empty Entities with e's mode, to hold a batch until it is checked.
func (e *Entities) newBatch() *Entities {
	return &Entities{mode: e.mode, types: map[string]*prCounts{}}
}

// sentence adds sentence i's tags to e.
func (e *Entities) sentence(op string, i int, preds, labels []string) error {
	gold, err := e.spans(op, i, "gold", labels)
	if err != nil {
		return err
	}
	pred, err := e.spans(op, i, "predicted", preds)
	if err != nil {
		return err
	}
	for _, s := range gold {
		e.count(s.typ).gold++
	}
	for _, s := range pred {
		c := e.count(s.typ)
		c.pred++
		if slices.Contains(gold, s) {
			c.tp++
		}
	}
	for t := range preds {
		if preds[t] == labels[t] {
			e.correct++
		}
	}
	e.tokens += len(preds)
	e.sentences++
	return nil
}

// count returns the counts of an entity type, creating them.
func (e *Entities) count(typ string) *prCounts {
	c, ok := e.types[typ]
	if !ok {
		c = &prCounts{}
		e.types[typ] = c
	}
	return c
}

// span is one entity: a type and the tokens start..end-1 of a sentence.
type span struct {
	typ        string
	start, end int
}

// spans returns the entities of one sentence's tags, in order, read in e's mode.
func (e *Entities) spans(op string, sentence int, what string, tags []string) ([]span, error) {
	var out []span
	open := span{start: -1} // the entity being read; start -1 when none
	closeAt := func(t int) {
		if open.start >= 0 {
			open.end = t
			out = append(out, open)
			open.start = -1
		}
	}
	for t, tag := range tags {
		prefix, typ, ok := parseTag(tag)
		if !ok {
			return nil, fmt.Errorf("metrics: Entities.%s: sentence %d, position %d: %s tag %q is not O, B-<type> or "+
				"I-<type> (IOB2 tags)", op, sentence, t, what, tag)
		}
		switch {
		case prefix == 'O':
			closeAt(t)
		case prefix == 'I' && open.start >= 0 && open.typ == typ:
			// Continues the open entity.
		case prefix == 'B' || e.mode == Conlleval:
			closeAt(t)
			open = span{typ: typ, start: t}
		default: // StrictIOB2: an I- that continues nothing.
			closeAt(t)
		}
	}
	closeAt(len(tags))
	return out, nil
}

// parseTag splits an IOB2 tag into its prefix ('O', 'B' or 'I') and its type.
func parseTag(tag string) (prefix byte, typ string, ok bool) {
	if tag == "O" {
		return 'O', "", true
	}
	if len(tag) > 2 && (tag[0] == 'B' || tag[0] == 'I') && tag[1] == '-' {
		return tag[0], tag[2:], true
	}
	return 0, "", false
}

// merge adds the counts of other to e.
func (e *Entities) merge(other *Entities) {
	for typ, c := range other.types {
		e.count(typ).add(*c)
	}
	e.sentences += other.sentences
	e.tokens += other.tokens
	e.correct += other.correct
}

// Merge adds the counts of other (for example, computed by another process) to e. Both must
// read tags in the same mode.
func (e *Entities) Merge(other *Entities) error {
	if other.mode != e.mode {
		return fmt.Errorf("metrics: Entities.Merge: cannot merge results read in %s mode into %s mode; make both "+
			"with the same NewEntities mode", other.mode, e.mode)
	}
	e.merge(other)
	return nil
}

// Reset forgets every sentence added.
func (e *Entities) Reset() {
	clear(e.types)
	e.sentences, e.tokens, e.correct = 0, 0, 0
}

// Count returns the number of (real) sentences added.
func (e *Entities) Count() int { return e.sentences }

// Tokens returns the number of tokens counted (those of the real sentences, less the ignored
// positions).
func (e *Entities) Tokens() int { return e.tokens }

// TokenAccuracy returns the fraction of tokens whose predicted tag equals the gold tag, or 0
// with no token.
func (e *Entities) TokenAccuracy() float64 { return ratio(e.correct, e.tokens) }

// Types returns the entity types that occur among the gold or the predicted entities, sorted.
func (e *Entities) Types() []string {
	out := make([]string, 0, len(e.types))
	for typ := range e.types {
		out = append(out, typ)
	}
	slices.Sort(out)
	return out
}

// Type returns the scores of one entity type (zero scores for a type that never occurred).
func (e *Entities) Type(typ string) Scores {
	c, ok := e.types[typ]
	if !ok {
		return Scores{}
	}
	return entityScores(*c)
}

// Micro returns the precision, recall and F1 of the entities of all types together; Support
// is the number of gold entities.
func (e *Entities) Micro() Scores {
	var sum prCounts
	for _, c := range e.types {
		sum.add(*c)
	}
	return entityScores(sum)
}

// Macro returns the unweighted means over the types (Types) of their precision, recall and
// F1; Support is the number of gold entities.
func (e *Entities) Macro() Scores {
	var s []Scores
	for _, typ := range e.Types() {
		s = append(s, e.Type(typ))
	}
	return meanScores(s)
}

// Weighted returns the means over the types of their precision, recall and F1 weighted by
// their supports, or zero scores with no gold entity; Support is the number of gold entities.
func (e *Entities) Weighted() Scores {
	var out Scores
	for _, typ := range e.Types() {
		s := e.Type(typ)
		w := float64(s.Support)
		out.Precision += w * s.Precision
		out.Recall += w * s.Recall
		out.F1 += w * s.F1
		out.Support += s.Support
	}
	if out.Support == 0 {
		return Scores{}
	}
	n := float64(out.Support)
	out.Precision, out.Recall, out.F1 = out.Precision/n, out.Recall/n, out.F1/n
	return out
}

// Values returns the scores by name, for logging, with run_ner.py's names for the micro
// averages: "count" (sentences), "tokens", "precision", "recall", "f1", "accuracy" (token
// accuracy), "macro_precision", "macro_recall" and "macro_f1". The per-type scores are left
// out, since their names depend on the data; Type has them.
func (e *Entities) Values() map[string]float64 {
	mi, ma := e.Micro(), e.Macro()
	return map[string]float64{
		"count":           float64(e.sentences),
		"tokens":          float64(e.tokens),
		"precision":       mi.Precision,
		"recall":          mi.Recall,
		"f1":              mi.F1,
		"accuracy":        e.TokenAccuracy(),
		"macro_precision": ma.Precision,
		"macro_recall":    ma.Recall,
		"macro_f1":        ma.F1,
	}
}

// String returns a one-line summary, such as
// "n=3453 tokens=46435 precision=0.9012 recall=0.9120 f1=0.9066 accuracy=0.9810 macro_f1=0.8870".
func (e *Entities) String() string {
	mi := e.Micro()
	return fmt.Sprintf("n=%d tokens=%d precision=%.4f recall=%.4f f1=%.4f accuracy=%.4f macro_f1=%.4f", e.sentences,
		e.tokens, mi.Precision, mi.Recall, mi.F1, e.TokenAccuracy(), e.Macro().F1)
}

// Report returns a table of the scores per type and averaged, as seqeval's
// classification_report prints it (with 4 decimals):
//
//	             precision    recall  f1-score   support
//
//	         LOC    1.0000    0.5000    0.6667         2
//	         PER    0.8000    1.0000    0.8889         4
//
//	   micro avg    0.8333    0.8333    0.8333         6
//	   macro avg    0.9000    0.7500    0.7778         6
//	weighted avg    0.8667    0.8333    0.8148         6
func (e *Entities) Report() string {
	width := len("weighted avg")
	for _, typ := range e.Types() {
		width = max(width, len(typ))
	}
	var b strings.Builder
	row := func(name string, s Scores) {
		fmt.Fprintf(&b, "%*s %9.4f %9.4f %9.4f %9d\n", width, name, s.Precision, s.Recall, s.F1, s.Support)
	}
	fmt.Fprintf(&b, "%*s %9s %9s %9s %9s\n\n", width, "", "precision", "recall", "f1-score", "support")
	for _, typ := range e.Types() {
		row(typ, e.Type(typ))
	}
	b.WriteString("\n")
	row("micro avg", e.Micro())
	row("macro avg", e.Macro())
	row("weighted avg", e.Weighted())
	return b.String()
}

// entityScores returns seqeval's scores from counts: F1 = 2·P·R/(P+R), each score 0 when its
// denominator is 0.
func entityScores(c prCounts) Scores {
	p, r := ratio(c.tp, c.pred), ratio(c.tp, c.gold)
	f := 0.0
	if p+r > 0 {
		f = 2 * p * r / (p + r)
	}
	return Scores{Precision: p, Recall: r, F1: f, Support: c.gold}
}
