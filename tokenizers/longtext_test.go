package tokenizers

import (
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLongTextUnigram: a 4 MiB text at max length 128 is read only as far as the truncated
// encoding needs (Encode), and a pair holds at most MaxLen ids of each text; both give the
// ids, type ids and word ids of the whole texts' encoding (EncodeOffsets encodes them whole)
// truncated, on the XLM-R and DeBERTa fixtures (Precompiled, Strip, Replace, Metaspace).
// The figures are logged (go test -v).
func TestLongTextUnigram(t *testing.T) {
	pieces := []string{"hello", " world", "  ", "\t", " \u0301", "café", "東京", "<mask>", " <mask>", "don't", "!", "\u00a0", "ﬁ", "İ", " x", "\u3000"}
	r := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	for b.Len() < 4<<20 {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	long := b.String()
	for _, name := range []string{"xlmr", "deberta"} {
		tok, err := Load(filepath.Join("testdata", name, "tokenizer.json"))
		if err != nil {
			t.Fatal(err)
		}
		if tok, err = tok.WithMaxLen(128); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		e := tok.Encode(long)
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: Encode of a 4 MiB text at max length 128 allocates %.1f MB in %v", name, float64(alloc)/1e6, elapsed.Round(time.Millisecond))
		if len(e.IDs) != 128 {
			t.Errorf("%s: Encode gave %d ids, want 128", name, len(e.IDs))
		}
		if alloc > 8<<20 {
			t.Errorf("%s: Encode of a 4 MiB text allocated %d bytes, want at most 8 MiB", name, alloc)
		}
		// Exactly the whole text's encoding, truncated; texts longer than the chunks.
		for i := range 4 {
			a, bb := long[i*50000:i*50000+40000+i*977], long[300000+i*1000:300000+i*1000+30000]
			whole, _, err := tok.withMaxLenOrSelf(0).EncodeOffsets(a)
			if err != nil {
				t.Fatal(err)
			}
			big, _ := tok.WithMaxLen(1 << 20)
			if got := big.Encode(a); !slices.Equal(got.IDs, whole.IDs) || !slices.Equal(got.WordIDs, whole.WordIDs) {
				t.Errorf("%s, text %d: Encode in chunks differs from the whole text's %d ids (%d ids)", name, i, len(whole.IDs), len(got.IDs))
			}
			wb, _, _ := tok.withMaxLenOrSelf(0).EncodeOffsets(bb)
			strip := func(e Encoding) Encoding { // without the post-processor's <s> ... </s>
				return Encoding{IDs: e.IDs[1 : len(e.IDs)-1], TypeIDs: e.TypeIDs[1 : len(e.IDs)-1], WordIDs: e.WordIDs[1 : len(e.IDs)-1]}
			}
			wa, wbb := strip(whole), strip(wb)
			k1, k2 := LongestFirst(len(wa.IDs), len(wbb.IDs), 128-tok.post.Added(true))
			wa.truncate(k1)
			wbb.truncate(k2)
			want := tok.post.Process(&wa, &wbb)
			if got := tok.EncodePair(a, bb); !slices.Equal(got.IDs, want.IDs) || !slices.Equal(got.WordIDs, want.WordIDs) || !slices.Equal(got.TypeIDs, want.TypeIDs) {
				t.Errorf("%s, text %d: EncodePair in chunks differs from the whole texts' truncated", name, i)
			}
		}
	}
}

// withMaxLenOrSelf is WithMaxLen(n), or t when n is not a valid length.
func (t *Tokenizer) withMaxLenOrSelf(n int) *Tokenizer {
	c, err := t.WithMaxLen(n)
	if err != nil {
		return t
	}
	return c
}
