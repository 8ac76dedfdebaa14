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
	"unicode"
	"unicode/utf8"

	"github.com/goaccel/goaccel/tokenizers"
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
	tokens    []string         // id -> token: the model's vocabulary, then the added tokens beyond it
	ids       map[string]int32 // token -> id
	modelSize int              // the model's vocabulary: tokens[:modelSize] (vocab.txt)
	maxLen    int
	seg       segmenter
	cut       bool                   // long texts may be encoded chunk by chunk (canCut)
	rstrip    []string               // the rstrip tokens' contents, raw and normalized (canCut)
	added     *tokenizers.AddedVocab // matched in the text before the segmenter (see added.go)
	special   specialTokens
	buckets   []int // optional padding lengths, ascending, the last one == maxLen
	vocabFrom string
	json      []byte // a BPE or Unigram tokenizer.json as read, written back by SavePretrained
	spm       []byte // a DeBERTa spm.model as read (no tokenizer.json), written back by SavePretrained
	// uni is a Unigram pipeline (XLM-RoBERTa's or DeBERTa's tokenizer.json, or DeBERTa's
	// spm.model), which then encodes the texts, truncating at maxLen; seg is nil. uniFamily
	// says whose.
	uni       *tokenizers.Tokenizer
	uniFamily *unigramFamily
}

// segmenter makes the ids of a text, without special tokens and without truncation, in two
// steps: normalize, applied to each piece of the text between the added tokens, and
// appendPlain, which pre-tokenizes a normalized piece and appends the model's ids.
type segmenter interface {
	normalize(text string) string
	appendPlain(normalized string, out []int32) []int32
}

// specialTokens are the post-processor's tokens and the shape of a pair.
type specialTokens struct {
	cls, sep, pad int32
	pairSeps      int   // separators between the texts of a pair: 1 (BERT), 2 (RoBERTa)
	pairTypeID    int32 // type id of the second text: 1 (BERT), 0 (RoBERTa)
}

// checkMaxLen refuses a maxLen that cannot hold the special tokens of a pair of texts.
func (sp *specialTokens) checkMaxLen(maxLen int) error {
	if n := 2 + sp.pairSeps; maxLen < n {
		return fmt.Errorf("bert: max_len must be at least %d (a pair of texts holds %d special tokens), got %d", n, n, maxLen)
	}
	return nil
}

// wordPiece is BERT's segmenter: basic tokenization, then WordPiece.
type wordPiece struct {
	ids      map[string]int32 // the model's vocabulary (no added token beyond it)
	basic    basicOptions
	prefix   string // continuation prefix, "##"
	maxChars int
	unk      int32
}

// NewTokenizer reads an uncased BERT vocabulary file (vocab.txt: one token per line, the
// line number being the id) and returns a tokenizer producing sequences of at most maxLen
// tokens, [CLS] and [SEP] included.
//
// [CLS], [SEP], [PAD], [UNK] and [MASK] are its special tokens: written in a text, they are
// those tokens (see LoadTokenizer).
func NewTokenizer(vocabPath string, maxLen int) (*Tokenizer, error) {
	tokens, err := readVocabFile(vocabPath)
	if err != nil {
		return nil, err
	}
	return newTokenizer(tokens, maxLen, basicOptions{lowercase: true, stripAccents: true, chineseChars: true}, defaultSpecials(), vocabPath)
}

// NewTokenizerFromVocab returns an uncased tokenizer over the given vocabulary (token i has
// id i), for instance one made by BuildVocab.
func NewTokenizerFromVocab(tokens []string, maxLen int) (*Tokenizer, error) {
	return newTokenizer(slices.Clone(tokens), maxLen, basicOptions{lowercase: true, stripAccents: true, chineseChars: true}, defaultSpecials(), "vocabulary")
}

