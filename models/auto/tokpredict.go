package auto

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/goaccel/goaccel/tokenizers"
	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
)

// Aggregation is how a TokenPredictor turns the labels of a text's tokens into entities:
// transformers' token-classification pipeline's aggregation_strategy.
type Aggregation string

// The aggregation strategies of transformers' token-classification pipeline.
const (
	// AggregateNone gives every token whose label is not "O" as an entity of its own, with
	// its label (B-PER) and its index. The pipeline's default, and the zero value's.
	AggregateNone Aggregation = "none"
	// AggregateSimple groups adjacent tokens whose labels have the same tag (PER for B-PER
	// and I-PER), a B- label starting a new group; a group's score is the mean of its tokens'.
	AggregateSimple Aggregation = "simple"
	// AggregateFirst first makes words of the tokens (see TokenPredictor), each labelled as
	// its first token is, then groups the words as AggregateSimple groups tokens.
	AggregateFirst Aggregation = "first"
	// AggregateAverage labels each word with the best class of its tokens' averaged scores.
	AggregateAverage Aggregation = "average"
	// AggregateMax labels each word as its token with the highest score is.
	AggregateMax Aggregation = "max"
)

// Entity is one entity a TokenPredictor finds in a text, as the pipeline's dictionaries say
// it.
type Entity struct {
	// Entity is the label: the token's or word's class (B-PER) with AggregateNone, the
	// group's tag (PER: the pipeline's entity_group) with the other strategies.
	Entity string
	// Score is the label's probability (softmax over the classes); for a group, the mean of
	// its tokens' or words' scores.
	Score float64
	// Word is the entity's text as the pipeline gives it: the tokens (the original text for
	// an unknown token) joined by the tokenizer's decoder, so lowercased and without accents
	// for an uncased WordPiece model; Text[StartByte:EndByte] is the original text.
	Word string
	// Start and End are the span of the entity in the text in characters (Unicode code
	// points, the pipeline's start and end, Python string indices).
	Start, End int
	// StartByte and EndByte are the same span in bytes of the Go string.
	StartByte, EndByte int
	// Index is the token's position in the encoding, special tokens counted (AggregateNone);
	// -1 with the other strategies.
	Index int
}

// TokenPredictor tags texts with a Model that has a token-classification head
// (Options.Head TokenClassification, loaded with LoadHead), and gives their entities as
// transformers' pipeline("token-classification", aggregation_strategy=...) does: the scores
// are the softmax of each token's logits, the special tokens are left out, tokens labelled
// "O" (or groups of them) are dropped, and the spans are the tokens' offsets in the text
// (see tokenizers.Tokenizer.EncodeOffsets).
//
// The word-based strategies (first, average, max) decide as the pipeline does which token
// continues a word: with a WordPiece tokenizer, a token whose text ("##ing") is not as long
// as the original text it covers; otherwise (byte-level BPE, SentencePiece) a token that
// neither starts the text nor touches a space on its left (the pipeline's fallback
// heuristic, which sees "New-York" as one word and "don't" as one). An unknown token always
// starts a word, and stands for its original text.
//
// Texts are truncated at the tokenizer's MaxLen (the pipeline truncates at the tokenizer's
// model_max_length; give Options.MaxLen the same); the pipeline's stride, which tags a long
// text in overlapping windows, is not implemented.
//
// The special tokens left out are those the tokenizer's post-processor adds ([CLS] and
// [SEP], <s> and </s>: the pipeline's special_tokens_mask); with a tokenizer.json whose
// post_processor is null every token is the text's and may be an entity, and a special token
// typed in the text is a token of it, as in the pipeline. Batches, length buckets, the
// programs compiled and concurrent use are as a Predictor's.
type TokenPredictor struct {
	*runner[string]
	tok   offsetTokenizer
	agg   Aggregation
	names []string
	// before and after are the number of special tokens the post-processor puts before and
	// after the text's tokens.
	before, after int
}

// offsetTokenizer is what a TokenPredictor needs of the model's tokenizer (a
// tokenizers.Tokenizer's methods).
type offsetTokenizer interface {
	EncodeOffsets(text string) (tokenizers.Encoding, []tokenizers.Offset, error)
	Token(id int32) string
	TokensToString(tokens []string) string
	UnkID() (int32, bool)
	SubwordPrefix() string
}

