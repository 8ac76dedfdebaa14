package tokenizers

import (
	"strings"
	"unicode/utf8"
)

// TokensToString is the text of a list of tokens as transformers' convert_tokens_to_string
// makes it: the pipeline's decoder (see Decode), or the one of the model's kind when the
// file names none or one this package lacks: WordPiece joins the tokens with spaces, a
// continuation piece ("##") glued to the one before, and cleans up the spaces before
// punctuation and contractions; byte-level BPE maps the characters back to their bytes and
// reads them as UTF-8; Unigram turns "▁" into spaces, the first token's dropped.
func (t *Tokenizer) TokensToString(tokens []string) string {
	d := t.decoder
	if d == nil || t.decoderErr != nil {
		switch m := t.model.(type) {
		case *WordPiece:
			d = WordPieceDecoder{Prefix: m.prefix, Cleanup: true}
		case *BPE:
			d = ByteLevelDecoder{}
		default:
			d = MetaspaceDecoder{Replacement: "▁", PrependScheme: "always"}
		}
	}
	return strings.Join(d.DecodeChain(tokens), "")
}

// cleanUpReplacer is the WordPiece decoder's clean-up.
var cleanUpReplacer = strings.NewReplacer(" .", ".", " ?", "?", " !", "!", " ,", ",", " ' ", "'", " n't", "n't",
	" 'm", "'m", " do not", " don't", " 's", "'s", " 've", "'ve", " 're", "'re")

// cleanUpTokenization is the WordPiece decoder's clean-up of one token.
func cleanUpTokenization(s string) string { return cleanUpReplacer.Replace(s) }

// UnkID is the id of the model's unknown token, and false when it has none (a byte-level
// BPE without unk_token).
func (t *Tokenizer) UnkID() (int32, bool) {
	switch m := t.model.(type) {
	case *WordPiece:
		return m.unk, true
	case *BPE:
		return m.UnkID()
	case *Unigram:
		return m.unk, true
	}
	return 0, false
}

// SubwordPrefix is the model's continuing_subword_prefix: "##" for WordPiece, a BPE's own
// (none for RoBERTa's), none for Unigram.
func (t *Tokenizer) SubwordPrefix() string {
	switch m := t.model.(type) {
	case *WordPiece:
		return m.prefix
	case *BPE:
		return m.prefix
	}
	return ""
}

// lossyUTF8 reads b as UTF-8, each maximal prefix of a valid sequence that is cut short, and
// each byte that starts none, becoming one U+FFFD (Rust's String::from_utf8_lossy).
func lossyUTF8(b []byte) string {
	var out strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r != utf8.RuneError || n > 1 {
			out.WriteString(string(b[:n]))
			b = b[n:]
			continue
		}
		out.WriteRune(utf8.RuneError)
		b = b[validPrefix(b):]
	}
	return out.String()
}

// validPrefix is the length of the longest prefix of b (at least 1) that could begin a valid
// UTF-8 sequence, b itself not being one.
func validPrefix(b []byte) int {
	need, lo, hi := 0, byte(0x80), byte(0xBF)
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	default:
		return 1
	}
	n := 1
	for i := 1; i <= need && i < len(b); i++ {
		if b[i] < lo || b[i] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
		n++
	}
	return n
}
