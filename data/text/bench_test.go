package text

import (
	"fmt"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/testutil"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gomlx/gomlx/core/tensors"
)

// BenchmarkParseTSV streams a generated 20 MiB TSV file through OpenLines + LabeledTSV.
func BenchmarkParseTSV(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.tsv")
	lines := writeTSV(b, path, 20<<20)
	st, _ := os.Stat(path)
	f, err := OpenLines(path, LabeledTSV(0, 1), LineOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ResetTimer()
	for b.Loop() {
		n := 0
		for _, err := range f.All() {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != lines {
			b.Fatalf("%d lines, want %d", n, lines)
		}
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// whitespaceCollate stands in for a BERT tokenizer: words (split on whitespace) hashed into a
// 30,522-id vocabulary, [CLS] ... [SEP], padded to the bucket length of the longest row;
// inputs are input ids, attention mask and token type ids, int32 [B, L], labels int32 [B].
func whitespaceCollate(examples []Labeled) ([]*tensors.Tensor, *tensors.Tensor, error) {
	const cls, sep, vocab, maxLen = 101, 102, 30522, 128
	rows := make([][]int32, len(examples))
	longest := 0
	for i, ex := range examples {
		words := strings.Fields(ex.Text)
		ids := make([]int32, 0, len(words)+2)
		ids = append(ids, cls)
		for _, w := range words {
			h := uint32(2166136261) // FNV-1a
			for k := 0; k < len(w); k++ {
				h = (h ^ uint32(w[k])) * 16777619
			}
			ids = append(ids, int32(1000+h%(vocab-1000)))
		}
		ids = append(ids, sep)
		rows[i] = ids
		longest = max(longest, len(ids))
	}
	l := data.BucketLength(longest, []int{32, 64, maxLen})
	ids := make([]int32, 0, len(rows)*l)
	mask := make([]int32, len(rows)*l)
	labels := make([]int32, len(rows))
	for i, r := range rows {
		ids = append(ids, data.PadTo(r, l, 0)...)
		for j := range min(len(r), l) {
			mask[i*l+j] = 1
		}
		labels[i] = int32(examples[i].Label)
	}
	b := len(rows)
	return []*tensors.Tensor{
		tensors.FromFlatDataAndDimensions(ids, b, l),
		tensors.FromFlatDataAndDimensions(mask, b, l),
		tensors.FromFlatDataAndDimensions(make([]int32, b*l), b, l),
	}, tensors.FromFlatDataAndDimensions(labels, b), nil
}

// BenchmarkLoaderPolarity collates epochs of the real rt-polarity data (10,662 examples,
// shuffled, batch 32) with the whitespace collate above, with 0, 1 and 2 workers.
func BenchmarkLoaderPolarity(b *testing.B) {
	dir := testutil.PolarityDir(b)
	ds, err := LoadPolarity(filepath.Join(dir, "rt-polarity.pos"), filepath.Join(dir, "rt-polarity.neg"))
	if err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{0, 1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			l, err := data.NewLoader[Labeled](ds, data.LoaderConfig[Labeled]{BatchSize: 32, Shuffle: true, Seed: 1,
				Workers: workers, Collate: whitespaceCollate})
			if err != nil {
				b.Fatal(err)
			}
			real := 0
			for b.Loop() {
				for st, err := range l.Epoch() {
					if err != nil {
						b.Fatal(err)
					}
					real += st.Shards[0].NumReal()
				}
			}
			b.ReportMetric(float64(real)/b.Elapsed().Seconds(), "examples/s")
		})
	}
	// The same with a consumer that is busy for 60 µs per step (a stand-in for a training
	// step): with workers, collation overlaps with it.
	for _, workers := range []int{0, 1, 2} {
		b.Run(fmt.Sprintf("busy-consumer/workers=%d", workers), func(b *testing.B) {
			l, err := data.NewLoader[Labeled](ds, data.LoaderConfig[Labeled]{BatchSize: 32, Shuffle: true, Seed: 1,
				Workers: workers, Collate: whitespaceCollate})
			if err != nil {
				b.Fatal(err)
			}
			real := 0
			for b.Loop() {
				for st, err := range l.Epoch() {
					if err != nil {
						b.Fatal(err)
					}
					real += st.Shards[0].NumReal()
					for t := time.Now(); time.Since(t) < 60*time.Microsecond; {
					}
				}
			}
			b.ReportMetric(float64(real)/b.Elapsed().Seconds(), "examples/s")
		})
	}
}