// LoadTokenizer builds the tokenizer of a Hugging Face model folder: from vocab.txt (with
// do_lower_case, strip_accents and tokenize_chinese_chars from tokenizer_config.json when
// present), or else from a WordPiece, byte-level BPE or Unigram tokenizer.json, or else from
// a DeBERTa-v2/v3 spm.model (see readSentencePiece), which is all a DeBERTa-v3 folder on the
// Hub has.
//
// The added tokens are matched in the text before it is normalized, as transformers' fast
// tokenizers do (see added.go): the special tokens and the words a user added, from
// tokenizer.json's added_tokens, or, with vocab.txt, from what transformers' BertTokenizer
// reads: the special tokens named in tokenizer_config.json or special_tokens_map.json (else
// [CLS], [SEP], [PAD], [UNK], [MASK]), their extra_special_tokens (or
// additional_special_tokens), tokenizer_config.json's added_tokens_decoder (whose flags win)
// and added_tokens.json.
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
		sp, err := readFolderSpecials(dir)
		if err != nil {
			return nil, err
		}
		return newTokenizer(tokens, maxLen, opts, sp, vocabPath)
	}
	jsonPath := filepath.Join(dir, "tokenizer.json")
	if _, err := os.Stat(jsonPath); err == nil {
		return readTokenizerJSON(jsonPath, maxLen)
	}
	spmPath := filepath.Join(dir, "spm.model")
	if _, err := os.Stat(spmPath); err == nil {
		return readSentencePiece(dir, spmPath, maxLen)
	}
	return nil, fmt.Errorf("bert: model folder %s has neither vocab.txt nor tokenizer.json nor spm.model", dir)
}

// newTokenizer checks a WordPiece vocabulary (token i has id i) and maxLen, gives ids to the
// added tokens of sp, and indexes the tokens.
func newTokenizer(tokens []string, maxLen int, opts basicOptions, sp *folderSpecials, source string) (*Tokenizer, error) {
	if maxLen < 3 {
		return nil, fmt.Errorf("bert: max_len must be at least 3 (a pair of texts holds [CLS], [SEP] and [SEP]), got %d", maxLen)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("bert: %s: empty vocabulary", source)
	}
	ids := make(map[string]int32, len(tokens))
	for i, tok := range tokens {
		ids[tok] = int32(i) // a duplicated token keeps its last id, as in HF's load_vocab
	}
	for _, name := range []struct{ key, token string }{{"pad_token", sp.pad}, {"unk_token", sp.unk}, {"cls_token", sp.cls}, {"sep_token", sp.sep}} {
		if _, ok := ids[name.token]; !ok && !sp.explicit[name.token] {
			return nil, fmt.Errorf("bert: %s: vocabulary has no %s token (%s)", source, name.token, name.key)
		}
	}
	added := sp.withIDs(ids, len(tokens))
	table, err := idTable(ids, tokens, added, source)
	if err != nil {
		return nil, err
	}
	all := tokenIDs(table, ids)
	wp := &wordPiece{ids: ids, basic: opts, prefix: "##", maxChars: maxWordChars, unk: all[sp.unk]}
	t := &Tokenizer{tokens: table, ids: all, modelSize: len(tokens), maxLen: maxLen, seg: wp, buckets: []int{maxLen},
		vocabFrom: source, special: specialTokens{cls: all[sp.cls], sep: all[sp.sep], pad: all[sp.pad], pairSeps: 1, pairTypeID: 1}}
	t.added = tokenizers.NewAddedVocab(added, wp.normalize)
	t.cut = t.canCut()
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
	case "Unigram":
		return readUnigramJSON(contents, path, maxLen)
	}
	return nil, fmt.Errorf("bert: %s: model type %q is not supported: WordPiece, BPE (byte-level) and Unigram are", path, kind.Model.Type)
}

// readBPEJSON reads a byte-level BPE tokenizer.json (RoBERTa's).
func readBPEJSON(contents []byte, path string, maxLen int) (*Tokenizer, error) {
	var doc bpeJSON
	if err := json.Unmarshal(contents, &doc); err != nil {
		return nil, fmt.Errorf("bert: parsing %s: %w", path, err)
	}
	seg, err := newByteLevelBPE(&doc)
	if err != nil {
		return nil, fmt.Errorf("bert: %s: %w", path, err)
	}
	added := make([]addedToken, len(doc.AddedTokens))
	for i := range doc.AddedTokens {
		a := &doc.AddedTokens[i]
		if a.Content == "" || a.ID == nil {
			return nil, fmt.Errorf("bert: %s: added token %d (%q) has no content or no id", path, i, a.Content)
		}
		added[i] = a.Token(*a.ID)
	}
	tokens, err := idTable(seg.ids, nil, added, path)
	if err != nil {
		return nil, err
	}
	all := tokenIDs(tokens, seg.ids)
	special, err := bpeSpecials(&doc, all)
	if err != nil {
		return nil, fmt.Errorf("bert: %s: %w", path, err)
	}
	if err := special.checkMaxLen(maxLen); err != nil {
		return nil, err
	}
	t := &Tokenizer{tokens: tokens, ids: all, modelSize: len(tokens), maxLen: maxLen, seg: seg, special: *special,
		added: tokenizers.NewAddedVocab(added, seg.normalize), buckets: []int{maxLen}, vocabFrom: path, json: contents}
	t.cut = t.canCut()
	return t, nil
}

