package tokenizers

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Word is a piece of normalized text that the model tokenizes alone (a "split" of the
// tokenizers library); each word of a text has its own word id.
type Word struct {
	Text string
	// AtStart tells whether the word begins at the first character of the text (Metaspace's
	// prepend_scheme "first" prepends only there).
	AtStart bool
	// spans, when not nil, are the original spans of Text's bytes (see Aligned).
	spans []Offset
}

// slice is w.Text[i:j], its spans too.
func (w Word) slice(i, j int, atStart bool) Word {
	out := Word{Text: w.Text[i:j], AtStart: atStart}
	if w.spans != nil {
		out.spans = w.spans[i:j]
	}
	return out
}

// PreTokenizer cuts the normalized pieces of a text into words (tokenizer.json's
// "pre_tokenizer"). It never returns an empty word.
type PreTokenizer interface {
	PreTokenize(words []Word) []Word
}

// Metaspace replaces spaces by Replacement (▁), puts one before the word as PrependScheme
// says ("always", "first": only at the start of the text, "never") unless the word already
// begins with it, and, with Split, cuts the word before each replacement.
type Metaspace struct {
	Replacement   string
	PrependScheme string
	Split         bool
}

// PreTokenize applies Metaspace to each word.
func (m Metaspace) PreTokenize(words []Word) []Word {
	out := make([]Word, 0, len(words))
	for _, w := range words {
		prepend := !strings.HasPrefix(w.Text, " ") && !strings.HasPrefix(w.Text, m.Replacement) &&
			(m.PrependScheme == "always" || m.PrependScheme == "first" && w.AtStart)
		var rw Word
		if w.spans == nil {
			s := strings.ReplaceAll(w.Text, " ", m.Replacement)
			if prepend {
				s = m.Replacement + s
			}
			rw = Word{Text: s, AtStart: w.AtStart}
		} else {
			a := Aligned{Text: w.Text, spans: w.spans}.Map(func(c string) string { return strings.ReplaceAll(c, " ", m.Replacement) })
			if prepend {
				a = PrependAligned(m.Replacement, a)
			}
			rw = Word{Text: a.Text, AtStart: w.AtStart, spans: a.spans}
		}
		s := rw.Text
		if !m.Split {
			out = append(out, rw)
			continue
		}
		// Cut before each replacement: "▁▁a▁b" is "▁", "▁a", "▁b".
		start := 0
		for i := 0; i < len(s); {
			if strings.HasPrefix(s[i:], m.Replacement) {
				if i > start {
					out = append(out, rw.slice(start, i, w.AtStart && start == 0))
					start = i
				}
				i += len(m.Replacement)
				continue
			}
			_, n := utf8.DecodeRuneInString(s[i:])
			i += n
		}
		if start < len(s) {
			out = append(out, rw.slice(start, len(s), w.AtStart && start == 0))
		}
	}
	return out
}

// WhitespaceSplit cuts words on whitespace, which it removes.
type WhitespaceSplit struct{}

// PreTokenize splits each word on whitespace.
func (WhitespaceSplit) PreTokenize(words []Word) []Word {
	return splitRuns(words, func(r rune) int {
		if isUnicodeSpace(r) {
			return 0
		}
		return 1
	})
}

// Whitespace cuts words into runs of word characters and runs of other characters that are
// not whitespace (the regular expression \w+|[^\w\s]+), removing the whitespace.
type Whitespace struct{}

// PreTokenize splits each word.
func (Whitespace) PreTokenize(words []Word) []Word {
	return splitRuns(words, func(r rune) int {
		switch {
		case isWordChar(r):
			return 1
		case isUnicodeSpace(r):
			return 0
		}
		return 2
	})
}

// splitRuns cuts each word into the runs of characters of the same class (0: removed).
func splitRuns(words []Word, class func(rune) int) []Word {
	out := make([]Word, 0, len(words))
	for _, w := range words {
		start, cur := 0, 0
		flush := func(end int) {
			if cur != 0 && end > start {
				out = append(out, w.slice(start, end, w.AtStart && start == 0))
			}
		}
		for i, r := range w.Text {
			if c := class(r); c != cur {
				flush(i)
				start, cur = i, c
			}
		}
		flush(len(w.Text))
	}
	return out
}

// PreTokenizerSequence applies pre-tokenizers one after the other.
type PreTokenizerSequence []PreTokenizer

// PreTokenize applies the sequence.
func (seq PreTokenizerSequence) PreTokenize(words []Word) []Word {
	for _, p := range seq {
		words = p.PreTokenize(words)
	}
	return words
}

// preTokenizerJSON is a pre-tokenizer as tokenizer.json writes it.
type preTokenizerJSON struct {
	Type           string            `json:"type"`
	PreTokenizers  []json.RawMessage `json:"pretokenizers"`
	Replacement    string            `json:"replacement"`
	PrependScheme  *string           `json:"prepend_scheme"`
	AddPrefixSpace *bool             `json:"add_prefix_space"`
	Split          *bool             `json:"split"`
	UseRegex       *bool             `json:"use_regex"`
}

// parsePreTokenizer builds the pre-tokenizer of raw; null is none (nil).
func parsePreTokenizer(raw json.RawMessage, source string) (PreTokenizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var p preTokenizerJSON
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("tokenizers: %s: parsing a pre-tokenizer: %w", source, err)
	}
	switch p.Type {
	case "WhitespaceSplit":
		return WhitespaceSplit{}, nil
	case "BertPreTokenizer":
		return BertPreTokenizer{}, nil
	case "ByteLevel":
		return ByteLevel{AddPrefixSpace: orTrue(p.AddPrefixSpace), UseRegex: orTrue(p.UseRegex)}, nil
	case "Whitespace":
		return Whitespace{}, nil
	case "Metaspace":
		m := Metaspace{Replacement: p.Replacement, PrependScheme: "always", Split: true}
		if utf8.RuneCountInString(m.Replacement) != 1 {
			return nil, fmt.Errorf("tokenizers: %s: pre-tokenizer Metaspace: replacement %q is not one character", source, p.Replacement)
		}
		if p.Split != nil {
			m.Split = *p.Split
		}
		switch {
		case p.PrependScheme != nil:
			m.PrependScheme = *p.PrependScheme
		case p.AddPrefixSpace != nil && !*p.AddPrefixSpace: // files older than prepend_scheme
			m.PrependScheme = "never"
		}
		if m.PrependScheme != "always" && m.PrependScheme != "first" && m.PrependScheme != "never" {
			return nil, fmt.Errorf("tokenizers: %s: pre-tokenizer Metaspace: prepend_scheme %q is none of always, first, never", source, m.PrependScheme)
		}
		return m, nil
	case "Sequence":
		seq := make(PreTokenizerSequence, 0, len(p.PreTokenizers))
		for _, r := range p.PreTokenizers {
			sub, err := parsePreTokenizer(r, source)
			if err != nil {
				return nil, err
			}
			if sub != nil {
				seq = append(seq, sub)
			}
		}
		return seq, nil
	}
	return nil, fmt.Errorf("tokenizers: pre-tokenizer type %q in %s is not supported (supported: BertPreTokenizer, ByteLevel, Metaspace, WhitespaceSplit, Whitespace, Sequence)", p.Type, source)
}
