// Command quickstart is the README's complete goaccel program: a small classifier trained
// data-parallel on whatever devices are found, evaluated with gathered, padding-free accuracy.
//
//	go run ./examples/quickstart                 # best backend found
//	GOACCEL_DEVICES=4 go run ./examples/quickstart # 4 XLA CPU devices, same result
//	GOACCEL_MIXED_PRECISION=bf16 go run ./examples/quickstart # or fp16: 16-bit activations, float32 weights
//	go run ./examples/quickstart --nproc 4       # 4 processes (ranks) over MPI, started by the program itself
package main

import (
	"log"
	"math/rand/v2"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	_ "github.com/goaccel/goaccel/hostmalloc" // GOACCEL_HOST_MALLOC=keep: glibc keeps XLA's freed memory for reuse
	"github.com/goaccel/goaccel/metrics"
	"github.com/goaccel/goaccel/spawn"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// point is one example: two coordinates and whether it lies inside the unit circle.
type point struct {
	x, y  float32
	label int32
}

func collate(batch []point) ([]*tensors.Tensor, *tensors.Tensor, error) {
	xs := make([][]float32, len(batch))
	ys := make([]int32, len(batch))
	for i, p := range batch {
		xs[i], ys[i] = []float32{p.x, p.y}, p.label
	}
	return []*tensors.Tensor{tensors.FromValue(xs)}, tensors.FromValue(ys), nil
}

func logits(s *model.Scope, x *Node) *Node {
	h := Tanh(layers.Dense(s.In("hidden"), x, true, 32))
	return layers.Dense(s.In("out"), h, true, 2)
}

func main() {
	spawn.Ranks() // --nproc N: run as N ranks, as `goaccel launch --nproc_per_node N` would (torchrun's mp.spawn)
	rng := rand.New(rand.NewPCG(1, 2))
	points := make([]point, 2000)
	for i := range points {
		x, y := rng.Float32()*2-1, rng.Float32()*2-1
		points[i] = point{x, y, map[bool]int32{true: 1}[x*x+y*y < 0.5]}
	}
	train, test, err := data.Split(data.FromSlice(points), 0.1, 42)
	check(err)

	// README:begin (the README's quickstart is this block, checked by readme_test.go)
	acc, err := accelerator.New(accelerator.Config{Seed: 42}) // finds GPUs, else CPU devices, else pure Go
	check(err)
	defer acc.Close() // leaves the process group when launched as several processes
	loader, err := data.NewLoader(train, data.LoaderConfig[point]{BatchSize: 32, Shuffle: true, Seed: 42, Collate: collate})
	check(err)
	testLoader, err := data.NewLoader(test, data.LoaderConfig[point]{BatchSize: 32, Collate: collate})
	check(err)
	job, err := acc.Prepare(model.NewStore(), optimizer.Adam().LearningRate(1e-2).Done(), loader)
	check(err)

	// Compile the training and evaluation steps once; run them on every global batch.
	trainStep := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *Node {
		l := accelerator.CrossEntropy(logits(s, b.Inputs[0]), b.Labels, b.Mask)
		acc.Backward(s, l) // gradients, mean over the global batch, Adam update
		return l
	})
	evalStep := job.EvalStep(func(s *model.Scope, b accelerator.GraphBatch) []*Node {
		return []*Node{logits(s, b.Inputs[0])}
	})
	for epoch := range 5 {
		var last float64
		for batch, err := range job.Batches() { // sharded over the devices; the epoch advances by itself
			check(err)
			loss, err := trainStep.Run(batch)
			check(err)
			last, err = loss.Value()
			check(err)
		}
		res, err := job.Evaluate(testLoader, evalStep) // example order, padding dropped
		check(err)
		preds, err := res.Argmax(0)
		check(err)
		labels, err := res.IntLabels()
		check(err)
		accuracy, err := metrics.Accuracy(preds, labels, nil)
		check(err)
		acc.Printf("epoch %d  loss %.6g  test accuracy %.3f (%d examples)", epoch+1, last, accuracy, len(preds))
	}
	// README:end
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
