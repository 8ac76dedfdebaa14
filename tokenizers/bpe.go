package tokenizers

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Byte-level BPE, GPT-2's and RoBERTa's model: the ByteLevel pre-tokenizer splits a text by
// GPT-2's pattern
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// (written out by hand below: Go's regexp has no look-ahead) and makes every UTF-8 byte of a
// word one printable character (the bytes that are not printable are shifted above U+0100: a
// space is "Ġ"); BPE then starts each word as its characters and merges the adjacent pair of
// lowest rank, everywhere in the word, until no pair has a merge, and looks the symbols up in
// its vocabulary. Example with roberta-base: "Hello world!" -> "Hello", "Ġworld", "!".

// byteRune maps each byte to its printable stand-in (GPT-2's bytes_to_unicode).
var byteRune = func() [256]rune {
	var m [256]rune
	next := rune(256)
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[b] = rune(b)
		} else {
			m[b] = next
			next++
		}
	}
	return m
}()

// runeByte is the inverse of byteRune.
var runeByte = func() map[rune]byte {
	m := make(map[rune]byte, 256)
	for b, r := range byteRune {
		m[r] = byte(b)
	}
	return m
}()

// BPE is the byte-pair-encoding model (tokenizer.json's BPE without dropout and without
// byte_fallback).
type BPE struct {
	vocab          []string
	ids            map[string]int32
	ranks          map[string]int // "left right" -> merge rank
	unk            int32          // -1: unknown symbols are dropped, as the library does without unk_token
	fuseUnk        bool
	ignoreMerges   bool
	prefix, suffix string // continuing_subword_prefix and end_of_word_suffix
}

// Vocab returns the vocabulary (token i has id i).
func (m *BPE) Vocab() []string { return m.vocab }

// UnkID is the id of the unknown token, and false when the model has none.
func (m *BPE) UnkID() (int32, bool) { return m.unk, m.unk >= 0 }

// Prefix is the continuing_subword_prefix (none for RoBERTa).
func (m *BPE) Prefix() string { return m.prefix }

// AppendIDs appends the BPE ids of one pre-tokenized word.
func (m *BPE) AppendIDs(word string, out []int32) []int32 {
	for _, s := range m.appendSpans(word, nil) {
		out = append(out, s.id)
	}
	return out
}

// appendSpans appends the BPE tokens of one word, each with the bytes of word it covers.
func (m *BPE) appendSpans(word string, out []span) []span {
	if m.ignoreMerges {
		if id, ok := m.ids[word]; ok {
			return append(out, span{0, len(word), id})
		}
	}
	n := utf8.RuneCountInString(word)
	symbols := make([]string, 0, n)
	sizes := make([]int, 0, n) // the bytes of the word each symbol covers
	for i, r := range word {
		s := string(r)
		if i > 0 {
			s = m.prefix + s
		}
		if i+utf8.RuneLen(r) >= len(word) {
			s += m.suffix
		}
		symbols, sizes = append(symbols, s), append(sizes, len(string(r)))
	}
	for len(symbols) > 1 {
		bestRank, best := -1, -1
		for i := range len(symbols) - 1 {
			if r, ok := m.ranks[symbols[i]+" "+symbols[i+1]]; ok && (bestRank < 0 || r < bestRank) {
				bestRank, best = r, i
			}
		}
		if best < 0 {
			break
		}
		left, right := symbols[best], symbols[best+1]
		merged := left + strings.TrimPrefix(right, m.prefix)
		next, nextSizes := symbols[:0:0], sizes[:0:0]
		for i := 0; i < len(symbols); i++ {
			if i+1 < len(symbols) && symbols[i] == left && symbols[i+1] == right {
				next, nextSizes = append(next, merged), append(nextSizes, sizes[i]+sizes[i+1])
				i++
				continue
			}
			next, nextSizes = append(next, symbols[i]), append(nextSizes, sizes[i])
		}
		symbols, sizes = next, nextSizes
	}
	lastUnk := false
	pos := 0
	for i, s := range symbols {
		id, ok := m.ids[s]
		switch {
		case ok:
			out, lastUnk = append(out, span{pos, pos + sizes[i], id}), false
		case m.unk < 0:
			// No unk_token: the symbol is dropped, as the tokenizers library does.
		case m.fuseUnk && lastUnk:
			out[len(out)-1].end = pos + sizes[i]
		default:
			out, lastUnk = append(out, span{pos, pos + sizes[i], m.unk}), true
		}
		pos += sizes[i]
	}
	return out
}

