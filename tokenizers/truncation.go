package tokenizers

import (
	"fmt"
)

// Truncation strategies (transformers' truncation=...), for a pair of texts.
const (
	// TruncateLongestFirst cuts the longer text to what the shorter one leaves, and both to
	// half when each is longer than that (see LongestFirst).
	TruncateLongestFirst = "longest_first"
	// TruncateOnlyFirst cuts only the first text.
	TruncateOnlyFirst = "only_first"
	// TruncateOnlySecond cuts only the second text.
	TruncateOnlySecond = "only_second"
)

// Truncation is how EncodeTruncated cuts an encoding that is too long, as the tokenizers
// library's truncation does for transformers' truncation=Strategy, max_length=MaxLen,
// stride=Stride, return_overflowing_tokens=True.
type Truncation struct {
	// MaxLen is the most ids of an encoding, special tokens included.
	MaxLen int
	// Strategy is TruncateLongestFirst (also when empty), TruncateOnlyFirst or
	// TruncateOnlySecond.
	Strategy string
	// Stride is the number of ids that a window of the overflow repeats from the one before.
	Stride int
}

// EncodeTruncated encodes a (and b, when given and not empty: a pair) with the
// post-processor's special tokens, cut as tr says, and returns the encoding followed by its
// overflowing windows, as transformers' return_overflowing_tokens=True returns them: a
// text's ids beyond what is kept make windows of the kept length, each repeating the last
// tr.Stride ids of the one before; for a pair, each window of a goes with each of b: first
// (a's first, b's first), then every later window of a with b's first and then with b's
// later ones, then a's first with b's later ones. It fails, as the library does, when
// only_second is asked for one text, when the text to cut is too short to bring the whole to
// MaxLen, when MaxLen cannot hold the special tokens, when Stride is above what MaxLen leaves
// one text, and when Stride is not below the length of a window that must be cut.
func (t *Tokenizer) EncodeTruncated(tr Truncation, a string, b ...string) ([]Encoding, error) {
	if len(b) > 1 {
		return nil, fmt.Errorf("tokenizers: EncodeTruncated takes one text or a pair, not %d texts", 1+len(b))
	}
	pair := len(b) == 1 && b[0] != ""
	added, single := 0, 0
	if t.post != nil {
		added, single = t.post.Added(pair), t.post.Added(false)
	}
	room := tr.MaxLen - added
	switch {
	case room < 0:
		// The library then does not truncate at all: an encoding longer than asked.
		return nil, fmt.Errorf("tokenizers: max length %d is below the %d special tokens", tr.MaxLen, added)
	case tr.Stride < 0:
		return nil, fmt.Errorf("tokenizers: stride %d is negative", tr.Stride)
	case tr.Stride > tr.MaxLen-single:
		return nil, fmt.Errorf("tokenizers: stride %d is above the %d ids a text keeps (max length %d less %d special tokens)",
			tr.Stride, tr.MaxLen-single, tr.MaxLen, single)
	}
	ea := t.encodeText(a)
	var eb Encoding
	if pair {
		eb = t.encodeText(b[0])
		for i := range eb.TypeIDs {
			eb.TypeIDs[i] = 1
		}
	}
	n1, n2 := len(ea.IDs), len(eb.IDs)
	k1, k2 := n1, n2
	if room == 0 {
		// The library cuts both texts to nothing, whatever the strategy: each is overflow.
		k1, k2 = 0, 0
	} else if n1+n2 > room {
		toRemove := n1 + n2 - room
		switch tr.Strategy {
		case "", TruncateLongestFirst:
			if pair {
				k1, k2 = LongestFirst(n1, n2, room)
			} else {
				k1 = room
			}
		case TruncateOnlyFirst, TruncateOnlySecond:
			if tr.Strategy == TruncateOnlySecond && !pair {
				return nil, fmt.Errorf("tokenizers: truncation only_second needs a pair of texts")
			}
			n, k := n1, &k1
			if tr.Strategy == TruncateOnlySecond {
				n, k = n2, &k2
			}
			if n <= toRemove {
				return nil, fmt.Errorf("tokenizers: truncation %s: the text to cut has %d ids, and %d must go for the whole to have %d",
					tr.Strategy, n, toRemove, tr.MaxLen)
			}
			*k = n - toRemove
		default:
			return nil, fmt.Errorf("tokenizers: truncation strategy %q is none of longest_first, only_first, only_second", tr.Strategy)
		}
	}
	wa, err := windows(ea, k1, tr.Stride)
	if err != nil {
		return nil, err
	}
	process := func(x, y *Encoding) Encoding {
		if t.post != nil {
			return t.post.Process(x, y)
		}
		var out Encoding
		for _, e := range []*Encoding{x, y} {
			if e != nil {
				out.IDs, out.TypeIDs, out.WordIDs = append(out.IDs, e.IDs...), append(out.TypeIDs, e.TypeIDs...), append(out.WordIDs, e.WordIDs...)
			}
		}
		return out
	}
	if !pair {
		out := make([]Encoding, len(wa))
		for i := range wa {
			out[i] = process(&wa[i], nil)
		}
		return out, nil
	}
	wb, err := windows(eb, k2, tr.Stride)
	if err != nil {
		return nil, err
	}
	out := []Encoding{process(&wa[0], &wb[0])}
	for i := 1; i < len(wa); i++ {
		for j := range wb {
			out = append(out, process(&wa[i], &wb[j]))
		}
	}
	for j := 1; j < len(wb); j++ {
		out = append(out, process(&wa[0], &wb[j]))
	}
	return out, nil
}

// windows cuts e into windows of keep ids, each after the first starting stride ids before
// the end of the one before (the library's Encoding.truncate with its overflowing); keep 0
// is an empty window with the whole as overflow.
func windows(e Encoding, keep, stride int) ([]Encoding, error) {
	n := len(e.IDs)
	if n <= keep {
		return []Encoding{e}, nil
	}
	if keep == 0 {
		return []Encoding{{}, e}, nil
	}
	if stride >= keep {
		return nil, fmt.Errorf("tokenizers: stride %d is not below the %d ids of a window", stride, keep)
	}
	var out []Encoding
	for start := 0; ; start += keep - stride {
		stop := min(start+keep, n)
		out = append(out, Encoding{IDs: e.IDs[start:stop:stop], TypeIDs: e.TypeIDs[start:stop:stop], WordIDs: e.WordIDs[start:stop:stop]})
		if stop == n {
			return out, nil
		}
	}
}
