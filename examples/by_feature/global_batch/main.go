// Command global_batch is examples/quickstart with a fixed global batch: 64 examples per update
// whatever the topology, so that one device, four, or two processes of two compute the same losses
// and weights. The lines marked "New code" are what differs from examples/quickstart/main.go.
//
//	GOACCEL_DEVICES=1 go run ./examples/by_feature/global_batch
//	GOACCEL_DEVICES=4 go run ./examples/by_feature/global_batch # the same losses
package main

import (
	"flag"
	"log"
	"math/rand/v2"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	_ "github.com/goaccel/goaccel/hostmalloc" // GOACCEL_HOST_MALLOC=keep: glibc keeps XLA's freed memory for reuse
	"github.com/goaccel/goaccel/metrics"
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
	steps := flag.Int("steps", 0, "stop after this many training batches (0: 3 epochs)")
	flag.Parse()
	rng := rand.New(rand.NewPCG(1, 2))
	points := make([]point, 2000)
	for i := range points {
		x, y := rng.Float32()*2-1, rng.Float32()*2-1
		points[i] = point{x, y, map[bool]int32{true: 1}[x*x+y*y < 0.5]}
	}
	train, test, err := data.Split(data.FromSlice(points), 0.1, 42)
	check(err)

	acc, err := accelerator.New(accelerator.Config{Seed: 42}) // finds GPUs, else CPU devices, else pure Go
	check(err)
	defer acc.Close() // leaves the process group when launched as several processes
	// New code: GlobalBatchSize instead of BatchSize: the loader splits each global batch of 64
	// over the devices and processes found (64 / replicas each, which must divide it).
	loader, err := data.NewLoader(train, data.LoaderConfig[point]{GlobalBatchSize: 64, Shuffle: true, Seed: 42, Collate: collate})
	check(err)
	testLoader, err := data.NewLoader(test, data.LoaderConfig[point]{BatchSize: 32, Collate: collate})
	check(err)
	job, err := acc.Prepare(model.NewStore(), optimizer.Adam().LearningRate(1e-2).Done(), loader)
	check(err)

	trainStep := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *Node {
		l := accelerator.CrossEntropy(logits(s, b.Inputs[0]), b.Labels, b.Mask)
		acc.Backward(s, l) // gradients, mean over the global batch, Adam update
		return l
	})
	evalStep := job.EvalStep(func(s *model.Scope, b accelerator.GraphBatch) []*Node {
		return []*Node{logits(s, b.Inputs[0])}
	})
	done := 0
	for epoch := range 3 {
		var last float64
		for batch, err := range job.Batches() {
			check(err)
			loss, err := trainStep.Run(batch)
			check(err)
			last, err = loss.Value()
			check(err)
			if done++; done == *steps {
				break
			}
		}
		res, err := job.Evaluate(testLoader, evalStep) // example order, padding dropped
		check(err)
		preds, err := res.Argmax(0)
		check(err)
		labels, err := res.IntLabels()
		check(err)
		accuracy, err := metrics.Accuracy(preds, labels, nil)
		check(err)
		acc.Printf("epoch %d  loss %.6f  test accuracy %.3f (%d examples)", epoch+1, last, accuracy, len(preds))
		if done == *steps {
			break
		}
	}
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
