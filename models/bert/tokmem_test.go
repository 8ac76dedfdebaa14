package bert_test

import (
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/models/bert"
	"github.com/goaccel/goaccel/tokenizers"
)

// longText is about n bytes of English-like text with a few accents and special tokens.
func longText(n int) string {
	const s = "A charming, often hilarious movie: café résumé [MASK] <mask> don't   stop\tbelieving! "
	return strings.Repeat(s, n/len(s)+1)[:n]
}

// measure runs f once and returns the bytes it allocated, the most the heap grew (sampled
// every millisecond, with a GC target of 5%) and the time it took.
func measure(f func()) (total, peak uint64, elapsed time.Duration) {
	// A small GC target, so that the live heap's growth is what f holds, not the garbage a
	// collection would have taken.
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	done := make(chan uint64)
	stop := make(chan struct{})
	go func() {
		var most uint64
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				done <- most
				return
			case <-time.After(time.Millisecond):
				runtime.ReadMemStats(&m)
				most = max(most, m.HeapAlloc)
			}
		}
	}()
	start := time.Now()
	f()
	elapsed = time.Since(start)
	close(stop)
	most := <-done
	runtime.ReadMemStats(&after)
	if most > before.HeapAlloc {
		peak = most - before.HeapAlloc
	}
	return after.TotalAlloc - before.TotalAlloc, peak, elapsed
}

// TestLongTextMemory: encoding a 4 MB text at max_len 128 reads only what the truncated
// encoding needs (Encode), or keeps only the tokens the truncation may keep (EncodePair,
// which needs both texts' lengths): it allocates a bounded amount, not ~60 bytes per byte of
// text, and gives exactly the ids of the whole text's encoding truncated. The figures are
// logged (go test -v).
func TestLongTextMemory(t *testing.T) {
	text := longText(4 << 20)
	vocabDir := filepath.Join("..", "auto", "testdata", "ner_bert")
	for _, c := range []struct{ name, dir string }{{"WordPiece", vocabDir}, {"BPE", filepath.Join("testdata", "roberta_bpe")}} {
		tok, err := bert.LoadTokenizer(c.dir, 128)
		if err != nil {
			t.Fatal(err)
		}
		var ids, pair, types []int32
		single, singlePeak, dt := measure(func() { ids = tok.Encode(text) })
		pairBytes, pairPeak, dtPair := measure(func() { pair, types = tok.EncodePair(text, text[:len(text)/3]) })
		t.Logf("%s, 4 MiB text, max_len 128: Encode allocates %.1f MB (live heap +%.1f MB) in %v; "+
			"EncodePair (4 MiB + 1.3 MiB) %.1f MB (live heap +%.1f MB) in %v", c.name, float64(single)/1e6, float64(singlePeak)/1e6,
			dt.Round(time.Millisecond), float64(pairBytes)/1e6, float64(pairPeak)/1e6, dtPair.Round(time.Millisecond))
		if single > 8<<20 {
			t.Errorf("%s: Encode of a 4 MiB text allocated %d bytes, want at most 8 MiB", c.name, single)
		}
		if pairPeak > 8<<20 {
			t.Errorf("%s: EncodePair of 4 + 1.3 MiB grew the live heap by %d bytes, want at most 8 MiB", c.name, pairPeak)
		}
		// The same ids as the whole text's tokens truncated (Tokenize does not truncate).
		all := tok.Tokenize(text)
		if want := len(all); want < 1000 {
			t.Fatalf("%s: only %d tokens", c.name, want)
		}
		for i, tk := range all[:126] {
			if id, _ := tok.ID(tk); ids[i+1] != id {
				t.Fatalf("%s: Encode's id %d is %d, the whole text's token %q", c.name, i+1, ids[i+1], tk)
			}
		}
		short, _ := tok.EncodePair(text[:6000], text[:2000])
		if got, _ := tok.EncodePair(text[:6000], text[:2000]); !slices.Equal(got, short) || len(pair) != 128 || len(types) != 128 {
			t.Errorf("%s: EncodePair gave %d ids, %d type ids", c.name, len(pair), len(types))
		}
	}
}

// TestLongTextChunksExact: a long text encoded chunk by chunk (Encode and EncodePair of texts
// longer than the chunks) gives exactly the ids of the whole text's tokens (Tokenize, which
// encodes it whole), around added tokens that strip the spaces beside them, runs of spaces,
// tabs, combining marks after a space and ideographs.
func TestLongTextChunksExact(t *testing.T) {
	pieces := []string{"hyperparam", " hyperparam ", "<mask>", " <mask>", "GoAccel", " ", "  ", "\t", " \u0301", "café", "東京",
		"Paramount", "word", "don't", "!", "\u00a0", "[MASK]", "x", " y", "ﬁ", "İ"}
	r := rand.New(rand.NewPCG(1, 2))
	var texts []string
	for range 6 {
		var b strings.Builder
		for b.Len() < 40000 {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		texts = append(texts, b.String())
	}
	for _, dir := range []string{filepath.Join("..", "auto", "testdata", "ner_bert"), filepath.Join("testdata", "roberta_bpe")} {
		tok, err := bert.LoadTokenizer(dir, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		whole := func(text string) []int32 {
			var ids []int32
			for _, tk := range tok.Tokenize(text) {
				id, _ := tok.ID(tk)
				ids = append(ids, id)
			}
			return ids
		}
		for i, text := range texts {
			want := whole(text)
			if got := tok.Encode(text); !slices.Equal(got[1:len(got)-1], want) {
				t.Errorf("%s, text %d: Encode in chunks differs from the whole text's %d tokens (%d ids)", dir, i, len(want), len(got)-2)
			}
			short, err := bert.LoadTokenizer(dir, 300)
			if err != nil {
				t.Fatal(err)
			}
			b := texts[(i+1)%len(texts)][:20000+i*3000]
			ids, _ := short.EncodePair(text, b)
			wa, wb := want, whole(b)
			room := 300 - 3 // BERT: [CLS] a [SEP] b [SEP]
			if short.Kind() == "BPE" {
				room = 300 - 4 // RoBERTa: <s> a </s></s> b </s>
			}
			k1, k2 := tokenizers.LongestFirst(len(wa), len(wb), room)
			if got := slices.Concat(ids[1:1+k1], ids[len(ids)-1-k2:len(ids)-1]); !slices.Equal(got, slices.Concat(wa[:k1], wb[:k2])) {
				t.Errorf("%s, text %d: EncodePair in chunks differs from the whole texts' tokens truncated", dir, i)
			}
		}
	}
}
