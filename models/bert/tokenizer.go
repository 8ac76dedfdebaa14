package bert

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Special tokens every BERT vocabulary must contain.
const (
	PadToken  = "[PAD]"
	UnkToken  = "[UNK]"
	ClsToken  = "[CLS]"
	SepToken  = "[SEP]"
	MaskToken = "[MASK]"
)

// maxWordChars is the length (in runes) above which a word becomes [UNK] without trying
// WordPiece (HF's max_input_chars_per_word).
const maxWordChars = 100

// Tokenizer turns texts into the ids a model of the BERT family reads, with the semantics
// of transformers' fast tokenizers. It has two kinds of segmenter (the plug that makes the
// ids of a text), chosen once when the tokenizer is read:
//
//   - WordPiece (BERT, DistilBERT, ELECTRA: vocab.txt or a WordPiece tokenizer.json): basic
//     tokenization (cleaning, CJK splitting, lowercasing and accent stripping for uncased
//     models, punctuation splitting), then greedy longest-match-first WordPiece with "##"
//     continuation pieces, a word that cannot be covered becoming [UNK];
//   - byte-level BPE (RoBERTa: a BPE tokenizer.json, see bpe.go).
//
// Encode wraps the ids in the post-processor's special tokens ([CLS] ... [SEP], or <s> ...
// </s>) and truncates them to MaxLen; EncodePair does the same for a pair of texts; Collate
// also pads, and builds the attention mask and token type ids.
//
// A Tokenizer is immutable after construction and safe for concurrent use.
type Tokenizer struct {
	tokens    []string         // id -> token
	ids       map[string]int32 // token -> id
	maxLen    int
	seg       segmenter
	special   specialTokens
	buckets   []int // optional padding lengths, ascending, the last one == maxLen
	vocabFrom string
	json      []byte // a BPE tokenizer.json as read, written back by SavePretrained
}

// segmenter makes the ids of a text, without special tokens and without truncation.
type segmenter interface {
	appendIDs(text string, out []int32) []int32
}

// specialTokens are the post-processor's tokens and the shape of a pair.
type specialTokens struct {
	cls, sep, pad int32
	pairSeps      int   // separators between the texts of a pair: 1 (BERT), 2 (RoBERTa)
	pairTypeID    int32 // type id of the second text: 1 (BERT), 0 (RoBERTa)
}

// wordPiece is BERT's segmenter: basic tokenization, then WordPiece.
type wordPiece struct {
	ids      map[string]int32
	basic    basicOptions
	prefix   string // continuation prefix, "##"
	maxChars int
	unk      int32
}

// NewTokenizer reads an uncased BERT vocabulary file (vocab.txt: one token per line, the
// line number being the id) and returns a tokenizer producing sequences of at most maxLen
// tokens, [CLS] and [SEP] included.
func NewTokenizer(vocabPath string, maxLen int) (*Tokenizer, error) {
	tokens, err := readVocabFile(vocabPath)
	if err != nil {
		return nil, err
	}
	return newTokenizer(tokens, maxLen, basicOptions{lowercase: true, stripAccents: true, chineseChars: true}, vocabPath)
}

// NewTokenizerFromVocab returns an uncased tokenizer over the given vocabulary (token i has
// id i), for instance one made by BuildVocab.
func NewTokenizerFromVocab(tokens []string, maxLen int) (*Tokenizer, error) {
	return newTokenizer(slices.Clone(tokens), maxLen, basicOptions{lowercase: true, stripAccents: true, chineseChars: true}, "vocabulary")
}

// LoadTokenizer builds the tokenizer of a Hugging Face model folder: from vocab.txt (with
// do_lower_case, strip_accents and tokenize_chinese_chars from tokenizer_config.json when
// present), or else from a WordPiece tokenizer.json.
func LoadTokenizer(dir string, maxLen int) (*Tokenizer, error) {
	vocabPath := filepath.Join(dir, "vocab.txt")
	if _, err := os.Stat(vocabPath); err == nil {
		tokens, err := readVocabFile(vocabPath)
		if err != nil {
			return nil, err
		}
		opts, err := readTokenizerConfig(filepath.Join(dir, "tokenizer_config.json"))
		if err != nil {
			return nil, err
		}
		return newTokenizer(tokens, maxLen, opts, vocabPath)
	}
	jsonPath := filepath.Join(dir, "tokenizer.json")
	if _, err := os.Stat(jsonPath); err == nil {
		return readTokenizerJSON(jsonPath, maxLen)
	}
	return nil, fmt.Errorf("bert: model folder %s has neither vocab.txt nor tokenizer.json", dir)
}

