// Command activation_checkpointing is examples/quickstart with activation checkpointing, on the
// one model that has it: a tiny BERT classifier (models/bert) on the built-in sentiment
// sentences, whose encoder layers keep only their inputs for the backward pass and recompute
// the rest (Hugging Face's gradient_checkpointing_enable()): less memory per device, the same
// gradients, a longer step. The lines marked "New code" are what differs from
// examples/quickstart/main.go.
//
//	go run ./examples/by_feature/activation_checkpointing
package main

import (
	"flag"
	"log"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/text"
	_ "github.com/goaccel/goaccel/hostmalloc" // GOACCEL_HOST_MALLOC=keep: glibc keeps XLA's freed memory for reuse
	"github.com/goaccel/goaccel/metrics"
	"github.com/goaccel/goaccel/models/bert/sample"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

func main() {
	steps := flag.Int("steps", 0, "stop after this many training batches (0: 3 epochs)")
	flag.Parse()
	// New code: text data and a BERT model instead of the points and the MLP.
	train, test, err := data.Split(sample.Polarity(), 0.1, 42)
	check(err)
	store := model.NewStore()
	clf, tok, err := sample.TinyClassifier(store, 32)
	check(err)
	// New code: activation checkpointing, read when the training graph is built.
	clf.Config.GradientCheckpointing = true

	acc, err := accelerator.New(accelerator.Config{Seed: 42}) // finds GPUs, else CPU devices, else pure Go
	check(err)
	defer acc.Close() // leaves the process group when launched as several processes
	loader, err := data.NewLoader(train, data.LoaderConfig[text.Labeled]{BatchSize: 16, Shuffle: true, Seed: 42, Collate: tok.Collate})
	check(err)
	testLoader, err := data.NewLoader(test, data.LoaderConfig[text.Labeled]{BatchSize: 16, Collate: tok.Collate})
	check(err)
	job, err := acc.Prepare(clf, optimizer.Adam().LearningRate(1e-3).Done(), loader)
	check(err)

	trainStep := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *Node {
		l := accelerator.CrossEntropy(clf.Logits(s, b.Inputs), b.Labels, b.Mask)
		acc.Backward(s, l) // gradients, mean over the global batch, Adam update
		return l
	})
	evalStep := job.EvalStep(func(s *model.Scope, b accelerator.GraphBatch) []*Node {
		return []*Node{clf.Logits(s, b.Inputs)}
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
