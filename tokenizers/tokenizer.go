package tokenizers

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Tokenizer is a tokenizer.json pipeline: added vocabulary, normalizer, pre-tokenizer,
// model and post-processor. It is immutable and safe for concurrent use.
type Tokenizer struct {
	normalizer   Normalizer    // nil: none
	preTokenizer PreTokenizer  // nil: the whole piece is one word
	model        Model         //
	post         PostProcessor // nil: no special tokens, type ids 0 (1 for the second text)
	added        *AddedVocab
	tokens       []string         // id -> token: the model's vocabulary, then the added tokens beyond it
	ids          map[string]int32 // token -> id
	maxLen       int              // truncation: at most this many ids, special tokens included; 0: none
	cut          bool             // long texts may be encoded chunk by chunk (canCut)
	rstrip       []string         // the rstrip tokens' contents, raw and normalized (canCut)
	source       string
	specials     map[string]string // role ("pad_token"...) -> token, as the folder's files name them
	decoder      Decoder           // nil: tokens joined by spaces
	decoderErr   error             // the file's decoder is not supported: Decode fails with it
	// cleanUpSpaces is tokenizer_config.json's clean_up_tokenization_spaces (Decode).
	cleanUpSpaces bool
}

// Encoding is what a tokenizer makes of a text or a pair of texts: the ids, their type ids
// (token_type_ids) and their word ids (the index of the word each token comes from in its
// text, -1 for the special tokens), all of the same length; Pad also gives the attention
// mask (nil: every id counts).
type Encoding struct {
	IDs, TypeIDs, WordIDs []int32
	AttentionMask         []int32
}

func (e *Encoding) append(id, typeID, word int32) {
	e.IDs, e.TypeIDs, e.WordIDs = append(e.IDs, id), append(e.TypeIDs, typeID), append(e.WordIDs, word)
}

func (e *Encoding) truncate(n int) {
	if len(e.IDs) > n {
		e.IDs, e.TypeIDs, e.WordIDs = e.IDs[:n], e.TypeIDs[:n], e.WordIDs[:n]
	}
}

// tokenizerJSON is the top of a tokenizer.json. The truncation and padding settings (which
// transformers sets per call) are not read.
type tokenizerJSON struct {
	AddedTokens   []AddedTokenJSON `json:"added_tokens"`
	Normalizer    json.RawMessage  `json:"normalizer"`
	PreTokenizer  json.RawMessage  `json:"pre_tokenizer"`
	Model         json.RawMessage  `json:"model"`
	PostProcessor json.RawMessage  `json:"post_processor"`
	Decoder       json.RawMessage  `json:"decoder"`
}

