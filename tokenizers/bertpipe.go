package tokenizers

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// BERT's normalizer and pre-tokenizer (the first half of transformers' BasicTokenizer): the
// text cleaned, CJK ideographs put between spaces, lowercased and stripped of its accents
// for an uncased model, then cut at whitespace with every punctuation mark a word of its own.
// Example (uncased): "Héllo, WORLD!" -> "hello", ",", "world", "!".

// BertNormalizer is the tokenizers library's BertNormalizer.
type BertNormalizer struct {
	// CleanText drops NUL, U+FFFD and the control characters, and makes every whitespace
	// character a space.
	CleanText bool
	// HandleChineseChars puts a space on both sides of each CJK ideograph.
	HandleChineseChars bool
	// StripAccents removes the non-spacing marks after NFD decomposition ("café" -> "cafe").
	StripAccents bool
	// Lowercase lowercases as Lowercase does.
	Lowercase bool
}

// Normalize applies the normalizer. The text is not put in a Unicode normalization form
// first (the library does not: a decomposed "é" of a cased model stays two characters).
func (n BertNormalizer) Normalize(text string) string {
	var cleaned strings.Builder
	cleaned.Grow(len(text) + 8)
	for _, r := range text {
		switch {
		case n.CleanText && (r == 0 || r == unicode.ReplacementChar || isBertControl(r)):
			continue
		case n.CleanText && isBertWhitespace(r):
			cleaned.WriteByte(' ')
		case n.HandleChineseChars && isCJK(r):
			cleaned.WriteByte(' ')
			cleaned.WriteRune(r)
			cleaned.WriteByte(' ')
		default:
			cleaned.WriteRune(r)
		}
	}
	out := cleaned.String()
	if n.Lowercase {
		out = Lowercase{}.Normalize(out)
	}
	if n.StripAccents {
		out = stripAccents(out)
	}
	return out
}

func (n BertNormalizer) normalizeAligned(a Aligned) Aligned { return a.Map(n.Normalize) }

// BertPreTokenizer cuts words at whitespace (which it removes) and makes each punctuation
// mark (BERT's: the non-alphanumeric printable ASCII characters and Unicode's P*) a word of its own.
type BertPreTokenizer struct{}

// PreTokenize splits each word.
func (BertPreTokenizer) PreTokenize(words []Word) []Word {
	out := make([]Word, 0, len(words))
	for _, w := range words {
		start := -1
		for i, r := range w.Text {
			space := unicode.IsSpace(r)
			switch {
			case space || isBertPunctuation(r):
				if start >= 0 {
					out = append(out, w.slice(start, i, w.AtStart && start == 0))
					start = -1
				}
				if !space {
					out = append(out, w.slice(i, i+utf8.RuneLen(r), w.AtStart && i == 0))
				}
			case start < 0:
				start = i
			}
		}
		if start >= 0 {
			out = append(out, w.slice(start, len(w.Text), w.AtStart && start == 0))
		}
	}
	return out
}

// stripAccents decomposes s (NFD) and drops the non-spacing combining marks.
func stripAccents(s string) string {
	decomposed := norm.NFD.String(s)
	var b strings.Builder
	b.Grow(len(decomposed))
	for _, r := range decomposed {
		if !unicode.Is(unicode.Mn, r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isBertWhitespace is the library's BertNormalizer whitespace: the White_Space property
// (Rust's char::is_whitespace: the line and paragraph separators too; the control
// characters among them are dropped before as controls, except tab, newline and carriage
// return).
func isBertWhitespace(r rune) bool { return isUnicodeSpace(r) }

// isBertControl is what BERT's cleaning drops: the "other" categories (control, format,
// private use, surrogates, unassigned), except tab, newline and carriage return.
func isBertControl(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return false
	case r < 0x80:
		return r < 0x20 || r == 0x7f
	}
	if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs) {
		return true
	}
	// Unassigned code points (category Cn) belong to no table.
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.C)
}

// isBertPunctuation is BERT's punctuation: every non-alphanumeric printable ASCII character
// ("$", "+", "^" and "`" included) and the Unicode punctuation categories (P*).
func isBertPunctuation(r rune) bool {
	if (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126) {
		return true
	}
	return unicode.IsPunct(r)
}

// isCJK tells whether r is in the CJK Unified Ideographs blocks that BERT makes words of
// their own (Hangul, Hiragana and Katakana are not, as in BERT).
func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) ||
		(r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) ||
		(r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x2F800 && r <= 0x2FA1F)
}
