package bert

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

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

// maxWordChars is WordPiece's default max_input_chars_per_word.
const maxWordChars = tokenizers.DefaultMaxInputChars

// Tokenizer is a tokenizers.Tokenizer (the pipeline that turns texts into ids: WordPiece,
// byte-level BPE or Unigram, see the tokenizers package) with what a model of this package
// needs around it: a length every sequence is truncated to, the token batches are padded
// with, and the buckets they are padded to (see WithBuckets). Encode wraps the ids in the
// post-processor's special tokens ([CLS] ... [SEP], or <s> ... </s>) and truncates them to
// MaxLen; EncodePair does the same for a pair of texts; Collate also pads, and builds the
// attention mask and token type ids.
//
// A Tokenizer is immutable after construction and safe for concurrent use.
type Tokenizer struct {
	// uni is the pipeline (of every kind, not only Unigram), truncating at maxLen.
	uni       *tokenizers.Tokenizer
	tokens    []string         // id -> token
	ids       map[string]int32 // token -> id
	modelSize int              // the model's vocabulary: tokens[:modelSize]
	maxLen    int
	buckets   []int // padding lengths, ascending, the last one == maxLen
	special   specialTokens
	added     *tokenizers.AddedVocab // the pipeline's added tokens (written back by SavePretrained)
	vocabFrom string
	// What SavePretrained writes back: seg describes a WordPiece or BPE pipeline (nil for
	// Unigram, whose uniFamily says whose), json and spm are the files it was read from.
	seg       segmenter
	json, spm []byte
	uniFamily *unigramFamily
}

// segmenter describes the pipeline of a WordPiece (*wordPiece) or byte-level BPE
// (*byteLevelBPE) tokenizer for SavePretrained.
type segmenter interface{ kind() string }

// basicOptions are the switches of BERT's normalizer (none: no normalizer at all).
type basicOptions struct {
	lowercase, stripAccents, chineseChars, noClean, none bool
}

// wordPiece describes a WordPiece pipeline.
type wordPiece struct {
	basic    basicOptions
	prefix   string
	maxChars int
	unk      int32
}

func (*wordPiece) kind() string { return "WordPiece" }

// byteLevelBPE describes a byte-level BPE pipeline.
type byteLevelBPE struct {
	addPrefixSpace bool
	unk            int32 // -1: none
}

func (*byteLevelBPE) kind() string { return "BPE" }

// specialTokens are the post-processor's tokens, the padding token and the shape of a pair.
type specialTokens struct {
	cls, sep, pad int32
	pairSeps      int   // separators between the texts of a pair: 1 (BERT), 2 (RoBERTa), 0 another layout
	pairTypeID    int32 // type id of the second text: 1 (BERT), 0 (RoBERTa)
	pairSpecials  int   // the special tokens of a pair
}

// checkMaxLen refuses a maxLen that cannot hold the special tokens of a pair of texts.
func (sp *specialTokens) checkMaxLen(maxLen int) error {
	if n := sp.pairSpecials; maxLen < n {
		return fmt.Errorf("bert: max_len must be at least %d (a pair of texts holds %d special tokens), got %d", n, n, maxLen)
	}
	return nil
}

// NewTokenizer reads an uncased BERT vocabulary file (vocab.txt: one token per line, the
// line number being the id) and returns a tokenizer producing sequences of at most maxLen
// tokens, [CLS] and [SEP] included. [CLS], [SEP], [PAD], [UNK] and [MASK] are its special
// tokens: written in a text, they are those tokens.
func NewTokenizer(vocabPath string, maxLen int) (*Tokenizer, error) {
	tokens, err := tokenizers.ReadVocabTxt(vocabPath)
	if err != nil {
		return nil, err
	}
	return fromVocab(tokens, maxLen, vocabPath)
}

// NewTokenizerFromVocab returns an uncased tokenizer over the given vocabulary (token i has
// id i), for instance one made by BuildVocab.
func NewTokenizerFromVocab(tokens []string, maxLen int) (*Tokenizer, error) {
	return fromVocab(tokens, maxLen, "vocabulary")
}