// AddedTokenJSON is an added token as tokenizer.json (added_tokens) and
// tokenizer_config.json (added_tokens_decoder) write it.
type AddedTokenJSON struct {
	ID         *int32 `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized *bool  `json:"normalized"`
	Special    bool   `json:"special"`
}

// Token is the added token a with the given id, normalized when the file does not say (the
// tokenizers library's default: special tokens are not normalized, the others are).
func (a *AddedTokenJSON) Token(id int32) AddedToken {
	normalized := !a.Special
	if a.Normalized != nil {
		normalized = *a.Normalized
	}
	return AddedToken{Content: a.Content, ID: id, Special: a.Special, Normalized: normalized,
		LStrip: a.LStrip, RStrip: a.RStrip, SingleWord: a.SingleWord}
}

// Load reads a tokenizer.json file.
func Load(path string) (*Tokenizer, error) {
	contents, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizers: %w", err)
	}
	return Parse(contents, path)
}

// Parse reads the contents of a tokenizer.json; source names it in errors.
func Parse(contents []byte, source string) (*Tokenizer, error) {
	t, added, err := parsePipeline(contents, source)
	if err != nil {
		return nil, err
	}
	return newTokenizer(t, added)
}

// parsePipeline reads a tokenizer.json's pipeline and added tokens, not yet indexed.
func parsePipeline(contents []byte, source string) (*Tokenizer, []AddedToken, error) {
	var doc tokenizerJSON
	if err := json.Unmarshal(contents, &doc); err != nil {
		return nil, nil, fmt.Errorf("tokenizers: parsing %s: %w", source, err)
	}
	var kind struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(doc.Model, &kind); err != nil {
		return nil, nil, fmt.Errorf("tokenizers: %s: parsing the model: %w", source, err)
	}
	var model Model
	var err error
	switch kind.Type {
	case "Unigram":
		model, err = parseUnigram(doc.Model, source)
	case "WordPiece":
		model, err = parseWordPiece(doc.Model, source)
	case "BPE":
		model, err = parseBPE(doc.Model, source)
	default:
		return nil, nil, fmt.Errorf("tokenizers: model type %q in %s is not supported (supported: WordPiece, BPE, Unigram)", kind.Type, source)
	}
	if err != nil {
		return nil, nil, err
	}
	t := &Tokenizer{model: model, source: source}
	if t.normalizer, err = parseNormalizer(doc.Normalizer, source); err != nil {
		return nil, nil, err
	}
	if t.preTokenizer, err = parsePreTokenizer(doc.PreTokenizer, source); err != nil {
		return nil, nil, err
	}
	if t.post, err = ParsePostProcessor(doc.PostProcessor, source); err != nil {
		return nil, nil, err
	}
	// A decoder this package lacks does not keep the texts from being encoded: Decode fails.
	t.decoder, t.decoderErr = parseDecoder(doc.Decoder, source)
	added := make([]AddedToken, len(doc.AddedTokens))
	for i, a := range doc.AddedTokens {
		if a.Content == "" || a.ID == nil {
			return nil, nil, fmt.Errorf("tokenizers: %s: added token %d (%q) has no content or no id", source, i, a.Content)
		}
		added[i] = a.Token(*a.ID)
	}
	return t, added, nil
}

// newTokenizer indexes the vocabulary of t's model and the added tokens. The added tokens
// must have the ids the tokenizers library gives them when it reads them in this order: a
// token of the vocabulary its id there, another the id after the largest added id so far
// when that is beyond the vocabulary, else the vocabulary's size. The library does not read
// the ids of the file: it assigns these, and a file whose ids differ gets ids that disagree
// with it (and with the model it was saved with), so it is refused, naming the token.
func newTokenizer(t *Tokenizer, added []AddedToken) (*Tokenizer, error) {
	vocab := t.model.Vocab()
	t.tokens = slices.Clone(vocab)
	t.ids = make(map[string]int32, len(vocab)+len(added))
	for i, tok := range vocab {
		t.ids[tok] = int32(i)
	}
	maxAdded := int64(-1)
	for _, a := range added {
		want, ok := t.ids[a.Content]
		why := "its id in the vocabulary"
		if !ok {
			switch {
			case maxAdded >= int64(len(vocab)):
				want, why = int32(maxAdded+1), "the id after the largest added one"
			default:
				want, why = int32(len(vocab)), fmt.Sprintf("the first id after the vocabulary's %d tokens", len(vocab))
			}
		}
		if a.ID != want {
			if int(want) < len(t.tokens) && int(want) >= len(vocab) && t.tokens[want] == a.Content {
				why = "the id it was given before"
			}
			return nil, fmt.Errorf("tokenizers: %s: added token %q has id %d, but the tokenizers library gives it id %d (%s): refused, as the ids would disagree with the file",
				t.source, a.Content, a.ID, want, why)
		}
		if !ok {
			t.tokens = append(t.tokens, a.Content)
			t.ids[a.Content] = a.ID
		}
		maxAdded = max(maxAdded, int64(want))
	}
	if err := t.checkSpecials(); err != nil {
		return nil, err
	}
	var normalize func(string) string
	if t.normalizer != nil {
		normalize = t.normalizer.Normalize
	}
	t.added = NewAddedVocab(added, normalize)
	t.cut = t.canCut(added)
	return t, nil
}

// checkSpecials checks the special tokens of the post-processor against the vocabulary:
// each must be in it, with the id the post-processor gives it, so that every id Encode
// makes is one of the VocabSize tokens.
func (t *Tokenizer) checkSpecials() error {
	tp, ok := t.post.(*TemplateProcessing)
	if !ok {
		return nil
	}
	for _, tpl := range [][]TemplatePiece{tp.Single, tp.Pair} {
		for _, p := range tpl {
			for i, id := range p.Special {
				tok := ""
				if i < len(p.Tokens) {
					tok = p.Tokens[i]
				}
				have, ok := t.ids[tok]
				switch {
				case !ok:
					return fmt.Errorf("tokenizers: %s: the post-processor's special token %q (id %d) is not in the vocabulary", t.source, tok, id)
				case have != id:
					return fmt.Errorf("tokenizers: %s: the post-processor gives the special token %q id %d, but the vocabulary gives it id %d", t.source, tok, id, have)
				}
			}
		}
	}
	return nil
}

// WithMaxLen returns a copy of the tokenizer that truncates its encodings to at most maxLen
// ids, special tokens included (0: no truncation), as transformers' truncation=True,
// max_length=maxLen does: longest_first for a pair.
func (t *Tokenizer) WithMaxLen(maxLen int) (*Tokenizer, error) {
	pairSpecials := 0
	if t.post != nil {
		pairSpecials = t.post.Added(true)
	}
	if maxLen < 0 {
		return nil, fmt.Errorf("tokenizers: max length %d is negative", maxLen)
	}
	if maxLen > 0 && maxLen < pairSpecials {
		return nil, fmt.Errorf("tokenizers: max length %d is below the %d special tokens of a pair", maxLen, pairSpecials)
	}
	c := *t
	c.maxLen = maxLen
	return &c, nil
}

// MaxLen is the truncation length (0: none).
func (t *Tokenizer) MaxLen() int { return t.maxLen }

// VocabSize is the number of tokens, the added tokens beyond the model's vocabulary
// included (transformers' len(tokenizer)).
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// ID returns the id of a token and whether the vocabulary has it.
func (t *Tokenizer) ID(token string) (int32, bool) {
	id, ok := t.ids[token]
	return id, ok
}

// Token returns the token of an id ("" when out of range).
func (t *Tokenizer) Token(id int32) string {
	if id < 0 || int(id) >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// AddedTokens returns the added tokens, as the file declares them.
func (t *Tokenizer) AddedTokens() []AddedToken { return t.added.Tokens() }

// Tokenize returns the tokens of text, without special tokens and without truncation.
func (t *Tokenizer) Tokenize(text string) []string {
	e := t.encodeText(text)
	out := make([]string, len(e.IDs))
	for i, id := range e.IDs {
		out[i] = t.tokens[id]
	}
	return out
}

// IDs returns the ids of text, without special tokens and without truncation.
func (t *Tokenizer) IDs(text string) []int32 { return t.encodeText(text).IDs }

// Kind is the type of the model: "WordPiece", "BPE" or "Unigram".
func (t *Tokenizer) Kind() string {
	switch t.model.(type) {
	case *Unigram:
		return "Unigram"
	case *WordPiece:
		return "WordPiece"
	case *BPE:
		return "BPE"
	}
	return fmt.Sprintf("%T", t.model)
}

// Normalizer is the pipeline's normalizer (nil: none).
func (t *Tokenizer) Normalizer() Normalizer { return t.normalizer }

// PreTokenizer is the pipeline's pre-tokenizer (nil: none).
func (t *Tokenizer) PreTokenizer() PreTokenizer { return t.preTokenizer }

// Model is the pipeline's model (*WordPiece, *BPE or *Unigram).
func (t *Tokenizer) Model() Model { return t.model }

// PostProcessor is the pipeline's post-processor (nil: none).
func (t *Tokenizer) PostProcessor() PostProcessor { return t.post }

// Source names the file the tokenizer was read from.
func (t *Tokenizer) Source() string { return t.source }

// encodeText is the encoding of one text before truncation and post-processing: type ids 0.
func (t *Tokenizer) encodeText(text string) Encoding {
	e, _ := t.encodeCapped(text, len(text)+1, false)
	return e
}

// chunkSize is the length from which encodeCapped encodes a text piece by piece.
const chunkSize = 8 << 10

// encodeCapped is the first keep tokens of encodeText(text), and the number of tokens of the
// whole text. A text longer than chunkSize is encoded chunk by chunk (see nextCut), so that
// only keep tokens are held: without count it stops at the chunk that completes them (total
// is then at least keep), with count it goes on counting. A pipeline whose texts cannot be
// cut (see canCut), or a text without a place to cut it, is encoded whole.
func (t *Tokenizer) encodeCapped(text string, keep int, count bool) (Encoding, int) {
	var e Encoding
	word, total := int32(0), 0
	for first := true; text != ""; first = false {
		end := len(text)
		if t.cut && len(text) > chunkSize {
			end = t.nextCut(text)
		}
		n := len(e.IDs)
		word = t.encodeChunk(text[:end], first, word, &e)
		total += len(e.IDs) - n
		e.truncate(keep)
		if total >= keep && !count {
			break
		}
		text = text[end:]
	}
	return e, total
}

// encodeChunk appends the encoding of a chunk of a text (the first one when first), its
// words numbered from word; it returns the next word's number.
func (t *Tokenizer) encodeChunk(text string, first bool, word int32, e *Encoding) int32 {
	var normalize func(string) string
	if t.normalizer != nil {
		normalize = t.normalizer.Normalize
	}
	t.added.Split(text, normalize, func(piece string, tok *AddedToken, atStart bool) {
		if tok != nil {
			e.append(tok.ID, 0, word)
			word++
			return
		}
		words := []Word{{Text: piece, AtStart: atStart && first}}
		if t.preTokenizer != nil {
			words = t.preTokenizer.PreTokenize(words)
		}
		for _, w := range words {
			n := len(e.IDs)
			e.IDs = t.model.AppendIDs(w.Text, e.IDs)
			for range len(e.IDs) - n {
				e.TypeIDs, e.WordIDs = append(e.TypeIDs, 0), append(e.WordIDs, word)
			}
			word++
		}
	})
	return word
}

// nextCut is where the first chunk of text ends: at the first space at or after chunkSize
// whose previous character is an ASCII letter, digit or punctuation mark that the normalizer
// keeps as it is, and before which no rstrip token ends; or at the end. Cut there, the
// chunks encode to the whole text's tokens (canCut says for which pipelines): such a space
// begins a grapheme cluster and a Unicode normalization segment, the normalizers (Precompiled,
// Unicode forms, Lowercase, Strip on the right, Replace of space runs) give the first chunk
// the end they give the whole text, the pre-tokenizers cut a word before the space (Metaspace
// is told that the later chunks do not start the text), and no added token can match across
// it or take the spaces after it.
func (t *Tokenizer) nextCut(text string) int {
	for i := chunkSize; i < len(text); i++ {
		if text[i] != ' ' {
			continue
		}
		prev := text[i-1]
		if prev <= ' ' || prev >= 0x7f || t.normalizer != nil && t.normalizer.Normalize(text[i-1:i]) != text[i-1:i] {
			continue
		}
		word := text[strings.LastIndexFunc(text[:i], isUnicodeSpace)+1 : i]
		if !slices.ContainsFunc(t.rstrip, func(c string) bool {
			return strings.HasSuffix(word, c) || t.normalizer != nil && strings.HasSuffix(t.normalizer.Normalize(word), c)
		}) {
			return i
		}
	}
	return len(text)
}

// canCut tells whether the pipeline's texts may be cut as nextCut does: a normalizer made of
// Precompiled, Unicode forms, Lowercase, Strip without left, and Replace of runs of spaces by
// one (SentencePiece's); a pre-tokenizer (Metaspace, WhitespaceSplit, Whitespace); no added
// token with whitespace in its content, normalized or not. It lists the rstrip tokens'
// contents, raw and normalized, for nextCut.
func (t *Tokenizer) canCut(added []AddedToken) bool {
	var normOK func(n Normalizer) bool
	normOK = func(n Normalizer) bool {
		switch n := n.(type) {
		case nil, *Precompiled, UnicodeForm, Lowercase, BertNormalizer:
			return true
		case Strip:
			return !n.Left
		case Replace:
			return n.Pattern.String() == " {2,}" && n.Content == " "
		case NormalizerSequence:
			return !slices.ContainsFunc(n, func(m Normalizer) bool { return !normOK(m) })
		}
		return false
	}
	var preOK func(p PreTokenizer) bool
	preOK = func(p PreTokenizer) bool {
		switch p := p.(type) {
		case Metaspace, WhitespaceSplit, Whitespace, BertPreTokenizer:
			return true
		case ByteLevel:
			return p.UseRegex // GPT-2's pattern cuts a word before a space
		case PreTokenizerSequence:
			return len(p) > 0 && !slices.ContainsFunc(p, func(q PreTokenizer) bool { return !preOK(q) })
		}
		return false
	}
	if !normOK(t.normalizer) || !preOK(t.preTokenizer) {
		return false
	}
	t.rstrip = nil
	for _, a := range added {
		norm := a.Content
		if t.normalizer != nil {
			norm = t.normalizer.Normalize(a.Content)
		}
		if strings.ContainsFunc(a.Content+norm, isUnicodeSpace) {
			return false
		}
		if a.RStrip {
			t.rstrip = append(t.rstrip, a.Content, norm)
		}
	}
	return true
}

// Encode returns the encoding of text with the post-processor's special tokens, truncated
// to MaxLen. With a MaxLen, a long text is read only as far as those ids need, in chunks of
// about 8 KiB cut before a space where that gives the whole text's ids (see
// Tokenizer.nextCut; a pipeline canCut refuses, or a text with no such space, is encoded
// whole).
func (t *Tokenizer) Encode(text string) Encoding {
	added := 0
	if t.post != nil {
		added = t.post.Added(false)
	}
	var e Encoding
	if t.maxLen > 0 {
		e, _ = t.encodeCapped(text, max(t.maxLen-added, 0), false)
	} else {
		e = t.encodeText(text)
	}
	if t.post == nil {
		return e
	}
	return t.post.Process(&e, nil)
}

// EncodePair returns the encoding of a pair of texts with the post-processor's special
// tokens, the texts truncated longest first so that the whole has at most MaxLen ids.
// Without a post-processor the type ids of b are 1. An empty b is no pair, as in
// transformers: the result is Encode(a). Longest first needs both texts' numbers of tokens:
// they are read whole, in chunks as Encode reads them, holding at most MaxLen ids of each.
func (t *Tokenizer) EncodePair(a, b string) Encoding {
	if b == "" {
		return t.Encode(a)
	}
	added := 0
	if t.post != nil {
		added = t.post.Added(true)
	}
	var ea, eb Encoding
	if room := max(t.maxLen-added, 0); t.maxLen > 0 {
		// Longest first needs both texts' numbers of tokens; no more than room are kept.
		var n1, n2 int
		ea, n1 = t.encodeCapped(a, room, true)
		eb, n2 = t.encodeCapped(b, room, true)
		if n1+n2 > room {
			k1, k2 := LongestFirst(n1, n2, room)
			ea.truncate(k1)
			eb.truncate(k2)
		}
	} else {
		ea, eb = t.encodeText(a), t.encodeText(b)
	}
	if t.post == nil {
		for i := range eb.TypeIDs {
			eb.TypeIDs[i] = 1
		}
		ea.IDs, ea.TypeIDs, ea.WordIDs = append(ea.IDs, eb.IDs...), append(ea.TypeIDs, eb.TypeIDs...), append(ea.WordIDs, eb.WordIDs...)
		return ea
	}
	return t.post.Process(&ea, &eb)
}