// NewTokenPredictor returns a TokenPredictor of a loaded token-classification model on
// backend, at most batchSize texts a batch (0: 32), grouping with the aggregation strategy agg (""
// is AggregateNone, the pipeline's default).
func NewTokenPredictor(m *Model, backend compute.Backend, batchSize int, agg Aggregation) (*TokenPredictor, error) {
	switch agg {
	case "":
		agg = AggregateNone
	case AggregateNone, AggregateSimple, AggregateFirst, AggregateAverage, AggregateMax:
	default:
		return nil, fmt.Errorf("auto: NewTokenPredictor: aggregation %q: want none, simple, first, average or max", agg)
	}
	if m == nil {
		return nil, fmt.Errorf("auto: NewTokenPredictor: nil model or backend")
	}
	tok, ok := m.Processor.(offsetTokenizer)
	if !ok {
		return nil, fmt.Errorf("auto: NewTokenPredictor: the model's processor %T gives no offsets", m.Processor)
	}
	r, err := textRunner("NewTokenPredictor", m, nil, backend, batchSize)
	if err != nil {
		return nil, err
	}
	names := make([]string, m.NumLabels())
	for i := range names {
		names[i] = fmt.Sprintf("LABEL_%d", i)
		if l := m.Labels(); l != nil {
			names[i] = l[i]
		}
	}
	before, after, err := specials(tok)
	if err != nil {
		return nil, fmt.Errorf("auto: NewTokenPredictor: %w", err)
	}
	return &TokenPredictor{runner: r, tok: tok, agg: agg, names: names, before: before, after: after}, nil
}

// specials finds how many special tokens tok's post-processor puts before and after a text's
// tokens: the encoding of the empty text is all of them, and a short text's has its tokens
// between the two parts (a probe whose tokens are not special ids tells where they part).
func specials(tok offsetTokenizer) (before, after int, err error) {
	e, _, err := tok.EncodeOffsets("")
	if err != nil {
		return 0, 0, err
	}
	all := e.IDs
	n := len(all)
	for _, probe := range []string{"a", "x", "the", "1"} {
		e, _, err := tok.EncodeOffsets(probe)
		if err != nil {
			return 0, 0, err
		}
		ids := e.IDs
		if len(ids) <= n {
			return n, 0, nil // no token of a text fits beside the special ones: there is nothing to tag
		}
		var fits []int
		for k := 0; k <= n; k++ {
			if slices.Equal(ids[:k], all[:k]) && slices.Equal(ids[len(ids)-(n-k):], all[k:]) {
				fits = append(fits, k)
			}
		}
		if len(fits) == 1 {
			return fits[0], n - fits[0], nil
		}
	}
	return 0, 0, fmt.Errorf("cannot tell which of the tokenizer's ids for a text are the special tokens %v it adds", all)
}

// Predict returns the entities of each text, in order, each text's in the order of the
// text.
func (p *TokenPredictor) Predict(texts []string) ([][]Entity, error) {
	out := make([][]Entity, 0, len(texts))
	for start := 0; start < len(texts); start += p.batch {
		chunk := texts[start:min(start+p.batch, len(texts))]
		flat, dims, inputs, err := p.run(chunk)
		if err != nil {
			return nil, fmt.Errorf("auto: TokenPredictor: %w", err)
		}
		if len(dims) != 3 || dims[2] != len(p.names) {
			return nil, fmt.Errorf("auto: TokenPredictor: the model's logits have shape %v: want [batch, length, %d] (a token-classification head: Options.Head TokenClassification)", dims, len(p.names))
		}
		length, k := dims[1], dims[2]
		inputIDs := tensors.MustCopyFlatData[int32](inputs[0])
		for i, text := range chunk {
			e, offs, err := p.tok.EncodeOffsets(text)
			if err != nil {
				return nil, fmt.Errorf("auto: TokenPredictor: text %d: %w", start+i, err)
			}
			ids := e.IDs
			row := inputIDs[i*length : (i+1)*length]
			if len(ids) > length || !slices.Equal(ids, row[:len(ids)]) {
				return nil, fmt.Errorf("auto: TokenPredictor: text %d (%q): the ids with offsets %v differ from the model's inputs %v", start+i, text, ids, row)
			}
			logits := flat[i*length*k : (i+1)*length*k]
			out = append(out, p.entities(text, ids, offs, logits, k))
		}
	}
	return out, nil
}

// token is a token (or, after word aggregation, a word) on its way to becoming an entity.
type token struct {
	word       string
	scores     []float64
	label      int
	score      float64
	start, end int // bytes
	index      int
	subword    bool
}