// newTokenizer checks a WordPiece vocabulary and maxLen and indexes the tokens.
func newTokenizer(tokens []string, maxLen int, opts basicOptions, source string) (*Tokenizer, error) {
	if maxLen < 2 {
		return nil, fmt.Errorf("bert: max_len must be at least 2 ([CLS] and [SEP]), got %d", maxLen)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("bert: %s: empty vocabulary", source)
	}
	ids := make(map[string]int32, len(tokens))
	for i, tok := range tokens {
		ids[tok] = int32(i) // a duplicated token keeps its last id, as in HF's load_vocab
	}
	wp := &wordPiece{ids: ids, basic: opts, prefix: "##", maxChars: maxWordChars}
	t := &Tokenizer{tokens: tokens, ids: ids, maxLen: maxLen, seg: wp, buckets: []int{maxLen}, vocabFrom: source,
		special: specialTokens{pairSeps: 1, pairTypeID: 1}}
	for _, sp := range []struct {
		name string
		id   *int32
	}{{PadToken, &t.special.pad}, {UnkToken, &wp.unk}, {ClsToken, &t.special.cls}, {SepToken, &t.special.sep}} {
		id, ok := ids[sp.name]
		if !ok {
			return nil, fmt.Errorf("bert: %s: vocabulary has no %s token", source, sp.name)
		}
		*sp.id = id
	}
	return t, nil
}

// readVocabFile reads vocab.txt: one token per line, id = line number (0-based).
func readVocabFile(path string) ([]string, error) {
	contents, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bert: reading vocabulary: %w", err)
	}
	var tokens []string
	sc := bufio.NewScanner(bytes.NewReader(contents))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		tokens = append(tokens, strings.TrimSuffix(sc.Text(), "\r"))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bert: reading vocabulary %s:%d: %w", path, len(tokens)+1, err)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("bert: vocabulary %s is empty", path)
	}
	return tokens, nil
}

// readTokenizerConfig reads the options of HF's BertTokenizer from tokenizer_config.json;
// a missing file means the uncased defaults.
func readTokenizerConfig(path string) (basicOptions, error) {
	opts := basicOptions{lowercase: true, stripAccents: true, chineseChars: true}
	contents, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return opts, nil
	} else if err != nil {
		return opts, fmt.Errorf("bert: reading tokenizer config: %w", err)
	}
	var cfg struct {
		DoLowerCase          *bool `json:"do_lower_case"`
		StripAccents         *bool `json:"strip_accents"`
		TokenizeChineseChars *bool `json:"tokenize_chinese_chars"`
		DoBasicTokenize      *bool `json:"do_basic_tokenize"`
	}
	if err := json.Unmarshal(contents, &cfg); err != nil {
		return opts, fmt.Errorf("bert: parsing %s: %w", path, err)
	}
	if cfg.DoBasicTokenize != nil && !*cfg.DoBasicTokenize {
		return opts, fmt.Errorf("bert: %s: do_basic_tokenize=false is not supported", path)
	}
	if cfg.DoLowerCase != nil {
		opts.lowercase = *cfg.DoLowerCase
	}
	// HF: strip_accents unset (null) follows do_lower_case.
	opts.stripAccents = opts.lowercase
	if cfg.StripAccents != nil {
		opts.stripAccents = *cfg.StripAccents
	}
	if cfg.TokenizeChineseChars != nil {
		opts.chineseChars = *cfg.TokenizeChineseChars
	}
	return opts, nil
}

// readTokenizerJSON reads a HF tokenizers file: WordPiece with BertNormalizer, or byte-level
// BPE (see bpe.go).
func readTokenizerJSON(path string, maxLen int) (*Tokenizer, error) {
	contents, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bert: reading tokenizer: %w", err)
	}
	var kind struct {
		Model struct {
			Type string `json:"type"`
		} `json:"model"`
	}
	if err := json.Unmarshal(contents, &kind); err != nil {
		return nil, fmt.Errorf("bert: parsing %s: %w", path, err)
	}
	switch kind.Model.Type {
	case "WordPiece":
		return readWordPieceJSON(contents, path, maxLen)
	case "BPE":
		return readBPEJSON(contents, path, maxLen)
	}
	return nil, fmt.Errorf("bert: %s: model type %q is not supported: WordPiece and BPE (byte-level) are", path, kind.Model.Type)
}