// bpeJSON is tokenizer.json's BPE model.
type bpeJSON struct {
	Dropout                 *float64         `json:"dropout"`
	UnkToken                *string          `json:"unk_token"`
	ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string          `json:"end_of_word_suffix"`
	FuseUnk                 bool             `json:"fuse_unk"`
	ByteFallback            bool             `json:"byte_fallback"`
	IgnoreMerges            bool             `json:"ignore_merges"`
	Vocab                   map[string]int32 `json:"vocab"`
	Merges                  []any            `json:"merges"`
}

// parseBPE reads tokenizer.json's BPE model.
func parseBPE(raw json.RawMessage, source string) (*BPE, error) {
	var md bpeJSON
	if err := json.Unmarshal(raw, &md); err != nil {
		return nil, fmt.Errorf("tokenizers: %s: parsing the BPE model: %w", source, err)
	}
	if md.Dropout != nil && *md.Dropout != 0 {
		return nil, fmt.Errorf("tokenizers: %s: BPE dropout %g is not supported (it makes tokenization random)", source, *md.Dropout)
	}
	if md.ByteFallback {
		return nil, fmt.Errorf("tokenizers: %s: BPE byte_fallback is not supported", source)
	}
	merges := make([][2]string, len(md.Merges))
	for rank, merge := range md.Merges {
		switch v := merge.(type) {
		case string: // "Ġ t"
			left, right, ok := strings.Cut(v, " ")
			if !ok {
				return nil, fmt.Errorf("tokenizers: %s: merge %d %q is not two tokens separated by a space", source, rank, v)
			}
			merges[rank] = [2]string{left, right}
		case []any: // ["Ġ", "t"], tokenizers 0.20 and later
			var ok1, ok2 bool
			if len(v) == 2 {
				merges[rank][0], ok1 = v[0].(string)
				merges[rank][1], ok2 = v[1].(string)
			}
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("tokenizers: %s: merge %d %s is not a pair of tokens", source, rank, showJSON(v))
			}
		default:
			return nil, fmt.Errorf("tokenizers: %s: merge %d %s is not a pair of tokens", source, rank, showJSON(v))
		}
	}
	if len(md.Vocab) == 0 {
		return nil, fmt.Errorf("tokenizers: %s: the BPE model has an empty vocabulary", source)
	}
	vocab, err := denseVocab(md.Vocab, source)
	if err != nil {
		return nil, err
	}
	m := &BPE{vocab: vocab, ids: md.Vocab, ranks: make(map[string]int, len(merges)), unk: -1,
		fuseUnk: md.FuseUnk, ignoreMerges: md.IgnoreMerges}
	if md.ContinuingSubwordPrefix != nil {
		m.prefix = *md.ContinuingSubwordPrefix
	}
	if md.EndOfWordSuffix != nil {
		m.suffix = *md.EndOfWordSuffix
	}
	for rank, mg := range merges {
		if key := mg[0] + " " + mg[1]; !hasKey(m.ranks, key) {
			m.ranks[key] = rank // a repeated merge keeps its first rank
		}
	}
	if u := md.UnkToken; u != nil && *u != "" {
		id, ok := m.ids[*u]
		if !ok {
			return nil, fmt.Errorf("tokenizers: %s: BPE unk_token %q is not in the vocabulary", source, *u)
		}
		m.unk = id
	}
	return m, nil
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

// showJSON is v as JSON, for errors that show what the file says.
func showJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// ByteLevel is the byte-level pre-tokenizer: a space put before a text that does not begin
// with one (AddPrefixSpace), the text split by GPT-2's pattern (UseRegex), and every byte of
// a word made its printable character.
type ByteLevel struct {
	AddPrefixSpace bool
	UseRegex       bool
}

