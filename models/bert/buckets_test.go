package bert

import (
	"fmt"
	"slices"
	"testing"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/text"
)

// TestBucketsAcrossDevices: with WithBuckets, every device's batch of a global batch has the
// same shapes on 1, 2 and 4 replicas (a global batch is collated once and then split), and
// the padded length is the bucket of the longest text of the whole global batch.
func TestBucketsAcrossDevices(t *testing.T) {
	tok := microTokenizer(t, 16)
	bucketed, err := tok.WithBuckets(4, 8)
	if err != nil {
		t.Fatal(err)
	}
	// Short texts (2 tokens + [CLS], [SEP] = 4) with a long one (8 tokens + 2 = 10 -> 16) now
	// and then, so the replicas of one global batch see different longest texts.
	var ds data.Slice[text.Labeled]
	for i := range 40 {
		sentence := "the movie"
		if i%7 == 3 {
			sentence = "the movie was great the movie was great"
		}
		ds = append(ds, text.Labeled{Text: sentence, Label: i % 2})
	}
	for _, replicas := range []int{1, 2, 4} {
		for _, workers := range []int{0, 2} {
			t.Run(fmt.Sprintf("%d replicas %d workers", replicas, workers), func(t *testing.T) {
				l, err := data.NewLoader(ds, data.LoaderConfig[text.Labeled]{BatchSize: 2, Shuffle: true, Seed: 1,
					Workers: workers, Collate: bucketed.Collate})
				if err != nil {
					t.Fatal(err)
				}
				ranks := make([]int, replicas)
				for i := range ranks {
					ranks[i] = i
				}
				if err := l.Distribute(replicas, ranks); err != nil {
					t.Fatal(err)
				}
				lengths := map[int]bool{}
				for gb, err := range l.Epoch() {
					if err != nil {
						t.Fatal(err)
					}
					longest := 0
					for _, b := range gb.Shards {
						for _, i := range b.Indices {
							longest = max(longest, len(tok.Encode(ds[i].Text)))
						}
					}
					want := []int{2, 4}
					if longest > 4 {
						want = []int{2, 16}
					}
					lengths[want[1]] = true
					for r, b := range gb.Shards {
						for k, in := range b.Inputs {
							if got := in.Shape().Dimensions; !slices.Equal(got, want) {
								t.Fatalf("global batch %d, device %d, input %d: shape %v, want %v (the bucket of the global batch's longest text)",
									gb.Index, r, k, got, want)
							}
						}
						if got := b.Labels.Shape().Dimensions; !slices.Equal(got, []int{2}) {
							t.Fatalf("global batch %d, device %d: labels shape %v", gb.Index, r, got)
						}
					}
				}
				if !lengths[4] || !lengths[16] {
					t.Errorf("padded lengths %v: want both buckets used (the test data should mix them)", lengths)
				}
			})
		}
	}
}
