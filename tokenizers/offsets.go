package tokenizers

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/rivo/uniseg"
	"golang.org/x/text/unicode/norm"
)

// Offsets: where each token of an encoding comes from in the text, as the tokenizers
// library's NormalizedString keeps it. Every byte of a normalized text remembers the span of
// the original text it was made from; a token's offset runs from the start of its first
// byte's span to the end of its last one's. A normalizer that rewrites a unit of text (a
// character, a Unicode normalization segment, a grapheme cluster for Precompiled) gives
// every byte of the rewrite that unit's span; a character put in front (Metaspace's "▁",
// Prepend, a byte-level prefix space) takes the span of the character it precedes; what
// Replace writes takes the span of the last character it replaced.
//
// Offsets are in bytes of the Go string; CharOffsets turns them into the code point indices
// that transformers' return_offsets_mapping gives (Python str indices).

// Offset is the span text[Start:End] of a token in the text it was encoded from, in bytes;
// the special tokens the post-processor adds have (0, 0).
type Offset struct{ Start, End int }

// CharOffsets returns offsets counted in characters (Unicode code points) instead of bytes:
// the indices of a Python str, as transformers' offset_mapping gives them. A byte offset
// inside a character counts as that character's start.
func CharOffsets(text string, offsets []Offset) []Offset {
	index := make([]int, len(text)+1) // byte -> characters before it
	n := 0
	for i := 0; i < len(text); i++ {
		if utf8.RuneStart(text[i]) && i > 0 {
			n++
		}
		index[i] = n
	}
	if len(text) > 0 {
		index[len(text)] = n + 1
	}
	out := make([]Offset, len(offsets))
	for i, o := range offsets {
		if o.Start < 0 || o.End > len(text) || o.Start > o.End {
			out[i] = o
			continue
		}
		out[i] = Offset{index[o.Start], index[o.End]}
	}
	return out
}

// Aligned is a text being normalized together with, for each of its bytes, the span of the
// original text that byte comes from. The zero value is an empty text.
type Aligned struct {
	Text  string
	spans []Offset
}

// NewAligned is text as its own original: each byte has the span of its character, shifted
// by base (the position of text in a longer original).
func NewAligned(text string, base int) Aligned {
	spans := make([]Offset, len(text))
	for i := 0; i < len(text); {
		// A byte that is not UTF-8 is a character of its own (DecodeRune's width 1).
		_, n := utf8.DecodeRuneInString(text[i:])
		for j := i; j < i+n; j++ {
			spans[j] = Offset{base + i, base + i + n}
		}
		i += n
	}
	return Aligned{Text: text, spans: spans}
}

// Slice is Text[i:j] with its spans.
func (a Aligned) Slice(i, j int) Aligned { return Aligned{Text: a.Text[i:j], spans: a.spans[i:j]} }

// Span is the original span of Text[i:j]: from the start of the first byte's span to the
// end of the last one's (an empty range: an empty span where Text[i] comes from).
func (a Aligned) Span(i, j int) Offset {
	switch {
	case len(a.spans) == 0:
		return Offset{}
	case i >= j:
		k := min(i, len(a.spans)-1)
		return Offset{a.spans[k].Start, a.spans[k].Start}
	}
	return Offset{a.spans[i].Start, a.spans[j-1].End}
}

// builder writes an Aligned text piece by piece.
type builder struct {
	b     strings.Builder
	spans []Offset
}

func (b *builder) write(s string, span Offset) {
	b.b.WriteString(s)
	for range len(s) {
		b.spans = append(b.spans, span)
	}
}

func (b *builder) aligned() Aligned { return Aligned{Text: b.b.String(), spans: b.spans} }

// Map applies f to each Unicode normalization segment of the text (a starter and the
// characters that combine with it), each byte of f's output taking the segment's span: the
// alignment of a normalizer that rewrites characters without looking past their segment
// (Unicode normalization, case mapping, BERT's cleaning and accent stripping).
func (a Aligned) Map(f func(string) string) Aligned {
	return a.mapUnits(f, func(s string) int {
		n := norm.NFC.NextBoundaryInString(s, true)
		if n <= 0 {
			_, n = utf8.DecodeRuneInString(s)
		}
		return n
	})
}

