package bert

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/goaccel/goaccel/tokenizers"
)

// Offsets and decoding: where each token of an encoding is in the text (transformers'
// return_offsets_mapping), and the text of a list of tokens (convert_tokens_to_string), which
// token classification needs to name the words of its entities.

// EncodeOffsets is Encode with the offset of each token in text, in bytes: text[Start:End]
// is what the token was made from ((0, 0) for [CLS], [SEP], <s>, </s>). The offsets are
// those of transformers' fast tokenizers (offset_mapping), counted in bytes of the Go string
// instead of characters: tokenizers.CharOffsets converts them. As there, a WordPiece token
// of an uncased model covers the original characters it was lowercased and stripped from, a
// byte-level BPE token leaves out the spaces it begins or ends with (trim_offsets) and
// covers a whole character when it holds only some of its bytes, and a SentencePiece token
// "▁word" covers the space the "▁" stands for (none for XLM-R, whose pre-tokenizer drops the
// spaces first).
func (t *Tokenizer) EncodeOffsets(text string) ([]int32, []tokenizers.Offset, error) {
	if t.uni != nil {
		e, offs, err := t.uni.EncodeOffsets(text)
		if err != nil {
			return nil, nil, err
		}
		return e.IDs, offs, nil
	}
	var ids []int32
	var offs []tokenizers.Offset
	t.added.SplitAligned(text, t.normalizeAligned, func(part tokenizers.Aligned, tok *tokenizers.AddedToken, _ bool) {
		if tok != nil {
			ids, offs = append(ids, tok.ID), append(offs, part.Span(0, len(part.Text)))
			return
		}
		ids, offs = t.appendPlainOffsets(part, ids, offs)
	})
	if n := t.maxLen - 2; len(ids) > n {
		ids, offs = ids[:n], offs[:n]
	}
	ids = append(append([]int32{t.special.cls}, ids...), t.special.sep)
	offs = append(append([]tokenizers.Offset{{}}, offs...), tokenizers.Offset{})
	return ids, offs, nil
}

// normalizeAligned is the segmenter's normalizer, keeping the alignment.
func (t *Tokenizer) normalizeAligned(a tokenizers.Aligned) tokenizers.Aligned {
	return a.Map(t.seg.normalize)
}

// appendPlainOffsets appends the ids and offsets of a normalized piece holding no added token.
func (t *Tokenizer) appendPlainOffsets(a tokenizers.Aligned, ids []int32, offs []tokenizers.Offset) ([]int32, []tokenizers.Offset) {
	switch seg := t.seg.(type) {
	case *wordPiece:
		for _, w := range fieldsAt(a.Text, unicode.IsSpace, isPunctuation) {
			word := a.Slice(w[0], w[1])
			bytes := runeStarts(word.Text)
			for _, p := range seg.pieces(word.Text, nil) {
				ids, offs = append(ids, p.id), append(offs, word.Span(bytes[p.start], bytes[p.end]))
			}
		}
	case *byteLevelBPE:
		if a.Text == "" {
			return ids, offs
		}
		if seg.addPrefixSpace && !strings.HasPrefix(a.Text, " ") {
			a = tokenizers.PrependAligned(" ", a)
		}
		pieces := [][2]int{{0, len(a.Text)}}
		if seg.useRegex {
			pieces = pieces[:0]
			pos := 0
			for _, p := range splitGPT2(a.Text) {
				pieces = append(pieces, [2]int{pos, pos + len(p)})
				pos += len(p)
			}
		}
		var mapped strings.Builder
		for _, pc := range pieces {
			mapped.Reset()
			for i := pc[0]; i < pc[1]; i++ {
				mapped.WriteRune(byteRune[a.Text[i]])
			}
			for _, p := range seg.appendPieces(mapped.String(), nil) {
				o := a.Span(pc[0]+p.start, pc[0]+p.end)
				if seg.trimOffsets {
					o = trimOffset(t.tokens[p.id], o, seg.addPrefixSpace && (len(offs) == 0 || o.Start == 0))
				}
				ids, offs = append(ids, p.id), append(offs, o)
			}
		}
	}
	return ids, offs
}

