package tokenizers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// WordPiece is BERT's model: a word is cut greedily, longest match first, into pieces of the
// vocabulary, every piece after the first carrying Prefix ("##"); a word that cannot be
// covered, or that is longer than MaxChars characters, becomes the unknown token.
// Example with bert-base-uncased: "unaffable" -> "una", "##ff", "##able".
type WordPiece struct {
	vocab    []string
	ids      map[string]int32
	unk      int32
	prefix   string
	maxChars int
}

// DefaultMaxInputChars is WordPiece's default max_input_chars_per_word.
const DefaultMaxInputChars = 100

// NewWordPiece makes a WordPiece model over vocab (token i has id i; a repeated token keeps
// its last id, as transformers' load_vocab), unk being the unknown token, prefix the
// continuing_subword_prefix and maxChars max_input_chars_per_word (0: 100).
func NewWordPiece(vocab []string, unk, prefix string, maxChars int) (*WordPiece, error) {
	if len(vocab) == 0 {
		return nil, fmt.Errorf("wordpiece: empty vocabulary")
	}
	if maxChars <= 0 {
		maxChars = DefaultMaxInputChars
	}
	w := &WordPiece{vocab: vocab, ids: make(map[string]int32, len(vocab)), prefix: prefix, maxChars: maxChars}
	for i, tok := range vocab {
		w.ids[tok] = int32(i)
	}
	id, ok := w.ids[unk]
	if !ok {
		return nil, fmt.Errorf("wordpiece: the unknown token %q (unk_token) is not in the vocabulary", unk)
	}
	w.unk = id
	return w, nil
}

// Vocab returns the vocabulary (token i has id i).
func (w *WordPiece) Vocab() []string { return w.vocab }

// Prefix is the continuing_subword_prefix ("##").
func (w *WordPiece) Prefix() string { return w.prefix }

// MaxChars is max_input_chars_per_word.
func (w *WordPiece) MaxChars() int { return w.maxChars }

// UnkID is the id of the unknown token.
func (w *WordPiece) UnkID() int32 { return w.unk }

// AppendIDs appends the pieces of word.
func (w *WordPiece) AppendIDs(word string, out []int32) []int32 {
	for _, s := range w.appendSpans(word, nil) {
		out = append(out, s.id)
	}
	return out
}

// appendSpans appends the pieces of word with the bytes of word each covers (the unknown
// token covers the whole word).
func (w *WordPiece) appendSpans(word string, out []span) []span {
	at := make([]int, 0, len(word)+1) // the byte offset of each character, then len(word)
	for i := range word {
		at = append(at, i)
	}
	n := len(at)
	at = append(at, len(word))
	if n > w.maxChars {
		return append(out, span{0, len(word), w.unk})
	}
	mark := len(out)
	for start := 0; start < n; {
		end, found := n, int32(-1)
		for ; end > start; end-- {
			piece := word[at[start]:at[end]]
			if start > 0 {
				piece = w.prefix + piece
			}
			if id, ok := w.ids[piece]; ok {
				found = id
				break
			}
		}
		if found < 0 {
			return append(out[:mark], span{0, len(word), w.unk})
		}
		out = append(out, span{at[start], at[end], found})
		start = end
	}
	return out
}

// wordPieceJSON is tokenizer.json's WordPiece model.
type wordPieceJSON struct {
	Vocab                   map[string]int32 `json:"vocab"`
	UnkToken                string           `json:"unk_token"`
	ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
	MaxInputCharsPerWord    int              `json:"max_input_chars_per_word"`
}

// parseWordPiece reads tokenizer.json's WordPiece model, whose vocabulary must have the ids
// 0..n-1.
func parseWordPiece(raw json.RawMessage, source string) (*WordPiece, error) {
	var m wordPieceJSON
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("tokenizers: %s: parsing the WordPiece model: %w", source, err)
	}
	vocab, err := denseVocab(m.Vocab, source)
	if err != nil {
		return nil, err
	}
	prefix := "##"
	if m.ContinuingSubwordPrefix != nil {
		prefix = *m.ContinuingSubwordPrefix
	}
	w, err := NewWordPiece(vocab, m.UnkToken, prefix, m.MaxInputCharsPerWord)
	if err != nil {
		return nil, fmt.Errorf("tokenizers: %s: %w", source, err)
	}
	return w, nil
}

// denseVocab is the id -> token table of a vocabulary given as token -> id, whose ids must
// be 0..n-1, each once. Errors name the token, the id and source.
func denseVocab(vocab map[string]int32, source string) ([]string, error) {
	tokens := make([]string, len(vocab))
	filled := make([]bool, len(vocab))
	for tok, id := range vocab {
		switch {
		case id < 0 || int(id) >= len(vocab):
			return nil, fmt.Errorf("tokenizers: %s: token %q has id %d, outside 0..%d (the %d tokens of the model's vocabulary)",
				source, tok, id, len(vocab)-1, len(vocab))
		case filled[id]:
			first, second := tokens[id], tok
			if second < first {
				first, second = second, first
			}
			return nil, fmt.Errorf("tokenizers: %s: tokens %q and %q have the same id %d", source, first, second, id)
		}
		tokens[id], filled[id] = tok, true
	}
	return tokens, nil
}

// ReadVocabTxt reads a vocab.txt: one token per line, the line number (from 0) its id.
func ReadVocabTxt(path string) ([]string, error) {
	contents, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizers: reading vocabulary: %w", err)
	}
	var tokens []string
	sc := bufio.NewScanner(bytes.NewReader(contents))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		tokens = append(tokens, strings.TrimSuffix(sc.Text(), "\r"))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tokenizers: reading vocabulary %s:%d: %w", path, len(tokens)+1, err)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("tokenizers: vocabulary %s is empty", path)
	}
	return tokens, nil
}
