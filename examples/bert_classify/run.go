package main

import (
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/metrics"
	"github.com/goaccel/goaccel/models/bert"
	"github.com/goaccel/goaccel/trainer"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// sample is the built-in sentiment data (sentences written for this project) and the vocabulary
// of the tiny default model.
//
//go:embed data/sample.pos data/sample.neg data/vocab.txt
var sample embed.FS

// options are the program's flags.
type options struct {
	DataDir, ModelDir, OutputDir, MixedPrecision, Backend string
	Fit                                                   bool   // use trainer.Fit instead of the hand-written loop
	Schedule                                              string // learning-rate schedule of --fit
	WarmupSteps, SaveEvery                                int64
	Epochs, BatchSize, MaxLen, Devices, Workers, MaxSteps int
	LR, TestSize, Dropout                                 float64
	Seed                                                  int64
}

func defaultOptions() options {
	return options{Epochs: 3, BatchSize: 64, MaxLen: 64, Seed: 42, TestSize: 0.1, MixedPrecision: "no", Workers: 2, Dropout: -1,
		Schedule: "constant"}
}

// result is what a run reports (and what the tests check).
type result struct {
	EpochLoss     []float64 // mean training loss of each epoch
	StepLoss      []float64 // every step's loss
	Accuracy      []float64 // test accuracy after each epoch
	Best          float64
	BestEpoch     int
	ExamplesPerS  float64 // training examples per second over the whole run
	TestExamples  int
	OutputDir     string
	TrainExamples int
}

// run is the whole program: everything a reader of the PyTorch script looks for is here, in
// the same order — setup, data and sampler, model, optimizer, the epoch loop of train() and
// test(), rank-0 printing and saving, the best accuracy.
func run(o options, out io.Writer) (*result, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	// Setup: finds the devices (GPUs, else XLA CPU devices, else pure Go) and prints the plan.
	acc, err := accelerator.New(accelerator.Config{Backend: o.Backend, Devices: o.Devices,
		MixedPrecision: o.MixedPrecision, Seed: o.Seed, Output: out})
	if err != nil {
		return nil, err
	}
	defer acc.Close()

	// Data: sentences from x.pos / x.neg, split 90/10 with the seed.
	all, err := loadSentences(o.DataDir)
	if err != nil {
		return nil, err
	}
	trainSet, testSet, err := data.Split(all, o.TestSize, o.Seed)
	if err != nil {
		return nil, err
	}

	// Model and tokenizer: pretrained weights with a fresh classification head, or a tiny
	// random BERT over the built-in vocabulary.
	store := model.NewStore()
	clf, tok, err := loadModel(o, store)
	if err != nil {
		return nil, err
	}
	if o.Dropout >= 0 {
		clf.Config.HiddenDropoutProb, clf.Config.AttentionProbsDropoutProb = o.Dropout, o.Dropout
		clf.Config.ClassifierDropout = &o.Dropout
	}

	// Loaders: the DistributedSampler lives inside; the test loader is not shuffled.
	trainLoader, err := data.NewLoader(trainSet, data.LoaderConfig[data.Labeled]{
		BatchSize: o.BatchSize, Shuffle: true, Seed: o.Seed, Workers: o.Workers, Collate: tok.Collate})
	if err != nil {
		return nil, err
	}
	testLoader, err := data.NewLoader(testSet, data.LoaderConfig[data.Labeled]{
		BatchSize: o.BatchSize, Workers: o.Workers, Collate: tok.Collate})
	if err != nil {
		return nil, err
	}

	lr := o.learningRate()
	if o.Fit {
		return fitRun(acc, o, lr, clf, trainLoader, testLoader, out)
	}

	// Optimizer and Prepare: variables replicated on every device, batches sharded.
	job, err := acc.Prepare(clf, optimizer.Adam().LearningRate(lr).Done(), trainLoader)
	if err != nil {
		return nil, err
	}
	// The training and evaluation steps, compiled once for the job's devices.
	trainStep := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *Node {
		loss := accelerator.CrossEntropy(clf.Logits(s, b.Inputs), b.Labels, b.Mask)
		acc.Backward(s, loss) // gradients, mean over the global batch, Adam update
		return loss
	})
	evalStep := job.EvalStep(func(s *model.Scope, b accelerator.GraphBatch) []*Node {
		return []*Node{clf.Logits(s, b.Inputs)}
	})
	run, err := newRunDir(acc, o, lr, clf, job)
	if err != nil {
		return nil, err
	}
	acc.Printf("training on %d sentences, testing on %d; run directory %s", trainSet.Len(), testSet.Len(), run.dir)

	res := &result{OutputDir: run.dir, TrainExamples: trainSet.Len(), TestExamples: testSet.Len(), BestEpoch: -1}
	var trainTime time.Duration
	var trained int
	for epoch := 1; epoch <= o.Epochs; epoch++ {
		start := time.Now()
		losses, examples, err := train(job, trainStep, o.MaxSteps, run, epoch)
		if err != nil {
			return nil, err
		}
		trainTime += time.Since(start)
		trained += examples
		accuracy, err := test(job, evalStep, testLoader)
		if err != nil {
			return nil, err
		}
		res.StepLoss = append(res.StepLoss, losses...)
		res.EpochLoss = append(res.EpochLoss, mean(losses))
		res.Accuracy = append(res.Accuracy, accuracy)
		acc.Printf("epoch %d: train loss %.4f  test accuracy %.4f  (%.0f examples/s, %s)", epoch, mean(losses),
			accuracy, float64(examples)/time.Since(start).Seconds(), time.Since(start).Round(time.Millisecond))
		if err := run.logEval(job, epoch, accuracy); err != nil {
			return nil, err
		}
		if accuracy > res.Best || res.BestEpoch < 0 {
			res.Best, res.BestEpoch = accuracy, epoch
			// Only the main process writes; the others wait (a no-op with one process).
			if acc.IsMainProcess() {
				if err := bert.SavePretrained(filepath.Join(run.dir, "best"), clf, tok); err != nil {
					return nil, err
				}
			}
			if err := acc.WaitForEveryone(); err != nil {
				return nil, err
			}
		}
	}
	res.ExamplesPerS = float64(trained) / trainTime.Seconds()
	acc.Printf("best test accuracy %.4f (epoch %d); %.0f training examples/s; best model in %s",
		res.Best, res.BestEpoch, res.ExamplesPerS, filepath.Join(run.dir, "best"))
	if acc.IsMainProcess() {
		if _, err := trainer.Plot(run.dir); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// fitRun is the same training with the trainer package's loop instead of the hand-written
// one: progress bars, metrics.jsonl, checkpoints (resumable: give the same --output_dir
// again), the best model by accuracy and the curves.
func fitRun(acc *accelerator.Accelerator, o options, lr float64, clf *bert.Classifier,
	trainLoader, testLoader data.Source, out io.Writer) (*result, error) {
	dir := o.OutputDir
	if dir == "" {
		dir = filepath.Join("runs", "bert_classify-fit-"+time.Now().Format("20060102-150405"))
	}
	tr, err := trainer.New(acc, clf, optimizer.Adam().LearningRate(lr).Done(), trainer.Classification(2, clf.Logits))
	if err != nil {
		return nil, err
	}
	res, err := tr.Fit(trainLoader, testLoader, trainer.Config{
		OutputDir: dir, Epochs: o.Epochs, MaxSteps: int64(o.MaxSteps), LearningRate: lr,
		Schedule: o.Schedule, WarmupSteps: o.WarmupSteps, SaveEvery: o.SaveEvery, BestMetric: "accuracy", Output: out,
		Extra: map[string]any{"data_dir": o.DataDir, "model_dir": o.ModelDir, "batch_size": o.BatchSize,
			"max_len": o.MaxLen, "seed": o.Seed, "test_size": o.TestSize, "dropout": o.Dropout},
	})
	if err != nil {
		return nil, err
	}
	acc.Printf("best test accuracy %.4f at step %d; checkpoint %s", res.Best, res.BestStep, res.BestCheckpoint)
	return &result{Best: res.Best, OutputDir: res.RunDir}, nil
}

// train runs one epoch (the sampler's epoch advances by itself) and returns the step losses
// and the number of real training examples seen.
func train(job *accelerator.Job, step *accelerator.TrainStep, maxSteps int, run *runDir, epoch int) ([]float64, int, error) {
	var losses []float64
	examples, sinceLog := 0, time.Now()
	var window []float64
	windowExamples := 0
	for batch, err := range job.Batches() {
		if err != nil {
			return nil, 0, err
		}
		loss, err := step.Run(batch)
		if err != nil {
			return nil, 0, err
		}
		l, err := loss.Value()
		if err != nil {
			return nil, 0, err
		}
		n := 0
		for _, sh := range batch.Shards {
			n += sh.NumReal()
		}
		losses, window = append(losses, l), append(window, l)
		examples += n
		windowExamples += n
		if len(window) == 10 || (maxSteps > 0 && len(losses) == maxSteps) {
			if err := run.logTrain(job, epoch, mean(window), float64(windowExamples)/time.Since(sinceLog).Seconds()); err != nil {
				return nil, 0, err
			}
			window, windowExamples, sinceLog = nil, 0, time.Now()
		}
		if maxSteps > 0 && len(losses) == maxSteps {
			break
		}
	}
	if len(window) > 0 {
		if err := run.logTrain(job, epoch, mean(window), float64(windowExamples)/time.Since(sinceLog).Seconds()); err != nil {
			return nil, 0, err
		}
	}
	return losses, examples, nil
}

// test evaluates on the whole test set: predictions gathered from every device in example
// order, the sampler's padding dropped, so each test sentence counts exactly once.
func test(job *accelerator.Job, eval *accelerator.EvalStep, testLoader data.Source) (float64, error) {
	res, err := job.Evaluate(testLoader, eval)
	if err != nil {
		return 0, err
	}
	preds, err := res.Argmax(0)
	if err != nil {
		return 0, err
	}
	labels, err := res.IntLabels()
	if err != nil {
		return 0, err
	}
	return metrics.Accuracy(preds, labels, nil)
}

// loadSentences reads <dir>/<name>.pos and <dir>/<name>.neg (label 1 and 0); with no dir,
// the built-in sample.
func loadSentences(dir string) (data.Slice[data.Labeled], error) {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "bert_classify-sample-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		for _, name := range []string{"sample.pos", "sample.neg"} {
			b, err := sample.ReadFile("data/" + name)
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
				return nil, err
			}
		}
		dir = tmp
	}
	pos, _ := filepath.Glob(filepath.Join(dir, "*.pos"))
	neg, _ := filepath.Glob(filepath.Join(dir, "*.neg"))
	if len(pos) != 1 || len(neg) != 1 {
		return nil, fmt.Errorf("--data_dir %s: want exactly one *.pos and one *.neg file, found %d and %d", dir, len(pos), len(neg))
	}
	return data.LoadPolarity(pos[0], neg[0])
}

