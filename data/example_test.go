package data_test

import (
	"fmt"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/text"
	"github.com/gomlx/gomlx/core/tensors"
)

// A loader over 10 labeled texts, split 80/20, shared by 2 replicas with batches of 3
// examples: the last global batch is completed with padding, marked in Real.
func ExampleNewLoader() {
	var all data.Slice[text.Labeled]
	for i := range 10 {
		all = append(all, text.Labeled{Text: fmt.Sprintf("text %d", i), Label: i % 2})
	}
	train, _, err := data.Split(all, 0.2, 1)
	if err != nil {
		panic(err)
	}
	collate := func(ex []text.Labeled) ([]*tensors.Tensor, *tensors.Tensor, error) {
		lens, labels := make([]int32, len(ex)), make([]int32, len(ex))
		for i, e := range ex {
			lens[i], labels[i] = int32(len(e.Text)), int32(e.Label)
		}
		return []*tensors.Tensor{tensors.FromValue(lens)}, tensors.FromValue(labels), nil
	}
	loader, err := data.NewLoader(train, data.LoaderConfig[text.Labeled]{BatchSize: 3, Collate: collate})
	if err != nil {
		panic(err)
	}
	if err := loader.Distribute(2, []int{0, 1}); err != nil {
		panic(err)
	}
	for gb, err := range loader.Epoch() {
		if err != nil {
			panic(err)
		}
		for r, b := range gb.Shards {
			// Epoch and Index count from 0 in the API; people read them from 1.
			fmt.Printf("epoch %d global batch %d replica %d: indices %v real %v\n", gb.Epoch+1, gb.Index+1, r, b.Indices, b.Real)
		}
	}
	fmt.Printf("%+v\n", loader.State())
	// Output:
	// epoch 1 global batch 1 replica 0: indices [0 2 4] real [true true true]
	// epoch 1 global batch 1 replica 1: indices [1 3 5] real [true true true]
	// epoch 1 global batch 2 replica 0: indices [6 6 6] real [true false false]
	// epoch 1 global batch 2 replica 1: indices [7 7 7] real [true false false]
	// {Epoch:1 BatchesConsumed:0 Seed:0 NumReplicas:2 ExamplesConsumed:0 GlobalBatchSize:0}
}