func fromVocab(tokens []string, maxLen int, source string) (*Tokenizer, error) {
	if maxLen < 3 {
		return nil, fmt.Errorf("bert: max_len must be at least 3 (a pair of texts holds [CLS], [SEP] and [SEP]), got %d", maxLen)
	}
	tok, err := tokenizers.NewBertWordPiece(tokens, source)
	if err != nil {
		return nil, err
	}
	return wrap(tok, maxLen, nil)
}

// LoadTokenizer builds the tokenizer of a Hugging Face model folder with
// tokenizers.FromFolder (vocab.txt, tokenizer.json or spm.model, with the special and added
// tokens of tokenizer_config.json, special_tokens_map.json and added_tokens.json), truncating
// at maxLen and padding with the folder's pad_token (else <pad> or [PAD]).
func LoadTokenizer(dir string, maxLen int) (*Tokenizer, error) {
	tok, err := tokenizers.FromFolder(dir)
	if err != nil {
		return nil, err
	}
	// The file FromFolder read (the first of these there), which SavePretrained writes back.
	var contents []byte
	spm := false
	for _, name := range []string{"vocab.txt", "tokenizer.json", "spm.model"} {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		if name != "vocab.txt" {
			if contents, err = os.ReadFile(path); err != nil {
				return nil, fmt.Errorf("bert: %w", err)
			}
		}
		spm = name == "spm.model"
		break
	}
	if tok.Kind() == "BPE" && contents == nil {
		return nil, fmt.Errorf("bert: model folder %s has vocab.json and merges.txt but no tokenizer.json, which SavePretrained "+
			"writes back: read it with tokenizers.FromFolder", dir)
	}
	t, err := wrap(tok, maxLen, contents)
	if err == nil && spm {
		t.json, t.spm = nil, contents
	}
	return t, err
}

// wrap makes a Tokenizer of a pipeline; contents is the tokenizer.json or spm.model it was
// read from (nil: a vocab.txt or a vocabulary), which SavePretrained writes back.
func wrap(tok *tokenizers.Tokenizer, maxLen int, contents []byte) (*Tokenizer, error) {
	t := &Tokenizer{tokens: make([]string, tok.VocabSize()), ids: make(map[string]int32, tok.VocabSize()),
		modelSize: len(tok.Model().Vocab()), vocabFrom: tok.Source(), added: tokenizers.NewAddedVocab(tok.AddedTokens(), nil)}
	for i := range t.tokens {
		t.tokens[i] = tok.Token(int32(i))
		t.ids[t.tokens[i]], _ = tok.ID(t.tokens[i])
	}
	padNames := []string{"<pad>", PadToken}
	switch m := tok.Model().(type) {
	case *tokenizers.WordPiece:
		wp := &wordPiece{basic: basicOptions{none: true}, prefix: m.Prefix(), maxChars: m.MaxChars(), unk: m.UnkID()}
		if n, ok := tok.Normalizer().(tokenizers.BertNormalizer); ok {
			wp.basic = basicOptions{lowercase: n.Lowercase, stripAccents: n.StripAccents, chineseChars: n.HandleChineseChars, noClean: !n.CleanText}
		}
		t.seg, t.json = wp, contents
		padNames = []string{PadToken}
	case *tokenizers.BPE:
		bl := &byteLevelBPE{unk: -1}
		if unk, ok := m.UnkID(); ok {
			bl.unk = unk
		}
		if p, ok := tok.PreTokenizer().(tokenizers.ByteLevel); ok {
			bl.addPrefixSpace = p.AddPrefixSpace
		}
		t.seg, t.json = bl, contents
	case *tokenizers.Unigram:
		fam := xlmrUnigram
		if _, ok := tok.ID(xlmrUnigram.cls); !ok {
			if _, ok := tok.ID(debertaUnigram.cls); ok {
				fam = debertaUnigram
			}
		}
		// The folder's files may rename them (DeBERTa's tokenizer_config.json).
		for _, s := range []struct {
			role string
			into *string
		}{{"cls_token", &fam.cls}, {"sep_token", &fam.sep}, {"pad_token", &fam.pad}, {"unk_token", &fam.unk}, {"mask_token", &fam.mask}} {
			if name, ok := tok.SpecialToken(s.role); ok {
				*s.into = name
			}
		}
		t.json = contents
		t.uniFamily = &fam
		padNames = []string{fam.pad}
		for _, s := range []string{fam.cls, fam.sep, fam.pad} {
			if _, ok := t.ids[s]; !ok {
				return nil, fmt.Errorf("bert: %s: the vocabulary has no %s token", t.vocabFrom, s)
			}
		}
		t.special = specialTokens{cls: t.ids[fam.cls], sep: t.ids[fam.sep], pairSeps: fam.pairSeps, pairTypeID: fam.pairTypeID,
			pairSpecials: 2 + fam.pairSeps}
	}
	if t.seg != nil {
		sp, err := postSpecials(tok)
		if err != nil {
			return nil, err
		}
		t.special = *sp
	}
	if name, ok := tok.SpecialToken("pad_token"); ok {
		padNames = append([]string{name}, padNames...)
	}
	pad := slices.IndexFunc(padNames, func(s string) bool { _, ok := t.ids[s]; return ok })
	if pad < 0 {
		return nil, fmt.Errorf("bert: %s: the vocabulary has no padding token (%s)", t.vocabFrom, padNames[len(padNames)-1])
	}
	t.special.pad = t.ids[padNames[pad]]
	if err := t.special.checkMaxLen(maxLen); err != nil {
		return nil, err
	}
	var err error
	if t.uni, err = tok.WithMaxLen(maxLen); err != nil {
		return nil, fmt.Errorf("bert: %s: %w", t.vocabFrom, err)
	}
	t.maxLen, t.buckets = maxLen, []int{maxLen}
	return t, nil
}