// loadModel builds the classifier and its tokenizer.
func loadModel(o options, store *model.Store) (*bert.Classifier, *bert.Tokenizer, error) {
	if o.ModelDir != "" {
		return bert.LoadPretrained(o.ModelDir, store, bert.LoadOptions{MaxLen: o.MaxLen, NumLabels: 2})
	}
	vocab, err := sample.ReadFile("data/vocab.txt")
	if err != nil {
		return nil, nil, err
	}
	tok, err := bert.NewTokenizerFromVocab(splitLines(string(vocab)), o.MaxLen)
	if err != nil {
		return nil, nil, err
	}
	cfg := bert.TinyConfig(tok.VocabSize())
	if err := cfg.CheckMaxLen(o.MaxLen); err != nil {
		return nil, nil, fmt.Errorf("--max_len: %w", err)
	}
	clf, err := bert.NewClassifier(cfg, store)
	return clf, tok, err
}

func (o options) check() error {
	switch {
	case o.Epochs <= 0:
		return fmt.Errorf("--epochs %d: must be at least 1", o.Epochs)
	case o.BatchSize <= 0:
		return fmt.Errorf("--batch_size %d: must be at least 1", o.BatchSize)
	case o.MaxLen < 2:
		return fmt.Errorf("--max_len %d: must be at least 2 ([CLS] and [SEP])", o.MaxLen)
	case o.TestSize <= 0 || o.TestSize >= 1:
		return fmt.Errorf("--test_size %g: must be between 0 and 1", o.TestSize)
	case o.LR < 0 || math.IsNaN(o.LR):
		return fmt.Errorf("--lr %g: must be positive", o.LR)
	case o.Dropout >= 1:
		return fmt.Errorf("--dropout %g: must be below 1 (negative: the model's own rates)", o.Dropout)
	case o.Workers < 0:
		return fmt.Errorf("--workers %d: must be >= 0", o.Workers)
	case o.MaxSteps < 0:
		return fmt.Errorf("--max_steps %d: must be >= 0", o.MaxSteps)
	}
	if o.DataDir != "" {
		if st, err := os.Stat(o.DataDir); err != nil || !st.IsDir() {
			return fmt.Errorf("--data_dir %s: not a readable folder", o.DataDir)
		}
	}
	return nil
}

func (o options) learningRate() float64 {
	if o.LR > 0 {
		return o.LR
	}
	if o.ModelDir != "" {
		return 2e-5
	}
	return 1e-3
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, trimCR(s[start:i]))
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, trimCR(s[start:]))
	}
	return out
}

func trimCR(s string) string {
	if len(s) > 0 && s[len(s)-1] == '\r' {
		return s[:len(s)-1]
	}
	return s
}

var _ = json.Marshal
