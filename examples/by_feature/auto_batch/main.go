// Command auto_batch is examples/quickstart with auto batch: the global batch kept and the per-
// device batch fitted to a device memory budget (Config.DeviceMemory or $GOACCEL_DEVICE_MEMORY),
// as micro-batches whose gradients make the one update. The lines marked "New code" are what
// differs from examples/quickstart/main.go.
//
//	GOACCEL_DEVICE_MEMORY=64KiB go run ./examples/by_feature/auto_batch
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
	loader, err := data.NewLoader(train, data.LoaderConfig[point]{BatchSize: 32, Shuffle: true, Seed: 42, Collate: collate})
	check(err)
	testLoader, err := data.NewLoader(test, data.LoaderConfig[point]{BatchSize: 32, Collate: collate})
	check(err)
	// New code: WithAutoBatch picks, before the first step, the largest per-device batch whose
	// memory plan fits the budget; without a budget, or when all fits, nothing changes.
	job, err := acc.Prepare(model.NewStore(), optimizer.Adam().LearningRate(1e-2).Done(), loader, accelerator.WithAutoBatch())
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
		// New code: the plan of the step as it runs (its per-device batch may be smaller).
		if epoch == 0 {
			plan, err := job.MemoryPlan()
			check(err)
			acc.Printf("per-device batch %d of 32, memory plan %d bytes", plan.PerDeviceBatch, plan.Total())
		}
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