// postSpecials reads the special tokens of a WordPiece or BPE pipeline's post-processor:
// the first and last special tokens of one text's template, and the shape of a pair
// (BERT's [CLS] A [SEP] B [SEP] with type id t on B, RoBERTa's <s> A </s></s> B </s>).
func postSpecials(tok *tokenizers.Tokenizer) (*specialTokens, error) {
	tp, ok := tok.PostProcessor().(*tokenizers.TemplateProcessing)
	if !ok || len(tp.Single) < 2 || tp.Single[0].Special == nil || tp.Single[len(tp.Single)-1].Special == nil {
		return nil, fmt.Errorf("bert: %s: the post_processor adds no special tokens around a text: a %s tokenizer needs a "+
			"post_processor (BertProcessing, RobertaProcessing or a TemplateProcessing) that does", tok.Source(), tok.Kind())
	}
	last := tp.Single[len(tp.Single)-1].Special
	sp := &specialTokens{cls: tp.Single[0].Special[0], sep: last[len(last)-1], pairSpecials: tp.Added(true)}
	a := slices.IndexFunc(tp.Pair, func(p tokenizers.TemplatePiece) bool { return p.Special == nil && p.Seq == "A" })
	b := slices.IndexFunc(tp.Pair, func(p tokenizers.TemplatePiece) bool { return p.Special == nil && p.Seq == "B" })
	if a >= 0 && b > a && b == len(tp.Pair)-2 && len(tp.Pair[b+1].Special) == 1 {
		seps := 0
		for _, p := range tp.Pair[a+1 : b] {
			if len(p.Special) != 1 || p.Special[0] != sp.sep {
				seps = -1
				break
			}
			seps++
		}
		sp.pairSeps, sp.pairTypeID = max(seps, 0), tp.Pair[b].TypeID
	}
	return sp, nil
}

// MaxLen is the length of the sequences the tokenizer produces, [CLS] and [SEP] included.
func (t *Tokenizer) MaxLen() int { return t.maxLen }

// Pipeline is the tokenizers pipeline the tokenizer runs, truncating at MaxLen.
func (t *Tokenizer) Pipeline() *tokenizers.Tokenizer { return t.uni }