// PreTokenize applies ByteLevel to each word.
func (b ByteLevel) PreTokenize(words []Word) []Word {
	var out []Word
	for _, w := range words {
		if w.Text == "" {
			continue
		}
		if b.AddPrefixSpace && !strings.HasPrefix(w.Text, " ") {
			if w.spans != nil {
				a := PrependAligned(" ", Aligned{Text: w.Text, spans: w.spans})
				w = Word{Text: a.Text, AtStart: w.AtStart, spans: a.spans}
			} else {
				w.Text = " " + w.Text
			}
		}
		pieces := []string{w.Text}
		if b.UseRegex {
			pieces = splitGPT2(w.Text)
		}
		pos := 0
		for _, p := range pieces {
			var mapped strings.Builder
			var spans []Offset
			for i := 0; i < len(p); i++ {
				r := byteRune[p[i]]
				mapped.WriteRune(r)
				if w.spans != nil {
					for range utf8.RuneLen(r) {
						spans = append(spans, w.spans[pos+i])
					}
				}
			}
			out = append(out, Word{Text: mapped.String(), AtStart: w.AtStart && pos == 0, spans: spans})
			pos += len(p)
		}
	}
	return out
}

// splitGPT2 splits text as GPT-2's pattern does; every byte of text is in exactly one piece,
// a byte that is not UTF-8 (a character U+FFFD for the pattern) kept as it is.
func splitGPT2(text string) []string {
	rs := make([]rune, 0, len(text))
	at := make([]int, 0, len(text)+1) // the byte offset of each rune, then len(text)
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		rs, at = append(rs, r), append(at, i)
		i += n
	}
	at = append(at, len(text))
	var pieces []string
	for i := 0; i < len(rs); {
		n := gpt2Match(rs, i)
		pieces = append(pieces, text[at[i]:at[i+n]])
		i += n
	}
	return pieces
}

// gpt2Match is the length (in runes) of the pattern's match at rs[i], trying its
// alternatives in order as a backtracking regular expression engine does.
func gpt2Match(rs []rune, i int) int {
	if rs[i] == '\'' && i+1 < len(rs) {
		switch rs[i+1] {
		case 's', 't', 'm', 'd':
			return 2
		}
		if i+2 < len(rs) {
			switch string(rs[i+1 : i+3]) {
			case "re", "ve", "ll":
				return 3
			}
		}
	}
	for _, class := range []func(rune) bool{unicode.IsLetter, unicode.IsNumber, isOtherGPT2} {
		start := i
		if rs[i] == ' ' && i+1 < len(rs) && class(rs[i+1]) {
			start = i + 1 // " ?" takes the space
		}
		if !class(rs[start]) {
			continue
		}
		end := start
		for end < len(rs) && class(rs[end]) {
			end++
		}
		return end - i
	}
	// \s+(?!\S) and then \s+: a run of whitespace, less its last character when a
	// non-space follows (that one goes with the next word), unless the run is one long.
	end := i
	for end < len(rs) && unicode.IsSpace(rs[end]) {
		end++
	}
	switch {
	case end == i:
		return 1 // unreachable: every rune is a letter, a number, other or whitespace
	case end == len(rs) || end-i == 1:
		return end - i
	default:
		return end - i - 1
	}
}

// isOtherGPT2 is [^\s\p{L}\p{N}].
func isOtherGPT2(r rune) bool {
	return !unicode.IsSpace(r) && !unicode.IsLetter(r) && !unicode.IsNumber(r)
}

// trimOffset leaves out of o the spaces ("Ġ") a byte-level token begins and ends with
// (trim_offsets), except the one space of the first token of a prefix-space tokenizer
// (first), which the pre-tokenizer put there.
func trimOffset(token string, o Offset, first bool) Offset {
	isSpace := func(r rune) bool { return r == byteRune[' '] || unicode.IsSpace(r) }
	lead := utf8.RuneCountInString(token) - utf8.RuneCountInString(strings.TrimLeftFunc(token, isSpace))
	trail := utf8.RuneCountInString(token) - utf8.RuneCountInString(strings.TrimRightFunc(token, isSpace))
	if lead > 0 {
		if first && lead == 1 {
			lead = 0
		}
		o.Start = min(o.Start+lead, o.End)
	}
	if trail > 0 && o.End >= trail {
		o.End = max(o.End-trail, o.Start)
	}
	return o
}