// readBPEJSON reads a byte-level BPE tokenizer.json (RoBERTa's).
func readBPEJSON(contents []byte, path string, maxLen int) (*Tokenizer, error) {
	if maxLen < 2 {
		return nil, fmt.Errorf("bert: max_len must be at least 2 (<s> and </s>), got %d", maxLen)
	}
	var doc bpeJSON
	if err := json.Unmarshal(contents, &doc); err != nil {
		return nil, fmt.Errorf("bert: parsing %s: %w", path, err)
	}
	seg, tokens, special, err := newByteLevelBPE(&doc)
	if err != nil {
		return nil, fmt.Errorf("bert: %s: %w", path, err)
	}
	return &Tokenizer{tokens: tokens, ids: seg.ids, maxLen: maxLen, seg: seg, special: *special,
		buckets: []int{maxLen}, vocabFrom: path, json: contents}, nil
}

// readWordPieceJSON reads a HF tokenizers file whose model is WordPiece and whose normalizer
// is BertNormalizer.
func readWordPieceJSON(contents []byte, path string, maxLen int) (*Tokenizer, error) {
	var doc struct {
		Normalizer *struct {
			Type               string `json:"type"`
			Lowercase          *bool  `json:"lowercase"`
			StripAccents       *bool  `json:"strip_accents"`
			HandleChineseChars *bool  `json:"handle_chinese_chars"`
		} `json:"normalizer"`
		Model struct {
			Vocab                   map[string]int32 `json:"vocab"`
			UnkToken                string           `json:"unk_token"`
			ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
			MaxInputCharsPerWord    int              `json:"max_input_chars_per_word"`
		} `json:"model"`
	}
	if err := json.Unmarshal(contents, &doc); err != nil {
		return nil, fmt.Errorf("bert: parsing %s: %w", path, err)
	}
	opts := basicOptions{lowercase: true, stripAccents: true, chineseChars: true}
	if n := doc.Normalizer; n != nil {
		if n.Type != "BertNormalizer" {
			return nil, fmt.Errorf("bert: %s: normalizer %q is not supported with WordPiece: only BertNormalizer is", path, n.Type)
		}
		if n.Lowercase != nil {
			opts.lowercase = *n.Lowercase
		}
		opts.stripAccents = opts.lowercase
		if n.StripAccents != nil {
			opts.stripAccents = *n.StripAccents
		}
		if n.HandleChineseChars != nil {
			opts.chineseChars = *n.HandleChineseChars
		}
	}
	tokens := make([]string, len(doc.Model.Vocab))
	for tok, id := range doc.Model.Vocab {
		if id < 0 || int(id) >= len(tokens) || tokens[id] != "" {
			return nil, fmt.Errorf("bert: %s: vocabulary ids are not 0..%d without gaps (token %q has id %d)",
				path, len(tokens)-1, tok, id)
		}
		tokens[id] = tok
	}
	t, err := newTokenizer(tokens, maxLen, opts, path)
	if err != nil {
		return nil, err
	}
	wp := t.seg.(*wordPiece)
	if doc.Model.ContinuingSubwordPrefix != nil {
		wp.prefix = *doc.Model.ContinuingSubwordPrefix
	}
	if doc.Model.MaxInputCharsPerWord > 0 {
		wp.maxChars = doc.Model.MaxInputCharsPerWord
	}
	if u := doc.Model.UnkToken; u != "" {
		id, ok := t.ids[u]
		if !ok {
			return nil, fmt.Errorf("bert: %s: unk_token %q is not in the vocabulary", path, u)
		}
		wp.unk = id
	}
	return t, nil
}

// MaxLen is the length of the sequences the tokenizer produces, [CLS] and [SEP] included.
func (t *Tokenizer) MaxLen() int { return t.maxLen }

// VocabSize is the number of tokens of the vocabulary.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// Vocab returns a copy of the vocabulary (token i has id i).
func (t *Tokenizer) Vocab() []string { return slices.Clone(t.tokens) }

// Lowercase reports whether the tokenizer lowercases its input (an uncased WordPiece model).
func (t *Tokenizer) Lowercase() bool {
	wp, ok := t.seg.(*wordPiece)
	return ok && wp.basic.lowercase
}

// Kind is the segmenter: "WordPiece" or "BPE" (byte-level).
func (t *Tokenizer) Kind() string {
	if _, ok := t.seg.(*wordPiece); ok {
		return "WordPiece"
	}
	return "BPE"
}

// ID returns the id of a token and whether it is in the vocabulary.
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

