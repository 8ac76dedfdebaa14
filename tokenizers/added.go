package tokenizers

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The added vocabulary: the tokens a tokenizer matches in the text before its model sees
// it, as the tokenizers library does. They are the special tokens (<s>, </s>, <mask>;
// [CLS], [SEP], [MASK]...) and the words a user added. A text is encoded in two passes:
//
//  1. the tokens that are not normalized are found in the raw text, and cut out;
//  2. each piece left between them is normalized, and the normalized tokens (whose content
//     was normalized the same way) are found in it and cut out;
//
// and what is left is pre-tokenized and given to the model. Each pass takes the leftmost
// match, the longest one at that place, then goes on after it. A match of a single_word
// token with a word character (letter, mark, digit, connector such as "_") just before or
// just after it is dropped; lstrip and rstrip take the whitespace before and after a match
// into it.

// AddedToken is one token of the added vocabulary, as tokenizer.json's added_tokens and
// tokenizer_config.json's added_tokens_decoder describe it.
type AddedToken struct {
	Content    string
	ID         int32
	Special    bool // a special token (skipped when decoding)
	Normalized bool // matched in the normalized text, its content normalized too
	LStrip     bool // takes the whitespace on its left
	RStrip     bool // and on its right
	SingleWord bool // only matched when no word character touches it
}

// AddedVocab matches the added tokens of a tokenizer in its texts. It is immutable and safe
// for concurrent use.
type AddedVocab struct {
	tokens []AddedToken // as declared
	raw    matcher      // the tokens that are not normalized, on the raw text
	norm   matcher      // the normalized ones, on the normalized text
}

// matcher finds a set of patterns in a text: leftmost first, longest first at one place.
type matcher struct {
	byFirst map[byte][]matchEntry // patterns by their first byte, longest first
}

// matchEntry is one pattern of a matcher and the token it stands for.
type matchEntry struct {
	pattern string
	tok     *AddedToken
}

// NewAddedVocab indexes tokens; normalize is the tokenizer's normalizer (nil: none), applied
// to the content of the normalized tokens.
func NewAddedVocab(tokens []AddedToken, normalize func(string) string) *AddedVocab {
	v := &AddedVocab{tokens: slices.Clone(tokens)}
	for i := range v.tokens {
		tok := &v.tokens[i]
		if tok.Normalized {
			content := tok.Content
			if normalize != nil {
				content = normalize(content)
			}
			v.norm.add(content, tok)
		} else {
			v.raw.add(tok.Content, tok)
		}
	}
	return v
}

// Tokens returns the added tokens, in the order they were given.
func (v *AddedVocab) Tokens() []AddedToken { return slices.Clone(v.tokens) }

// add adds a pattern; an empty one (a content the normalizer erased) never matches.
func (m *matcher) add(pattern string, tok *AddedToken) {
	if pattern == "" {
		return
	}
	if m.byFirst == nil {
		m.byFirst = map[byte][]matchEntry{}
	}
	entries := append(m.byFirst[pattern[0]], matchEntry{pattern, tok})
	// Stable: of two tokens with the same pattern the first declared wins.
	slices.SortStableFunc(entries, func(a, b matchEntry) int { return len(b.pattern) - len(a.pattern) })
	m.byFirst[pattern[0]] = entries
}

// split calls piece for every part of s in order: the matches (tok not nil, the text it
// covers with the whitespace that lstrip / rstrip took) and the text between them (tok nil,
// never empty). start is the byte offset of the part in s.
func (m *matcher) split(s string, piece func(start int, text string, tok *AddedToken)) {
	if len(m.byFirst) == 0 {
		if s != "" {
			piece(0, s, nil)
		}
		return
	}
	done := 0 // s[:done] has been given to piece
	for pos := 0; pos < len(s); {
		start, tok := m.next(s, pos)
		if tok == nil {
			break
		}
		end := start + len(tok.pattern)
		pos = end
		t := tok.tok
		if t.SingleWord && (endsWithWordChar(s[:start]) || startsWithWordChar(s[end:])) {
			continue
		}
		if t.LStrip {
			start = max(len(strings.TrimRightFunc(s[:start], isUnicodeSpace)), done)
		}
		if t.RStrip {
			end = len(s) - len(strings.TrimLeftFunc(s[end:], isUnicodeSpace))
			pos = end
		}
		if start > done {
			piece(done, s[done:start], nil)
		}
		piece(start, s[start:end], t)
		done = end
	}
	if done < len(s) {
		piece(done, s[done:], nil)
	}
}

// next finds the leftmost match at or after pos, the longest pattern there.
func (m *matcher) next(s string, pos int) (int, *matchEntry) {
	for i := pos; i < len(s); i++ {
		for j, e := range m.byFirst[s[i]] {
			if strings.HasPrefix(s[i:], e.pattern) {
				return i, &m.byFirst[s[i]][j]
			}
		}
	}
	return 0, nil
}

// Split cuts text into the added tokens found in it and the normalized pieces between them,
// calling piece for each in order: tok is the added token matched, or nil for a piece of
// text, which normalize (nil: none) has normalized, and which is never empty. atStart tells
// whether the piece begins at the first byte of text.
func (v *AddedVocab) Split(text string, normalize func(string) string, piece func(text string, tok *AddedToken, atStart bool)) {
	v.raw.split(text, func(rawStart int, raw string, tok *AddedToken) {
		if tok != nil {
			piece(raw, tok, rawStart == 0)
			return
		}
		normalized := raw
		if normalize != nil {
			normalized = normalize(raw)
		}
		v.norm.split(normalized, func(start int, text string, tok *AddedToken) {
			piece(text, tok, rawStart == 0 && start == 0)
		})
	})
}

// AppendIDs appends the ids of text: the added tokens found in it, and plain's ids of the
// normalized pieces between them.
func (v *AddedVocab) AppendIDs(text string, normalize func(string) string, plain func(string, []int32) []int32, out []int32) []int32 {
	v.Split(text, normalize, func(piece string, tok *AddedToken, _ bool) {
		if tok != nil {
			out = append(out, tok.ID)
		} else {
			out = plain(piece, out)
		}
	})
	return out
}

// isUnicodeSpace is the White_Space property (Rust's char::is_whitespace and regex \s).
func isUnicodeSpace(r rune) bool {
	if r < 0x80 {
		return r == ' ' || r >= '\t' && r <= '\r'
	}
	return unicode.Is(unicode.White_Space, r)
}

// isWordChar is a Unicode word character (regex \w): alphabetic, a mark, a decimal digit, a
// connector punctuation ("_") or a joiner.
func isWordChar(r rune) bool {
	return unicode.IsLetter(r) || unicode.In(r, unicode.Nl, unicode.Other_Alphabetic, unicode.M, unicode.Nd,
		unicode.Pc, unicode.Join_Control)
}

func endsWithWordChar(s string) bool {
	r, n := utf8.DecodeLastRuneInString(s)
	return n > 0 && isWordChar(r)
}

func startsWithWordChar(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return n > 0 && isWordChar(r)
}

// LongestFirst is the number of tokens kept of each text of a pair of n1 and n2 tokens that
// must fit in room (the tokenizers library's longest_first truncation): the longer text is
// cut to what the shorter one leaves, and both to half when each is longer than that.
func LongestFirst(n1, n2, room int) (keep1, keep2 int) {
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
