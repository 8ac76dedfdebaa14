package tokenizers

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Normalizer rewrites a piece of text before it is pre-tokenized (tokenizer.json's
// "normalizer").
type Normalizer interface {
	Normalize(s string) string
}

// UnicodeForm is one of the Unicode normalization forms (the NFC, NFD, NFKC and NFKD
// normalizers).
type UnicodeForm struct{ Form norm.Form }

// Normalize puts s in the form.
func (u UnicodeForm) Normalize(s string) string { return u.Form.String(s) }

// Lowercase lowercases every character, as the tokenizers library does (Rust's
// char::to_lowercase, one character at a time): İ becomes "i̇" (i and a combining dot), a
// final Σ is σ, and the letters Unicode 16 added have their lowercase although Go's
// unicode tables (Unicode 15) lack them. It is the one lowercasing rule of the package and
// of models/bert.
type Lowercase struct{}

// Normalize lowercases s.
func (Lowercase) Normalize(s string) string {
	return strings.Map(toLower, strings.ReplaceAll(s, "\u0130", "i\u0307"))
}

// toLower is unicode.ToLower with the case pairs of Unicode 16 that Go's tables lack.
func toLower(r rune) rune {
	switch {
	case r >= 0x10D50 && r <= 0x10D65: // Garay
		return r + 0x20
	case r >= 0x16EA0 && r <= 0x16EB8: // Beria Erfe
		return r + 0x1B
	}
	switch r {
	case 0x1C89:
		return 0x1C8A
	case 0xA7CB:
		return 0x0264
	case 0xA7CC, 0xA7CE, 0xA7D2, 0xA7D4, 0xA7DA:
		return r + 1
	case 0xA7DC:
		return 0x019B
	}
	return unicode.ToLower(r)
}

// Strip removes the whitespace at the left and/or the right of the text.
type Strip struct{ Left, Right bool }

// Normalize strips s.
func (st Strip) Normalize(s string) string {
	if st.Left {
		s = strings.TrimLeftFunc(s, isUnicodeSpace)
	}
	if st.Right {
		s = strings.TrimRightFunc(s, isUnicodeSpace)
	}
	return s
}

// Replace replaces every match of a string or a regular expression by Content.
type Replace struct {
	Pattern *regexp.Regexp
	Content string
}

// Normalize replaces the matches in s.
func (r Replace) Normalize(s string) string { return r.Pattern.ReplaceAllLiteralString(s, r.Content) }

// Prepend puts Prefix before a text that is not empty.
type Prepend struct{ Prefix string }

// Normalize prepends the prefix.
func (p Prepend) Normalize(s string) string {
	if s == "" {
		return s
	}
	return p.Prefix + s
}

// NormalizerSequence applies normalizers one after the other.
type NormalizerSequence []Normalizer

// Normalize applies the sequence.
func (seq NormalizerSequence) Normalize(s string) string {
	for _, n := range seq {
		s = n.Normalize(s)
	}
	return s
}

// normalizerJSON is a normalizer as tokenizer.json writes it.
type normalizerJSON struct {
	Type                string            `json:"type"`
	Normalizers         []json.RawMessage `json:"normalizers"`
	PrecompiledCharsmap *string           `json:"precompiled_charsmap"`
	StripLeft           bool              `json:"strip_left"`
	StripRight          bool              `json:"strip_right"`
	Pattern             *patternJSON      `json:"pattern"`
	Content             string            `json:"content"`
	Prepend             string            `json:"prepend"`
	CleanText           *bool             `json:"clean_text"`
	HandleChineseChars  *bool             `json:"handle_chinese_chars"`
	StripAccents        *bool             `json:"strip_accents"`
	Lowercase           *bool             `json:"lowercase"`
}

// patternJSON is the pattern of Replace and Split: a string or a regular expression.
type patternJSON struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

// compile makes the regular expression of a pattern (a string matches itself).
func (p *patternJSON) compile() (*regexp.Regexp, error) {
	switch {
	case p == nil:
		return nil, fmt.Errorf("no pattern")
	case p.String != nil:
		return regexp.MustCompile(regexp.QuoteMeta(*p.String)), nil
	case p.Regex != nil:
		re, err := regexp.Compile(*p.Regex)
		if err != nil {
			return nil, fmt.Errorf("regular expression %q: %w", *p.Regex, err)
		}
		return re, nil
	}
	return nil, fmt.Errorf("pattern is neither String nor Regex")
}

// parseNormalizer builds the normalizer of raw (tokenizer.json's "normalizer", or one of a
// Sequence); null is none (nil). source names the file in errors.
func parseNormalizer(raw json.RawMessage, source string) (Normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var n normalizerJSON
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("tokenizers: %s: parsing a normalizer: %w", source, err)
	}
	bad := func(err error) error {
		return fmt.Errorf("tokenizers: %s: normalizer %s: %w", source, n.Type, err)
	}
	switch n.Type {
	case "NFC":
		return UnicodeForm{norm.NFC}, nil
	case "NFD":
		return UnicodeForm{norm.NFD}, nil
	case "NFKC":
		return UnicodeForm{norm.NFKC}, nil
	case "NFKD":
		return UnicodeForm{norm.NFKD}, nil
	case "Lowercase":
		return Lowercase{}, nil
	case "BertNormalizer":
		b := BertNormalizer{CleanText: orTrue(n.CleanText), HandleChineseChars: orTrue(n.HandleChineseChars),
			Lowercase: orTrue(n.Lowercase)}
		b.StripAccents = b.Lowercase // null follows lowercase
		if n.StripAccents != nil {
			b.StripAccents = *n.StripAccents
		}
		return b, nil
	case "Strip":
		return Strip{Left: n.StripLeft, Right: n.StripRight}, nil
	case "Prepend":
		return Prepend{Prefix: n.Prepend}, nil
	case "Replace":
		re, err := n.Pattern.compile()
		if err != nil {
			return nil, bad(err)
		}
		return Replace{Pattern: re, Content: n.Content}, nil
	case "Precompiled":
		if n.PrecompiledCharsmap == nil {
			return nil, bad(fmt.Errorf("no precompiled_charsmap"))
		}
		p, err := newPrecompiledBase64(*n.PrecompiledCharsmap)
		if err != nil {
			return nil, bad(err)
		}
		return p, nil
	case "Sequence":
		seq := make(NormalizerSequence, 0, len(n.Normalizers))
		for _, r := range n.Normalizers {
			sub, err := parseNormalizer(r, source)
			if err != nil {
				return nil, err
			}
			if sub != nil {
				seq = append(seq, sub)
			}
		}
		return seq, nil
	}
	return nil, fmt.Errorf("tokenizers: normalizer type %q in %s is not supported (supported: BertNormalizer, NFC, NFD, NFKC, NFKD, Lowercase, Strip, Replace, Prepend, Precompiled, Sequence)", n.Type, source)
}

// orTrue is *b, true when the file does not say.
func orTrue(b *bool) bool { return b == nil || *b }

// isNull tells whether a JSON value is absent or null.
func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}