// PadID is the id of the padding token ([PAD] or <pad>), the value of padding positions in
// input ids.
func (t *Tokenizer) PadID() int32 { return t.special.pad }

// Tokenize returns the tokens of text, without special tokens and without truncation:
// "Unaffable!" -> ["una", "##ff", "##able", "!"] with bert-base-uncased, "Hello world!" ->
// ["Hello", "Ġworld", "!"] with roberta-base.
func (t *Tokenizer) Tokenize(text string) []string {
	ids := t.seg.appendIDs(text, nil)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = t.tokens[id]
	}
	return out
}

// Encode returns the ids of [CLS] + the tokens of text + [SEP] (<s> ... </s> for RoBERTa),
// the tokens truncated so that the whole sequence has at most MaxLen ids. No padding is
// added.
func (t *Tokenizer) Encode(text string) []int32 {
	ids := make([]int32, 1, t.maxLen)
	ids[0] = t.special.cls
	ids = t.seg.appendIDs(text, ids)
	if len(ids) > t.maxLen-1 {
		ids = ids[:t.maxLen-1]
	}
	return append(ids, t.special.sep)
}

// EncodePair returns the ids and token type ids of a pair of texts, as transformers'
// tokenizer(a, b, truncation=True, max_length=MaxLen) does: [CLS] a [SEP] b [SEP] with type
// ids 0 on "[CLS] a [SEP]" and 1 on "b [SEP]" (WordPiece), or <s> a </s></s> b </s> with
// every type id 0 (RoBERTa). When the whole is longer than MaxLen the texts are cut
// "longest first": the longer one is cut to what the shorter one leaves, and both to half
// when each is longer than that. An empty b is no pair, as in transformers: the result is
// Encode(a), with type ids 0.
func (t *Tokenizer) EncodePair(a, b string) (ids, typeIDs []int32) {
	if b == "" {
		ids = t.Encode(a)
		return ids, make([]int32, len(ids))
	}
	first, second := t.seg.appendIDs(a, nil), t.seg.appendIDs(b, nil)
	sp := t.special
	room := t.maxLen - 2 - sp.pairSeps
	if room < 0 {
		room = 0
	}
	if len(first)+len(second) > room {
		n1, n2 := longestFirst(len(first), len(second), room)
		first, second = first[:n1], second[:n2]
	}
	ids = make([]int32, 0, len(first)+len(second)+2+sp.pairSeps)
	ids = append(append(append(ids, sp.cls), first...), sp.sep)
	typeIDs = make([]int32, len(ids), cap(ids))
	for range sp.pairSeps - 1 {
		ids, typeIDs = append(ids, sp.sep), append(typeIDs, 0)
	}
	for _, id := range append(second, sp.sep) {
		ids, typeIDs = append(ids, id), append(typeIDs, sp.pairTypeID)
	}
	return ids, typeIDs
}

// longestFirst is the number of tokens kept of each text of a pair of n1 and n2 tokens that
// must fit in room (the tokenizers library's longest_first truncation).
func longestFirst(n1, n2, room int) (keep1, keep2 int) {
	short, long := n1, n2
	if n1 > n2 {
		short, long = n2, n1
	}
	if short > room {
		long = short
	} else {
		long = max(short, room-short)
	}
	if short+long > room {
		short = room / 2
		long = short + room%2
	}
	if n1 > n2 {
		short, long = long, short
	}
	return min(short, n1), min(long, n2)
}

// appendIDs appends the WordPiece ids of text to out.
func (w *wordPiece) appendIDs(text string, out []int32) []int32 {
	for _, word := range basicTokenize(text, w.basic) {
		out = w.word(word, out)
	}
	return out
}

// word appends the pieces of one word: at each position the longest vocabulary entry
// (with the "##" prefix after the first piece) is taken; if some position matches nothing,
// or the word is longer than maxChars runes, the whole word becomes [UNK].
func (w *wordPiece) word(word string, out []int32) []int32 {
	runes := []rune(word)
	if len(runes) > w.maxChars {
		return append(out, w.unk)
	}
	mark := len(out)
	for start := 0; start < len(runes); {
		end := len(runes)
		found := int32(-1)
		for ; end > start; end-- {
			piece := string(runes[start:end])
			if start > 0 {
				piece = w.prefix + piece
			}
			if id, ok := w.ids[piece]; ok {
				found = id
				break
			}
		}
		if found < 0 {
			return append(out[:mark], w.unk)
		}
		out = append(out, found)
		start = end
	}
	return out
}
