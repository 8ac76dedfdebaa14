package bert

import (
	"strings"
	"unicode"

	"github.com/goaccel/goaccel/tokenizers"
	"golang.org/x/text/unicode/norm"
)

// Basic tokenization, the first half of BERT's tokenizer (HF BasicTokenizer / BertNormalizer +
// BertPreTokenizer): clean the text, put spaces around CJK ideographs, split on whitespace,
// optionally lowercase and strip accents, and split punctuation into tokens of their own.
//
// Example: "Héllo, WORLD!" -> ["hello", ",", "world", "!"] (uncased).

// basicOptions are the switches of the basic tokenizer.
type basicOptions struct {
	lowercase    bool // lowercase every word (uncased models)
	stripAccents bool // remove combining marks after NFD decomposition
	chineseChars bool // isolate CJK ideographs as separate words
	noClean      bool // keep control characters and whitespace as they are (BertNormalizer's clean_text false)
	none         bool // no normalizer at all (a tokenizer.json's "normalizer": null)
}

// basicTokenize splits text into words and punctuation marks.
func basicTokenize(text string, opts basicOptions) []string {
	return preTokenizeBert(normalizeBert(text, opts), nil)
}

// normalizeBert is the first half of basic tokenization (the tokenizers library's
// BertNormalizer): the text cleaned (unless opts.noClean), CJK ideographs between spaces,
// whitespace made spaces, lowercased and stripped of its accents when opts say so; nothing
// with opts.none. The text is not put in a Unicode normalization form first (the library
// does not: a decomposed "é" of a cased model stays two characters).
func normalizeBert(text string, opts basicOptions) string {
	if opts.none {
		return text
	}
	var cleaned strings.Builder
	cleaned.Grow(len(text) + 8)
	for _, r := range text {
		switch {
		case !opts.noClean && (r == 0 || r == unicode.ReplacementChar || isControl(r)):
			continue
		case !opts.noClean && isWhitespace(r):
			cleaned.WriteByte(' ')
		case opts.chineseChars && isCJK(r):
			cleaned.WriteByte(' ')
			cleaned.WriteRune(r)
			cleaned.WriteByte(' ')
		default:
			cleaned.WriteRune(r)
		}
	}
	out := cleaned.String()
	if opts.lowercase {
		out = tokenizers.Lowercase{}.Normalize(out)
	}
	if opts.stripAccents {
		out = stripAccents(out)
	}
	return out
}

// preTokenizeBert is the second half (HF's BertPreTokenizer): the normalized text split at
// whitespace, every punctuation mark a word of its own; the words are appended to out.
func preTokenizeBert(normalized string, out []string) []string {
	for _, word := range strings.Fields(normalized) {
		out = splitPunctuation(word, out)
	}
	return out
}

// stripAccents decomposes s (NFD) and drops the non-spacing combining marks: "café" -> "cafe".
func stripAccents(s string) string {
	decomposed := norm.NFD.String(s)
	var b strings.Builder
	b.Grow(len(decomposed))
	for _, r := range decomposed {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// splitPunctuation appends to out the pieces of word, each punctuation rune standing alone:
// "don't" -> "don", "'", "t".
func splitPunctuation(word string, out []string) []string {
	start := 0
	for i, r := range word {
		if !isPunctuation(r) {
			continue
		}
		if i > start {
			out = append(out, word[start:i])
		}
		size := len(string(r))
		out = append(out, word[i:i+size])
		start = i + size
	}
	if start < len(word) {
		out = append(out, word[start:])
	}
	return out
}

// isWhitespace matches BERT's notion of whitespace: space, tab, newline, carriage return and
// the Unicode space separators (Zs).
func isWhitespace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r':
		return true
	}
	return unicode.Is(unicode.Zs, r)
}

// isControl matches the characters BERT drops: Unicode "other" categories (control, format,
// private use, surrogates, unassigned), except tab, newline and carriage return, which are
// whitespace.
func isControl(r rune) bool {
	switch r {
	case '\t', '\n', '\r':
		return false
	}
	if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs) {
		return true
	}
	// Unassigned code points (category Cn) belong to no table.
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.C)
}

// isPunctuation matches BERT's punctuation: every non-alphanumeric printable ASCII
// character (so "$", "+", "^" and "`" count) plus the Unicode punctuation categories (P*).
func isPunctuation(r rune) bool {
	if (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126) {
		return true
	}
	return unicode.IsPunct(r)
}

// isCJK reports whether r is in the CJK Unified Ideographs blocks that BERT splits into
// single-character words (Hangul, Hiragana and Katakana are not included, as in BERT).
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