// trimOffset leaves out of o the spaces ("Ġ") a byte-level token begins and ends with
// (RobertaProcessing's trim_offsets), except the one space of the first token of a
// prefix-space tokenizer (first), which it put there.
func trimOffset(token string, o tokenizers.Offset, first bool) tokenizers.Offset {
	isSpace := func(r rune) bool { return r == byteRune[' '] || unicode.IsSpace(r) }
	lead := len([]rune(token)) - len([]rune(strings.TrimLeftFunc(token, isSpace)))
	trail := len([]rune(token)) - len([]rune(strings.TrimRightFunc(token, isSpace)))
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

// runeStarts is the byte index of each rune of s, and len(s) after the last.
func runeStarts(s string) []int {
	out := make([]int, 0, len(s)+1)
	for i := range s {
		out = append(out, i)
	}
	return append(out, len(s))
}

// fieldsAt is preTokenizeBert's split with positions: the byte ranges of the runs of s
// between the space runes, each alone rune a word of its own.
func fieldsAt(s string, space, alone func(rune) bool) [][2]int {
	var out [][2]int
	start := -1
	for i, r := range s {
		switch {
		case space(r) || alone(r):
			if start >= 0 {
				out = append(out, [2]int{start, i})
				start = -1
			}
			if !space(r) {
				out = append(out, [2]int{i, i + utf8.RuneLen(r)})
			}
		case start < 0:
			start = i
		}
	}
	if start >= 0 {
		out = append(out, [2]int{start, len(s)})
	}
	return out
}

// TokensToString is the text of a list of tokens as transformers' convert_tokens_to_string
// makes it with the decoder of the tokenizer's kind: WordPiece joins the tokens with spaces,
// a "##" piece glued to the one before, and cleans up the spaces before punctuation and
// contractions (" ." -> ".", " n't" -> "n't", ...); byte-level BPE maps the characters back
// to their bytes (a token with a character that is no byte's, such as a space, is taken as
// its own UTF-8) and reads them as UTF-8, each bad sequence a U+FFFD; SentencePiece turns "▁"
// into a space, except in the first token, where it is dropped.
func (t *Tokenizer) TokensToString(tokens []string) string {
	var b strings.Builder
	switch {
	case t.uni != nil:
		for i, tok := range tokens {
			if i == 0 {
				b.WriteString(strings.ReplaceAll(tok, "▁", ""))
			} else {
				b.WriteString(strings.ReplaceAll(tok, "▁", " "))
			}
		}
	case t.Kind() == "WordPiece":
		prefix := t.seg.(*wordPiece).prefix
		for i, tok := range tokens {
			if i > 0 {
				if rest, ok := strings.CutPrefix(tok, prefix); ok {
					tok = rest
				} else {
					tok = " " + tok
				}
			}
			b.WriteString(cleanUpTokenization(tok))
		}
	default:
		var raw []byte
		for _, tok := range tokens {
			mark := len(raw)
			for _, r := range tok {
				by, ok := runeByte[r]
				if !ok {
					raw = append(raw[:mark], tok...)
					break
				}
				raw = append(raw, by)
			}
		}
		return lossyUTF8(raw)
	}
	return b.String()
}

// cleanUpTokenization is the WordPiece decoder's clean-up of one token.
func cleanUpTokenization(s string) string {
	return strings.NewReplacer(" .", ".", " ?", "?", " !", "!", " ,", ",", " ' ", "'", " n't", "n't",
		" 'm", "'m", " do not", " don't", " 's", "'s", " 've", "'ve", " 're", "'re").Replace(s)
}

// runeByte is the inverse of byteRune.
var runeByte = func() map[rune]byte {
	m := make(map[rune]byte, 256)
	for b, r := range byteRune {
		m[r] = byte(b)
	}
	return m
}()

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

// UnkID is the id of the unknown token ([UNK], <unk>), and false when the tokenizer has none
// (a byte-level BPE without unk_token).
func (t *Tokenizer) UnkID() (int32, bool) {
	switch seg := t.seg.(type) {
	case *wordPiece:
		return seg.unk, true
	case *byteLevelBPE:
		return seg.unk, seg.unk >= 0
	}
	if t.uniFamily != nil {
		id, ok := t.ids[t.uniFamily.unk]
		return id, ok
	}
	return 0, false
}

// SubwordPrefix is the model's continuing_subword_prefix: "##" for WordPiece, a BPE's own
// (none for RoBERTa's), none for Unigram.
func (t *Tokenizer) SubwordPrefix() string {
	switch seg := t.seg.(type) {
	case *wordPiece:
		return seg.prefix
	case *byteLevelBPE:
		return seg.prefix
	}
	return ""
}