// mapUnits applies f to each unit of the text (next gives the byte length of the unit that
// starts s).
func (a Aligned) mapUnits(f func(string) string, next func(string) int) Aligned {
	var b builder
	b.spans = make([]Offset, 0, len(a.Text))
	for i := 0; i < len(a.Text); {
		n := next(a.Text[i:])
		b.write(f(a.Text[i:i+n]), a.Span(i, i+n))
		i += n
	}
	return b.aligned()
}

// alignedNormalizer is a Normalizer that keeps the alignment.
type alignedNormalizer interface {
	normalizeAligned(a Aligned) Aligned
}

func (u UnicodeForm) normalizeAligned(a Aligned) Aligned { return a.Map(u.Normalize) }

func (l Lowercase) normalizeAligned(a Aligned) Aligned { return a.Map(l.Normalize) }

func (st Strip) normalizeAligned(a Aligned) Aligned {
	i, j := 0, len(a.Text)
	if st.Left {
		i = len(a.Text) - len(strings.TrimLeftFunc(a.Text, isUnicodeSpace))
	}
	if st.Right {
		j = len(strings.TrimRightFunc(a.Text, isUnicodeSpace))
	}
	if i >= j {
		return Aligned{}
	}
	return a.Slice(i, j)
}

func (r Replace) normalizeAligned(a Aligned) Aligned {
	var b builder
	done := 0
	for _, m := range r.Pattern.FindAllStringIndex(a.Text, -1) {
		for k := done; k < m[0]; k++ {
			b.write(a.Text[k:k+1], a.spans[k])
		}
		span := a.Span(m[0], m[0])
		if m[1] > m[0] {
			_, n := utf8.DecodeLastRuneInString(a.Text[m[0]:m[1]])
			span = a.Span(m[1]-n, m[1])
		}
		b.write(r.Content, span)
		done = m[1]
	}
	for k := done; k < len(a.Text); k++ {
		b.write(a.Text[k:k+1], a.spans[k])
	}
	return b.aligned()
}

func (p Prepend) normalizeAligned(a Aligned) Aligned {
	if a.Text == "" {
		return a
	}
	return PrependAligned(p.Prefix, a)
}

// PrependAligned puts prefix before a, the prefix taking the span of a's first character.
func PrependAligned(prefix string, a Aligned) Aligned {
	_, n := utf8.DecodeRuneInString(a.Text)
	var b builder
	b.write(prefix, a.Span(0, n))
	b.b.WriteString(a.Text)
	b.spans = append(b.spans, a.spans...)
	return b.aligned()
}

func (seq NormalizerSequence) normalizeAligned(a Aligned) Aligned {
	for _, n := range seq {
		a = n.(alignedNormalizer).normalizeAligned(a)
	}
	return a
}

// normalizeAligned applies the map as Normalize does, a cluster replaced whole taking the
// cluster's span, and a character replaced alone its own.
func (p *Precompiled) normalizeAligned(a Aligned) Aligned {
	var b builder
	state := -1
	for pos, rest := 0, a.Text; rest != ""; {
		var cluster string
		cluster, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		if len(cluster) < 6 {
			if norm, ok := p.transform(cluster); ok {
				b.write(norm, a.Span(pos, pos+len(cluster)))
				pos += len(cluster)
				continue
			}
		}
		for i := 0; i < len(cluster); {
			_, n := utf8.DecodeRuneInString(cluster[i:])
			out, ok := p.transform(cluster[i : i+n])
			if !ok {
				out = cluster[i : i+n]
			}
			b.write(out, a.Span(pos+i, pos+i+n))
			i += n
		}
		pos += len(cluster)
	}
	return b.aligned()
}

