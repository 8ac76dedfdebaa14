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

// Tokenizer is BERT's WordPiece tokenizer: basic tokenization (cleaning, CJK splitting,
// lowercasing and accent stripping for uncased models, punctuation splitting), then greedy
// longest-match-first WordPiece with "##" continuation pieces, a word that cannot be covered
// becoming [UNK]. Encode wraps the pieces in [CLS] ... [SEP] and truncates them to MaxLen;
// Collate also pads, and builds the attention mask and token type ids.
//
// A Tokenizer is immutable after construction and safe for concurrent use.
type Tokenizer struct {
	tokens    []string         // id -> token
	ids       map[string]int32 // token -> id
	maxLen    int
	basic     basicOptions
	prefix    string // continuation prefix, "##"
	maxChars  int
	unk       int32
	cls       int32
	sep       int32
	pad       int32
	buckets   []int // optional padding lengths, ascending, the last one == maxLen
	vocabFrom string
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

// newTokenizer checks the vocabulary and maxLen and indexes the tokens.
func newTokenizer(tokens []string, maxLen int, opts basicOptions, source string) (*Tokenizer, error) {
	if maxLen < 2 {
		return nil, fmt.Errorf("bert: max_len must be at least 2 ([CLS] and [SEP]), got %d", maxLen)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("bert: %s: empty vocabulary", source)
	}
	t := &Tokenizer{
		tokens: tokens, ids: make(map[string]int32, len(tokens)), maxLen: maxLen, basic: opts,
		prefix: "##", maxChars: maxWordChars, buckets: []int{maxLen}, vocabFrom: source,
	}
	for i, tok := range tokens {
		t.ids[tok] = int32(i) // a duplicated token keeps its last id, as in HF's load_vocab
	}
	for _, sp := range []struct {
		name string
		id   *int32
	}{{PadToken, &t.pad}, {UnkToken, &t.unk}, {ClsToken, &t.cls}, {SepToken, &t.sep}} {
		id, ok := t.ids[sp.name]
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

// readTokenizerJSON reads a HF tokenizers file whose model is WordPiece and whose normalizer
// is BertNormalizer.
func readTokenizerJSON(path string, maxLen int) (*Tokenizer, error) {
	contents, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bert: reading tokenizer: %w", err)
	}
	var doc struct {
		Normalizer *struct {
			Type               string `json:"type"`
			Lowercase          *bool  `json:"lowercase"`
			StripAccents       *bool  `json:"strip_accents"`
			HandleChineseChars *bool  `json:"handle_chinese_chars"`
		} `json:"normalizer"`
		Model struct {
			Type                    string           `json:"type"`
			Vocab                   map[string]int32 `json:"vocab"`
			UnkToken                string           `json:"unk_token"`
			ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
			MaxInputCharsPerWord    int              `json:"max_input_chars_per_word"`
		} `json:"model"`
	}
	if err := json.Unmarshal(contents, &doc); err != nil {
		return nil, fmt.Errorf("bert: parsing %s: %w", path, err)
	}
	if doc.Model.Type != "WordPiece" {
		return nil, fmt.Errorf("bert: %s: model type %q is not supported: only WordPiece is", path, doc.Model.Type)
	}
	opts := basicOptions{lowercase: true, stripAccents: true, chineseChars: true}
	if n := doc.Normalizer; n != nil {
		if n.Type != "BertNormalizer" {
			return nil, fmt.Errorf("bert: %s: normalizer %q is not supported: only BertNormalizer is", path, n.Type)
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
	if doc.Model.ContinuingSubwordPrefix != nil {
		t.prefix = *doc.Model.ContinuingSubwordPrefix
	}
	if doc.Model.MaxInputCharsPerWord > 0 {
		t.maxChars = doc.Model.MaxInputCharsPerWord
	}
	if u := doc.Model.UnkToken; u != "" {
		id, ok := t.ids[u]
		if !ok {
			return nil, fmt.Errorf("bert: %s: unk_token %q is not in the vocabulary", path, u)
		}
		t.unk = id
	}
	return t, nil
}

// MaxLen is the length of the sequences the tokenizer produces, [CLS] and [SEP] included.
func (t *Tokenizer) MaxLen() int { return t.maxLen }

// VocabSize is the number of tokens of the vocabulary.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// Vocab returns a copy of the vocabulary (token i has id i).
func (t *Tokenizer) Vocab() []string { return slices.Clone(t.tokens) }

// Lowercase reports whether the tokenizer lowercases its input (uncased model).
func (t *Tokenizer) Lowercase() bool { return t.basic.lowercase }

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

// PadID is the id of [PAD], the value of padding positions in input ids.
func (t *Tokenizer) PadID() int32 { return t.pad }

// Tokenize returns the WordPiece tokens of text, without special tokens and without
// truncation: "Unaffable!" -> ["una", "##ff", "##able", "!"] with bert-base-uncased.
func (t *Tokenizer) Tokenize(text string) []string {
	ids := t.pieces(text, nil)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = t.tokens[id]
	}
	return out
}

// Encode returns the ids of [CLS] + WordPiece tokens of text + [SEP], the tokens truncated
// so that the whole sequence has at most MaxLen ids. No padding is added.
func (t *Tokenizer) Encode(text string) []int32 {
	ids := make([]int32, 1, t.maxLen)
	ids[0] = t.cls
	ids = t.pieces(text, ids)
	if len(ids) > t.maxLen-1 {
		ids = ids[:t.maxLen-1]
	}
	return append(ids, t.sep)
}

// pieces appends the WordPiece ids of text to out.
func (t *Tokenizer) pieces(text string, out []int32) []int32 {
	for _, word := range basicTokenize(text, t.basic) {
		out = t.wordPiece(word, out)
	}
	return out
}

// wordPiece appends the pieces of one word: at each position the longest vocabulary entry
// (with the "##" prefix after the first piece) is taken; if some position matches nothing,
// or the word is longer than maxChars runes, the whole word becomes [UNK].
func (t *Tokenizer) wordPiece(word string, out []int32) []int32 {
	runes := []rune(word)
	if len(runes) > t.maxChars {
		return append(out, t.unk)
	}
	mark := len(out)
	for start := 0; start < len(runes); {
		end := len(runes)
		found := int32(-1)
		for ; end > start; end-- {
			piece := string(runes[start:end])
			if start > 0 {
				piece = t.prefix + piece
			}
			if id, ok := t.ids[piece]; ok {
				found = id
				break
			}
		}
		if found < 0 {
			return append(out[:mark], t.unk)
		}
		out = append(out, found)
		start = end
	}
	return out
}