// VocabSize is the number of tokens of the vocabulary, the added tokens beyond the model's
// vocabulary included (transformers' len(tokenizer)).
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// CheckVocabSize checks the tokenizer against a model whose word embeddings have vocabSize
// rows (config.json's vocab_size; config names that file in the error): every id the
// tokenizer makes is one of its VocabSize tokens, so it fits when it has at most vocabSize
// tokens. More rows than tokens is fine (embeddings padded to a multiple); fewer is an error
// naming the first token past the rows, whose id a gather would clamp to the last row.
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

// Kind is the model: "WordPiece", "BPE" (byte-level) or "Unigram".
func (t *Tokenizer) Kind() string { return t.uni.Kind() }

// ID returns the id of a token and whether it is in the vocabulary.
func (t *Tokenizer) ID(token string) (int32, bool) {
	id, ok := t.ids[token]
	return id, ok
}

// Token returns the token of an id ("" when out of range).
func (t *Tokenizer) Token(id int32) string { return t.uni.Token(id) }

// PadID is the id of the padding token ([PAD] or <pad>), the value of padding positions in
// input ids.
func (t *Tokenizer) PadID() int32 { return t.special.pad }

// Tokenize returns the tokens of text, without special tokens and without truncation:
// "Unaffable!" -> ["una", "##ff", "##able", "!"] with bert-base-uncased.
func (t *Tokenizer) Tokenize(text string) []string { return t.uni.Tokenize(text) }

// Encode returns the ids of the post-processor's special tokens around the tokens of text,
// truncated so that the whole has at most MaxLen ids (tokenizers.Tokenizer.Encode).
func (t *Tokenizer) Encode(text string) []int32 { return t.uni.Encode(text).IDs }

// EncodePair returns the ids and token type ids of a pair of texts, as transformers'
// tokenizer(a, b, truncation=True, max_length=MaxLen) does (tokenizers.Tokenizer.EncodePair:
// longest first). An empty b is no pair: the result is Encode(a), with type ids 0.
func (t *Tokenizer) EncodePair(a, b string) (ids, typeIDs []int32) {
	e := t.uni.EncodePair(a, b)
	return e.IDs, e.TypeIDs
}

// EncodeOffsets is Encode with the offset of each token in text, in bytes
// (tokenizers.Tokenizer.EncodeOffsets).
func (t *Tokenizer) EncodeOffsets(text string) ([]int32, []tokenizers.Offset, error) {
	e, offs, err := t.uni.EncodeOffsets(text)
	return e.IDs, offs, err
}

// EncodeWords tokenizes a sentence given as its words, as transformers does with
// is_split_into_words=True (tokenizers.Tokenizer.EncodeWords); wordIDs[i] is the index of the
// word token i comes from, -1 for the special tokens.
func (t *Tokenizer) EncodeWords(words []string) (ids, wordIDs []int32) {
	e := t.uni.EncodeWords(words)
	return e.IDs, e.WordIDs
}

// TokensToString is the text of a list of tokens (tokenizers.Tokenizer.TokensToString).
func (t *Tokenizer) TokensToString(tokens []string) string { return t.uni.TokensToString(tokens) }

// Decode is the text of ids, as transformers' tokenizer.decode(ids, skip_special_tokens)
// makes it (tokenizers.Tokenizer.Decode).
func (t *Tokenizer) Decode(ids []int32, skipSpecialTokens bool) (string, error) {
	return t.uni.Decode(ids, skipSpecialTokens)
}

// UnkID is the id of the unknown token ([UNK], <unk>), and false when the tokenizer has none
// (a byte-level BPE without unk_token).
func (t *Tokenizer) UnkID() (int32, bool) { return t.uni.UnkID() }

// SubwordPrefix is the model's continuing_subword_prefix: "##" for WordPiece, a BPE's own
// (none for RoBERTa's), none for Unigram.
func (t *Tokenizer) SubwordPrefix() string { return t.uni.SubwordPrefix() }