// entities applies the pipeline's post-processing to one text.
func (p *TokenPredictor) entities(text string, ids []int32, offs []tokenizers.Offset, logits []float32, k int) []Entity {
	unk, hasUnk := p.tok.UnkID()
	prefix := p.tok.SubwordPrefix()
	var toks []token
	for i := p.before; i < len(ids)-p.after; i++ { // the post-processor's special tokens are left out
		row := make([]float64, k)
		for j := range row {
			row[j] = float64(logits[i*k+j])
		}
		o := offs[i]
		t := token{word: p.tok.Token(ids[i]), scores: softmax(row), start: o.Start, end: o.End, index: i}
		ref := text[o.Start:o.End]
		if prefix != "" {
			t.subword = utf8.RuneCountInString(t.word) != utf8.RuneCountInString(ref)
		} else {
			before, _ := utf8.DecodeLastRuneInString(text[:o.Start])
			at, _ := utf8.DecodeRuneInString(text[o.Start:])
			t.subword = o.Start > 0 && before != ' ' && (o.Start == len(text) || at != ' ')
		}
		if hasUnk && ids[i] == unk {
			t.word, t.subword = ref, false
		}
		t.label = argmax(t.scores)
		t.score = t.scores[t.label]
		toks = append(toks, t)
	}
	switch p.agg {
	case AggregateNone:
		var out []Entity
		for _, t := range toks {
			if p.names[t.label] != "O" {
				out = append(out, p.entity(text, p.names[t.label], t.score, t.word, t.start, t.end, t.index))
			}
		}
		return out
	case AggregateSimple:
	default:
		toks = p.words(toks)
	}
	return p.groups(text, toks)
}

// words joins the tokens of each word into one, labelled as the strategy says.
func (p *TokenPredictor) words(toks []token) []token {
	var out []token
	for i := 0; i < len(toks); {
		j := i + 1
		for j < len(toks) && toks[j].subword {
			j++
		}
		group := toks[i:j]
		words := make([]string, len(group))
		for n, t := range group {
			words[n] = t.word
		}
		w := token{word: p.tok.TokensToString(words), start: group[0].start, end: group[len(group)-1].end, index: -1}
		switch p.agg {
		case AggregateFirst:
			w.scores = group[0].scores
		case AggregateMax:
			best := 0
			for n, t := range group {
				if t.score > group[best].score {
					best = n
				}
			}
			w.scores = group[best].scores
		case AggregateAverage:
			w.scores = make([]float64, len(group[0].scores))
			for _, t := range group {
				for c, v := range t.scores {
					w.scores[c] += v / float64(len(group))
				}
			}
		}
		w.label = argmax(w.scores)
		w.score = w.scores[w.label]
		out = append(out, w)
		i = j
	}
	return out
}

// groups joins adjacent tokens (or words) of the same tag, a B- label starting a new group,
// and drops the groups of tag "O".
func (p *TokenPredictor) groups(text string, toks []token) []Entity {
	var out []Entity
	for i := 0; i < len(toks); {
		_, tag := bioTag(p.names[toks[i].label])
		j := i + 1
		for j < len(toks) {
			bi, next := bioTag(p.names[toks[j].label])
			if next != tag || bi == "B" {
				break
			}
			j++
		}
		group := toks[i:j]
		var sum float64
		words := make([]string, len(group))
		for n, t := range group {
			sum += t.score
			words[n] = t.word
		}
		name := p.names[group[0].label]
		if _, rest, ok := strings.Cut(name, "-"); ok {
			name = rest
		}
		if name != "O" {
			out = append(out, p.entity(text, name, sum/float64(len(group)), p.tok.TokensToString(words), group[0].start, group[len(group)-1].end, -1))
		}
		i = j
	}
	return out
}

// entity makes an Entity, its byte span converted to characters.
func (p *TokenPredictor) entity(text, label string, score float64, word string, start, end, index int) Entity {
	chars := tokenizers.CharOffsets(text, []tokenizers.Offset{{Start: start, End: end}})[0]
	return Entity{Entity: label, Score: score, Word: word, Start: chars.Start, End: chars.End, StartByte: start, EndByte: end, Index: index}
}

// bioTag splits a label into its B/I prefix and its tag: "B-PER" is (B, PER), "I-PER" (I,
// PER), and a label without prefix continues: "O" is (I, O).
func bioTag(label string) (bi, tag string) {
	switch {
	case strings.HasPrefix(label, "B-"):
		return "B", label[2:]
	case strings.HasPrefix(label, "I-"):
		return "I", label[2:]
	}
	return "I", label
}

// argmax is the index of the first largest value.
func argmax(v []float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}