// normalizeAligned applies the normalizer keeping the alignment; it fails when one of its parts cannot.
func (t *Tokenizer) normalizeAligned(a Aligned) (Aligned, error) {
	if t.normalizer == nil {
		return a, nil
	}
	var check func(Normalizer) error
	check = func(n Normalizer) error {
		switch n := n.(type) {
		case NormalizerSequence:
			for _, sub := range n {
				if err := check(sub); err != nil {
					return err
				}
			}
		case alignedNormalizer:
		default:
			return fmt.Errorf("tokenizers: %s: normalizer %T cannot give offsets", t.source, n)
		}
		return nil
	}
	if err := check(t.normalizer); err != nil {
		return Aligned{}, err
	}
	return t.normalizer.(alignedNormalizer).normalizeAligned(a), nil
}

// SplitAligned is Split keeping the alignment: the pieces of text between the added tokens
// are normalized by normalize (nil: none), and piece gets each part with its spans in text.
// An added token's part leaves out the whitespace its lstrip and rstrip took (the token's
// offset is its content's).
func (v *AddedVocab) SplitAligned(text string, normalize func(Aligned) Aligned, piece func(part Aligned, tok *AddedToken, atStart bool)) {
	content := func(a Aligned) Aligned {
		i := len(a.Text) - len(strings.TrimLeftFunc(a.Text, isUnicodeSpace))
		j := len(strings.TrimRightFunc(a.Text, isUnicodeSpace))
		if i >= j {
			return a
		}
		return a.Slice(i, j)
	}
	v.raw.split(text, func(rawStart int, raw string, tok *AddedToken) {
		a := NewAligned(raw, rawStart)
		if tok != nil {
			piece(content(a), tok, rawStart == 0)
			return
		}
		if normalize != nil {
			a = normalize(a)
		}
		v.norm.split(a.Text, func(start int, text string, tok *AddedToken) {
			part := a.Slice(start, start+len(text))
			if tok != nil {
				part = content(part)
			}
			piece(part, tok, rawStart == 0 && start == 0)
		})
	})
}

// EncodeOffsets is Encode with the offset of each token in text, in bytes ((0, 0) for the
// post-processor's special tokens; see CharOffsets for transformers' character offsets).
// It fails when a component of the pipeline cannot follow the offsets.
func (t *Tokenizer) EncodeOffsets(text string) (Encoding, []Offset, error) {
	sm, ok := t.model.(interface {
		appendSpans(word string, out []span) []span
	})
	if !ok {
		return Encoding{}, nil, fmt.Errorf("tokenizers: %s: model %s cannot give offsets", t.source, t.Kind())
	}
	var e Encoding
	var offs []Offset
	var err error
	word := int32(0)
	trim, _ := t.post.(*TemplateProcessing)
	t.added.SplitAligned(text, func(a Aligned) Aligned {
		n, nerr := t.normalizeAligned(a)
		if nerr != nil {
			err = nerr
		}
		return n
	}, func(part Aligned, tok *AddedToken, atStart bool) {
		if tok != nil {
			e.append(tok.ID, 0, word)
			offs = append(offs, part.Span(0, len(part.Text)))
			word++
			return
		}
		words := []Word{{Text: part.Text, AtStart: atStart, spans: part.spans}}
		if t.preTokenizer != nil {
			words = t.preTokenizer.PreTokenize(words)
		}
		for _, w := range words {
			wa := Aligned{Text: w.Text, spans: w.spans}
			for _, s := range sm.appendSpans(w.Text, nil) {
				e.append(s.id, 0, word)
				o := wa.Span(s.start, s.end)
				if trim != nil && trim.TrimOffsets {
					o = trimOffset(t.tokens[s.id], o, trim.AddPrefixSpace && (len(offs) == 0 || o.Start == 0))
				}
				offs = append(offs, o)
			}
			word++
		}
	})
	if err != nil {
		return Encoding{}, nil, err
	}
	added := 0
	if t.post != nil {
		added = t.post.Added(false)
	}
	if t.maxLen > 0 {
		e.truncate(max(t.maxLen-added, 0))
		offs = offs[:min(len(offs), len(e.IDs))]
	}
	if t.post == nil {
		return e, offs, nil
	}
	out := t.post.Process(&e, nil)
	all := make([]Offset, len(out.IDs))
	k := 0
	for i, w := range out.WordIDs {
		if w >= 0 {
			all[i] = offs[k]
			k++
		}
	}
	return out, all, nil
}