// readWordPieceJSON reads a HF tokenizers file whose model is WordPiece and whose normalizer
// is BertNormalizer.
func readWordPieceJSON(contents []byte, path string, maxLen int) (*Tokenizer, error) {
	var doc struct {
		AddedTokens []addedJSON `json:"added_tokens"`
		Normalizer  *struct {
			Type               string `json:"type"`
			CleanText          *bool  `json:"clean_text"`
			Lowercase          *bool  `json:"lowercase"`
			StripAccents       *bool  `json:"strip_accents"`
			HandleChineseChars *bool  `json:"handle_chinese_chars"`
		} `json:"normalizer"`
		PreTokenizer *struct {
			Type string `json:"type"`
		} `json:"pre_tokenizer"`
		PostProcessor *bpePostProcessor `json:"post_processor"`
		Model         struct {
			Vocab                   map[string]int32 `json:"vocab"`
			UnkToken                string           `json:"unk_token"`
			ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
			MaxInputCharsPerWord    int              `json:"max_input_chars_per_word"`
		} `json:"model"`
	}
	if err := json.Unmarshal(contents, &doc); err != nil {
		return nil, fmt.Errorf("bert: parsing %s: %w", path, err)
	}
	// The file's pipeline runs: "normalizer": null is none (a cased model keeps its case), a
	// BertNormalizer has its switches; the pre-tokenizer must be BertPreTokenizer, and the
	// post-processor's special tokens are the file's.
	opts := basicOptions{none: true}
	if n := doc.Normalizer; n != nil {
		if n.Type != "BertNormalizer" {
			return nil, fmt.Errorf("bert: %s: normalizer %q is not supported with WordPiece: only BertNormalizer (or none) is", path, n.Type)
		}
		opts = basicOptions{lowercase: true, chineseChars: true}
		if n.CleanText != nil {
			opts.noClean = !*n.CleanText
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
	// The model's vocabulary must be 0..n-1; the added tokens may go beyond it.
	tokens, err := idTable(doc.Model.Vocab, nil, nil, path)
	if err != nil {
		return nil, err
	}
	// transformers' BertTokenizer adds BERT's special tokens when the file does not have them.
	sp := defaultSpecials()
	for i := range doc.AddedTokens {
		a := &doc.AddedTokens[i]
		if a.Content == "" || a.ID == nil {
			return nil, fmt.Errorf("bert: %s: added token %d (%q) has no content or no id", path, i, a.Content)
		}
		sp.withID = append(sp.withID, a.Token(*a.ID))
		sp.explicit[a.Content] = true
	}
	if pt := doc.PreTokenizer; pt == nil || pt.Type != "BertPreTokenizer" {
		what := "none"
		if pt != nil {
			what = fmt.Sprintf("%q", pt.Type)
		}
		return nil, fmt.Errorf("bert: %s: pre_tokenizer %s is not supported with WordPiece: only BertPreTokenizer is", path, what)
	}
	t, err := newTokenizer(tokens, maxLen, opts, sp, path)
	if err != nil {
		return nil, err
	}
	special, err := postSpecials(doc.PostProcessor, t.ids, "WordPiece")
	if err != nil {
		return nil, fmt.Errorf("bert: %s: %w", path, err)
	}
	special.pad = t.special.pad
	if err := special.checkMaxLen(maxLen); err != nil {
		return nil, err
	}
	t.special, t.json = *special, contents
	wp := t.seg.(*wordPiece)
	if doc.Model.ContinuingSubwordPrefix != nil {
		wp.prefix = *doc.Model.ContinuingSubwordPrefix
	}
	if doc.Model.MaxInputCharsPerWord > 0 {
		wp.maxChars = doc.Model.MaxInputCharsPerWord
	}
	if u := doc.Model.UnkToken; u != "" {
		id, ok := wp.ids[u]
		if !ok {
			return nil, fmt.Errorf("bert: %s: unk_token %q is not in the vocabulary", path, u)
		}
		wp.unk = id
	}
	return t, nil
}

// tokenIDs is the token -> id map of a table whose model vocabulary is vocab: a token of the
// vocabulary keeps its id there.
func tokenIDs(table []string, vocab map[string]int32) map[string]int32 {
	all := make(map[string]int32, len(table))
	for i, tok := range table {
		if id, ok := vocab[tok]; !ok || id == int32(i) {
			all[tok] = int32(i)
		}
	}
	return all
}

// MaxLen is the length of the sequences the tokenizer produces, [CLS] and [SEP] included.
func (t *Tokenizer) MaxLen() int { return t.maxLen }

// VocabSize is the number of tokens of the vocabulary, the added tokens beyond the model's
// vocabulary included (transformers' len(tokenizer)).
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// CheckVocabSize checks the tokenizer against a model whose word embeddings have vocabSize
// rows (config.json's vocab_size; config names that file in the error): every id the
// tokenizer makes is one of its VocabSize tokens (the special tokens, the unknown token and
// the added ones included: that is checked when it is read), so it fits when it has at most
// vocabSize tokens. More rows than tokens is fine (embeddings padded to a multiple, as
// transformers' pad_to_multiple_of makes them); fewer is an error naming the first token
// past the rows, whose id a gather would clamp to the last row.
func (t *Tokenizer) CheckVocabSize(vocabSize int, config string) error {
	if len(t.tokens) <= vocabSize {
		return nil
	}
	first := max(vocabSize, 0)
	return fmt.Errorf("bert: tokenizer %s has %d tokens but %s's vocab_size is %d: the word embeddings have %d rows, "+
		"and token %q (id %d) and the %d after it would reach past them", t.vocabFrom, len(t.tokens), config, vocabSize, vocabSize,
		t.tokens[first], first, len(t.tokens)-first-1)
}

// Vocab returns a copy of the vocabulary (token i has id i).
func (t *Tokenizer) Vocab() []string { return slices.Clone(t.tokens) }

// Lowercase reports whether the tokenizer lowercases its input (an uncased WordPiece model).
func (t *Tokenizer) Lowercase() bool {
	wp, ok := t.seg.(*wordPiece)
	return ok && wp.basic.lowercase
}

// Kind is the segmenter: "WordPiece", "BPE" (byte-level) or "Unigram".
func (t *Tokenizer) Kind() string {
	if t.uni != nil {
		return t.uni.Kind()
	}
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
	ids := t.appendIDs(text, nil)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = t.tokens[id]
	}
	return out
}

// Encode returns the ids of [CLS] + the tokens of text + [SEP] (<s> ... </s> for RoBERTa),
// the tokens truncated so that the whole sequence has at most MaxLen ids. No padding is
// added.
//
// A WordPiece or BPE tokenizer reads a long text only as far as those MaxLen ids need: in
// chunks of about 8 KiB, each cut before a space where that gives the same ids as the whole
// text (see Tokenizer.nextCut), so that a 4 MB text costs what its first chunk does. A text
// with no such space, or a tokenizer with an added token holding whitespace, is encoded
// whole. A Unigram tokenizer encodes the whole text.
func (t *Tokenizer) Encode(text string) []int32 {
	if t.uni != nil {
		return t.uni.Encode(text).IDs
	}
	ids := make([]int32, 1, t.maxLen)
	ids[0] = t.special.cls
	ids, _ = t.appendCapped(text, ids, t.maxLen-2, false)
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
// Encode(a), with type ids 0. Longest first needs the number of tokens of both texts, so
// both are read whole, but in chunks as Encode reads them, holding at most MaxLen ids of
// each: the memory is bounded, the time is that of the whole texts.
func (t *Tokenizer) EncodePair(a, b string) (ids, typeIDs []int32) {
	if b == "" {
		ids = t.Encode(a)
		return ids, make([]int32, len(ids))
	}
	if t.uni != nil {
		e := t.uni.EncodePair(a, b)
		return e.IDs, e.TypeIDs
	}
	sp := t.special
	room := max(t.maxLen-2-sp.pairSeps, 0)
	// Longest first needs the number of tokens of each text; no more than room of them are
	// kept.
	first, n1 := t.appendCapped(a, nil, room, true)
	second, n2 := t.appendCapped(b, nil, room, true)
	if n1+n2 > room {
		k1, k2 := tokenizers.LongestFirst(n1, n2, room)
		first, second = first[:k1], second[:k2]
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

// chunkSize is the length from which appendCapped encodes a text piece by piece.
const chunkSize = 8 << 10

// appendCapped appends to out the first keep ids of text (appendIDs) and returns them with
// the number of ids of the whole text. A text longer than chunkSize is encoded chunk by chunk
// (see Tokenizer.nextCut), so that only keep ids are held: without count it stops at the chunk that
// completes them (the whole count is then not known: total is at least keep), with count it
// goes on counting. A tokenizer whose texts cannot be cut (see canCut), or a text without a
// place to cut it, is encoded whole.
func (t *Tokenizer) appendCapped(text string, out []int32, keep int, count bool) ([]int32, int) {
	base := len(out)
	if !t.cut || len(text) <= chunkSize {
		out = t.appendIDs(text, out)
		total := len(out) - base
		return out[:base+min(total, keep)], total
	}
	total := 0
	for text != "" {
		end := t.nextCut(text)
		n := len(out)
		out = t.appendIDs(text[:end], out)
		total += len(out) - n
		out = out[:base+min(total, keep)]
		if total >= keep && !count {
			break
		}
		text = text[end:]
	}
	return out, total
}

// nextCut is where the first chunk of text ends: at the first space at or after chunkSize
// whose previous character is not whitespace and before which no rstrip token ends, or at
// the end. Cut there, the chunks encode to the ids of the whole: BERT's and BPE's
// normalizers change a character with its combining marks only, a space never composes with
// what precedes it, the pre-tokenizers cut a word before such a space (GPT-2's pattern
// included: the space goes with what follows), no added token can match across it (canCut),
// and none ending there would take the spaces after it.
func (t *Tokenizer) nextCut(text string) int {
	for i := chunkSize; i < len(text); i++ {
		if text[i] != ' ' {
			continue
		}
		r, _ := utf8.DecodeLastRuneInString(text[:i])
		if unicode.Is(unicode.White_Space, r) {
			continue
		}
		word := text[strings.LastIndexFunc(text[:i], unicode.IsSpace)+1 : i]
		if !slices.ContainsFunc(t.rstrip, func(c string) bool {
			return strings.HasSuffix(word, c) || strings.HasSuffix(t.seg.normalize(word), c)
		}) {
			return i
		}
	}
	return len(text)
}

// canCut tells whether the tokenizer's texts may be cut as nextCut does (no added token
// holds whitespace, in its content or normalized), and lists the contents of the rstrip
// tokens, raw and normalized, for nextCut.
func (t *Tokenizer) canCut() bool {
	if t.seg == nil {
		return false
	}
	t.rstrip = nil
	for _, a := range t.added.Tokens() {
		norm := t.seg.normalize(a.Content)
		if strings.ContainsFunc(a.Content+norm, unicode.IsSpace) {
			return false
		}
		if a.RStrip {
			t.rstrip = append(t.rstrip, a.Content, norm)
		}
	}
	return true
}

// appendIDs appends the ids of text to out: the added tokens found in it, and the
// segmenter's ids of the pieces between them.
func (t *Tokenizer) appendIDs(text string, out []int32) []int32 {
	if t.uni != nil {
		return append(out, t.uni.IDs(text)...)
	}
	if t.added == nil {
		return t.seg.appendPlain(t.seg.normalize(text), out)
	}
	return t.added.AppendIDs(text, t.seg.normalize, t.seg.appendPlain, out)
}

// normalize is BERT's normalizer (see basicOptions).
func (w *wordPiece) normalize(text string) string { return normalizeBert(text, w.basic) }

// appendPlain appends the WordPiece ids of the words of a normalized text.
func (w *wordPiece) appendPlain(normalized string, out []int32) []int32 {
	for _, word := range preTokenizeBert(normalized, nil) {
		out = w.word(word, out)
	}
	return out
}

// word appends the pieces of one word: at each position the longest vocabulary entry
// (with the "##" prefix after the first piece) is taken; if some position matches nothing,
// or the word is longer than maxChars runes, the whole word becomes [UNK].
func (w *wordPiece) word(word string, out []int32) []int32 {
	for _, p := range w.pieces(word, nil) {
		out = append(out, p.id)
	}
	return out
}

// pieces appends the pieces of one word as word does, each with the runes of the word it
// covers.
func (w *wordPiece) pieces(word string, out []piece) []piece {
	runes := []rune(word)
	if len(runes) > w.maxChars {
		return append(out, piece{0, len(runes), w.unk})
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
			return append(out[:mark], piece{0, len(runes), w.unk})
		}
		out = append(out, piece{start, end, found})
		start = end
	}
	return out
}
