package main

import (
	"embed"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
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
	Schedule                                              string // learning-rate schedule
	WarmupSteps, SaveEvery                                int64
	Epochs, BatchSize, MaxLen, Devices, Workers, MaxSteps int
	GradAccum, Patience, SaveTotalLimit                   int
	GlobalBatchSize                                       int // 0: BatchSize per device
	LR, TestSize, Dropout                                 float64
	WarmupRatio, WeightDecay, MaxGradNorm                 float64
	Seed                                                  int64
}

func defaultOptions() options {
	return options{Epochs: 3, BatchSize: 64, MaxLen: 64, Seed: 42, TestSize: 0.1, MixedPrecision: "no", Workers: 2, Dropout: -1,
		Schedule: "constant", GradAccum: 1, SaveTotalLimit: 1}
}

// result is what a run reports (and what the tests check).
type result struct {
	EpochLoss     []float64 // mean training loss of each epoch
	StepLoss      []float64 // every batch's loss
	Accuracy      []float64 // test accuracy after each epoch
	Best          float64
	BestEpoch     int
	Steps         int64   // optimizer steps done
	ExamplesPerS  float64 // training examples per second (this session)
	TestExamples  int
	OutputDir     string
	TrainExamples int
	Interrupted   bool   // a signal stopped the run; it can be resumed
	Signal        string // the signal that stopped it: "SIGINT" or "SIGTERM"
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
		return nil, flagError(err)
	}
	defer acc.Close()
	// The run directory: a new one, or the interrupted run this command continues.
	// The main process chooses (a name made from the time differs between processes).
	dir, err := o.runDirectory(acc)
	if err != nil {
		return nil, err
	}
	chosen, err := acc.Broadcast([]byte(dir))
	if err != nil {
		return nil, err
	}
	o.OutputDir = string(chosen)
	// Ctrl-C and SIGTERM finish the current step and save a checkpoint.
	intr := trainer.NotifyInterrupt(os.Stderr)
	defer intr.Stop()

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
	if w := acc.SlowBackendWarning(clf.NumParameters()); w != "" && acc.IsMainProcess() {
		fmt.Fprintln(out, w)
	}

	// Loaders: the DistributedSampler lives inside; the test loader is not shuffled.
	trainLoader, err := data.NewLoader(trainSet, data.LoaderConfig[data.Labeled]{
		BatchSize: o.BatchSize, GlobalBatchSize: o.GlobalBatchSize, Shuffle: true, Seed: o.Seed, Workers: o.Workers,
		Collate: tok.Collate})
	if err != nil {
		return nil, err
	}
	testLoader, err := data.NewLoader(testSet, data.LoaderConfig[data.Labeled]{
		BatchSize: o.BatchSize, GlobalBatchSize: o.GlobalBatchSize, Workers: o.Workers, Collate: tok.Collate})
	if err != nil {
		return nil, err
	}

	// The length of the run in optimizer steps, from the batches per epoch of the data split
	// over every device (what Prepare does too).
	if err := trainLoader.Distribute(acc.NumReplicas(), localRanks(acc)); err != nil {
		return nil, err
	}
	plan, err := o.stepPlan(trainLoader.BatchesPerEpoch(), acc.NumReplicas())
	if err != nil {
		return nil, err
	}
	lr := o.learningRate()
	if o.Fit {
		return fitRun(acc, o, lr, plan, clf, tok, trainLoader, testLoader, intr, out)
	}

	// Optimizer and Prepare: variables replicated on every device, batches sharded.
	opt, err := o.optimizer(lr)
	if err != nil {
		return nil, err
	}
	job, err := acc.Prepare(clf, opt, trainLoader, o.prepareOptions(plan)...)
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
	run, err := openRun(acc, o, lr, plan, clf, job)
	if err != nil {
		return nil, err
	}
	defer run.close()
	acc.Printf("training on %d sentences, testing on %d; %s per epoch, %s in all",
		trainSet.Len(), testSet.Len(), trainer.Count(int64(plan.batchesPerEpoch/o.GradAccum), "step"),
		trainer.Count(plan.total, "step"))
	prog := trainer.NewProgress(mainOnly(acc, out), trainer.ProgressConfig{Epochs: plan.epochs,
		BatchesPerEpoch: plan.batchesPerEpoch, TotalSteps: plan.total, GradientAccumulation: o.GradAccum})

	res := &run.state.Result
	res.TrainExamples, res.TestExamples = trainSet.Len(), testSet.Len()
	var trainTime time.Duration
	var trained int
	for epoch := trainLoader.State().Epoch; epoch < plan.epochs && !run.done(); epoch++ {
		start := time.Now()
		examples, err := train(acc, job, trainStep, run, prog, intr)
		if err != nil {
			return nil, err
		}
		trainTime += time.Since(start)
		trained += examples
		stop, err := intr.RequestedAnywhere(acc) // all processes stop together
		if err != nil {
			return nil, err
		}
		if stop && !run.epochEnded() {
			return run.interrupted(intr.Signal())
		}
		evalStart := time.Now()
		accuracy, err := test(job, evalStep, prog.Evaluating(testLoader))
		if err != nil {
			return nil, err
		}
		losses := run.state.EpochLosses
		res.EpochLoss = append(res.EpochLoss, mean(losses))
		res.Accuracy = append(res.Accuracy, accuracy)
		improved := accuracy > res.Best || res.BestEpoch == 0
		if improved {
			res.Best, res.BestEpoch, run.state.BadEpochs = accuracy, epoch+1, 0
		} else {
			run.state.BadEpochs++
		}
		prog.Println("%s", trainer.EvalLine(trainer.EvalSummary{Step: res.Steps, Epoch: float64(epoch + 1),
			Metrics: map[string]float64{"accuracy": accuracy}, Headline: "accuracy", Improved: improved,
			Best: res.Best, BestStep: run.state.BestStep, Examples: testSet.Len(), Duration: time.Since(evalStart)}))
		if improved {
			run.state.BestStep = res.Steps
			// Only the main process writes; the others wait (a no-op with one process).
			if err := run.saveBest(clf, tok); err != nil {
				return nil, err
			}
		}
		if err := run.endEpoch(epoch+1, accuracy); err != nil {
			return nil, err
		}
		if o.Patience > 0 && run.state.BadEpochs >= o.Patience {
			run.state.Stopped = fmt.Sprintf("stopped early: test accuracy did not improve for %s",
				trainer.Count(int64(run.state.BadEpochs), "epoch"))
		}
		if err := run.checkpoint(); err != nil {
			return nil, err
		}
		if stop, err := intr.RequestedAnywhere(acc); err != nil {
			return nil, err
		} else if stop {
			return run.interrupted(intr.Signal())
		}
	}
	if trainTime > 0 {
		res.ExamplesPerS = float64(trained) / trainTime.Seconds()
	}
	acc.Printf("%s; best test accuracy %.4f (epoch %d); best model in %s", run.doneWords(plan),
		res.Best, res.BestEpoch, filepath.Join(run.dir, "best"))
	return res, run.finish()
}

// train runs one epoch (the sampler's epoch advances by itself), or what is left of it, and
// returns the number of real training examples seen. It stops early at the run's last step,
// or after the current step when a signal asks to stop.
func train(acc *accelerator.Accelerator, job *accelerator.Job, step *accelerator.TrainStep, run *runDir,
	prog *trainer.Progress, intr *trainer.Interrupt) (int, error) {
	pos := job.Source().State()
	prog.StartEpoch(pos.Epoch, pos.BatchesConsumed, run.state.Result.Steps)
	defer prog.EndEpoch("")
	examples := 0
	for batch, err := range job.Batches() {
		if err != nil {
			return 0, err
		}
		loss, err := step.Run(batch)
		if err != nil {
			return 0, err
		}
		l, err := loss.Value()
		if err != nil {
			return 0, err
		}
		n := batch.NumReal() * acc.NumProcesses() // every process runs as many real examples, padding aside
		examples += n
		if err := run.batchDone(job, l, n); err != nil {
			return 0, err
		}
		prog.Batch(l, n, run.state.Result.Steps)
		if !run.atStep() {
			continue // the gradient accumulation of this step is not complete
		}
		stop, err := intr.RequestedAnywhere(acc)
		if err != nil {
			return 0, err
		}
		if run.done() || stop {
			break
		}
		if err := run.maybeSave(); err != nil {
			return 0, err
		}
	}
	return examples, nil
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

// fitRun is the same training with the trainer package's loop instead of the hand-written
// one: metrics.jsonl, checkpoints (resumable: give the same --output_dir again), the best
// model by accuracy as a Hugging Face folder, and the curves.
func fitRun(acc *accelerator.Accelerator, o options, lr float64, plan stepPlan, clf *bert.Classifier,
	tok *bert.Tokenizer, trainLoader, testLoader data.Source, intr *trainer.Interrupt, out io.Writer) (*result, error) {
	opt, err := o.optimizer(lr)
	if err != nil {
		return nil, err
	}
	tr, err := trainer.New(acc, clf, opt, trainer.Classification(2, clf.Logits))
	if err != nil {
		return nil, err
	}
	res, err := tr.Fit(trainLoader, testLoader, trainer.Config{
		OutputDir: o.OutputDir, Epochs: plan.epochs, MaxSteps: int64(o.MaxSteps), LearningRate: lr,
		Schedule: o.Schedule, WarmupSteps: plan.warmup, ClipGradNorm: o.MaxGradNorm, GradientAccumulation: o.GradAccum,
		SaveEvery: o.SaveEvery, KeepLast: o.SaveTotalLimit, BestMetric: "accuracy", Patience: o.Patience,
		GlobalBatchSize: o.GlobalBatchSize, Output: out, Interrupt: intr,
		SaveBest: func(dir string) error { return bert.SavePretrained(dir, clf, tok) },
		Extra: map[string]any{"data_dir": o.DataDir, "model_dir": o.ModelDir, "batch_size": o.BatchSize,
			"max_len": o.MaxLen, "seed": o.Seed, "test_size": o.TestSize, "dropout": o.Dropout,
			"weight_decay": o.WeightDecay},
	})
	if err != nil {
		return nil, flagError(err)
	}
	r := &result{Best: res.Best, OutputDir: res.RunDir, Steps: res.Steps, Interrupted: res.Interrupted}
	if res.Interrupted {
		r.Signal = trainer.SignalName(res.Signal)
	}
	if res.Interrupted {
		if acc.IsMainProcess() {
			fmt.Fprintf(out, "to resume: %s\n", resumeCommand(o.OutputDir))
		}
		return r, writeInterrupted(acc, o, trainer.SignalName(res.Signal), res.Steps)
	}
	if err := removeInterrupted(acc, o.OutputDir); err != nil {
		return nil, err
	}
	acc.Printf("best test accuracy %.4f at step %d; best model (Hugging Face folder) in %s", res.Best, res.BestStep,
		res.BestCheckpoint)
	return r, nil
}

// localRanks are the replicas of this process, as accelerator.Prepare gives them to a source.
func localRanks(acc *accelerator.Accelerator) []int {
	ranks := make([]int, acc.NumDevices())
	for i := range ranks {
		ranks[i] = acc.ProcessIndex()*acc.NumDevices() + i
	}
	return ranks
}

// mainOnly is out on the main process and io.Discard elsewhere.
func mainOnly(acc *accelerator.Accelerator, out io.Writer) io.Writer {
	if acc.IsMainProcess() {
		return out
	}
	return io.Discard
}

// flagError rewrites the library's names of settings into this program's flags, so that a
// message says what to type: "use another --output_dir", not "Config.OutputDir".
func flagError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, r := range [][2]string{
		{"Config.OutputDir", "--output_dir"}, {"Config.LearningRate", "--lr"}, {"Config.Schedule", "--lr_scheduler_type"},
		{"Config.WarmupSteps", "--warmup_steps"}, {"Config.ClipGradNorm", "--max_grad_norm"},
		{"Config.GradientAccumulation", "--gradient_accumulation_steps"}, {"Config.Patience", "--patience"},
		{"Config.SaveEvery", "--save_steps"}, {"Config.KeepLast", "--save_total_limit"}, {"Config.MaxSteps", "--max_steps"},
		{"Config.Epochs", "--epochs"}, {"Config.MixedPrecision", "--mixed_precision"}, {"MixedPrecision", "--mixed_precision"},
		{"Config.Backend", "--backend"}, {"Config.Devices", "--devices"}, {"Devices=", "--devices "},
		{"or set Devices to", "or use --devices"},
	} {
		msg = strings.ReplaceAll(msg, r[0], r[1])
	}
	if msg == err.Error() {
		return err
	}
	return &renamedError{msg: msg, err: err}
}

// renamedError is an error whose message names flags; it unwraps to the library's error.
type renamedError struct {
	msg string
	err error
}

func (e *renamedError) Error() string { return e.msg }
func (e *renamedError) Unwrap() error { return e.err }

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
		clf, tok, err := bert.LoadPretrained(o.ModelDir, store, bert.LoadOptions{MaxLen: o.MaxLen, NumLabels: 2})
		if err != nil {
			return nil, nil, fmt.Errorf("--model_dir %s: %w", o.ModelDir, err)
		}
		return clf, tok, nil
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

// useGlobalBatch switches the options to --global_batch_size, which main saw given, and
// batchSizeGiven says whether --batch_size was given too (an error: give one).
func (o *options) useGlobalBatch(batchSizeGiven bool) error {
	if batchSizeGiven {
		return fmt.Errorf("--batch_size %d and --global_batch_size %d are both given: give one (per device, or for all "+
			"devices and processes)", o.BatchSize, o.GlobalBatchSize)
	}
	if o.GlobalBatchSize <= 0 {
		return fmt.Errorf("--global_batch_size %d: must be at least 1 (or left out: --batch_size per device)", o.GlobalBatchSize)
	}
	o.BatchSize = 0
	return nil
}

func (o options) check() error {
	// Each rule: is the value bad, the flag, its value, what it must be.
	for _, r := range []struct {
		bad  bool
		flag string
		v    any
		want string
	}{
		{o.Epochs <= 0 && o.MaxSteps <= 0, "epochs", o.Epochs, "must be at least 1 (or give --max_steps)"},
		{o.GlobalBatchSize == 0 && o.BatchSize <= 0, "batch_size", o.BatchSize, "must be at least 1"},
		{o.GlobalBatchSize < 0, "global_batch_size", o.GlobalBatchSize, "must be at least 1 (or left out: --batch_size per device)"},
		{o.GlobalBatchSize > 0 && o.BatchSize > 0, "global_batch_size", o.GlobalBatchSize, "cannot be given with --batch_size: give one"},
		{o.GradAccum <= 0, "gradient_accumulation_steps", o.GradAccum, "must be at least 1"},
		{o.MaxLen < 2, "max_len", o.MaxLen, "must be at least 2 ([CLS] and [SEP])"},
		{o.TestSize <= 0 || o.TestSize >= 1, "test_size", o.TestSize, "must be between 0 and 1"},
		{o.LR < 0 || math.IsNaN(o.LR), "lr", o.LR, "must be positive"},
		{o.Dropout >= 1, "dropout", o.Dropout, "must be below 1 (negative: the model's own rates)"},
		{o.Workers < 0, "workers", o.Workers, "must be >= 0"},
		{o.MaxSteps < 0, "max_steps", o.MaxSteps, "must be >= 0"},
		{o.WarmupRatio < 0 || o.WarmupRatio >= 1, "warmup_ratio", o.WarmupRatio, "must be in [0, 1)"},
		{o.WarmupSteps < 0, "warmup_steps", o.WarmupSteps, "must be >= 0"},
		{o.WeightDecay < 0, "weight_decay", o.WeightDecay, "must be >= 0"},
		{o.MaxGradNorm < 0, "max_grad_norm", o.MaxGradNorm, "must be >= 0 (0: no clipping)"},
		{o.Patience < 0, "patience", o.Patience, "must be >= 0"},
		{o.SaveTotalLimit < 1, "save_total_limit", o.SaveTotalLimit, "must be at least 1 (the checkpoint a resume starts from)"},
		{o.SaveEvery < 0, "save_steps", o.SaveEvery, "must be >= 0"},
	} {
		if r.bad {
			return fmt.Errorf("--%s %v: %s", r.flag, r.v, r.want)
		}
	}
	switch strings.ToLower(o.MixedPrecision) {
	case "no", "fp32", "", "bf16":
	case "fp16":
		return errors.New("--mixed_precision fp16: not supported: float16's small range needs loss scaling, which " +
			"goaccel does not do; use --mixed_precision bf16 (bfloat16 has float32's range, no scaling needed) or no")
	default:
		return fmt.Errorf("--mixed_precision %q: valid values are \"no\" and \"bf16\"", o.MixedPrecision)
	}
	switch strings.ToLower(o.Schedule) {
	case trainer.ScheduleConstant, trainer.ScheduleLinear, trainer.ScheduleCosine:
	default:
		return fmt.Errorf("--lr_scheduler_type %q: valid values are %s", o.Schedule, strings.Join(trainer.Schedules, ", "))
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

// optimizer is Adam with PyTorch's defaults (eps 1e-8), or with --weight_decay AdamW as in
// Hugging Face's Trainer (no decay of biases and LayerNorm weights); see trainer.Adam.
func (o options) optimizer(lr float64) (optimizer.Interface, error) {
	return trainer.Adam(trainer.AdamConfig{LearningRate: lr, WeightDecay: o.WeightDecay})
}

// stepPlan is the length of the run in optimizer steps (one meaning for both loops).
type stepPlan struct {
	batchesPerEpoch int
	epochs          int   // epochs started (the last one may end early under --max_steps)
	total           int64 // optimizer steps of the run
	warmup          int64
	schedule        trainer.Schedule
}

// stepPlan computes the run's length: --max_steps optimizer steps when given (it overrides
// --epochs, as in Hugging Face), else --epochs epochs.
func (o options) stepPlan(batchesPerEpoch, replicas int) (stepPlan, error) {
	p := stepPlan{batchesPerEpoch: batchesPerEpoch, epochs: o.Epochs}
	k := int64(o.GradAccum)
	perEpoch := int64(batchesPerEpoch) / k
	if perEpoch == 0 {
		return p, fmt.Errorf("--gradient_accumulation_steps %d: an epoch has only %d batches of %d x %d examples; "+
			"lower it or --batch_size", o.GradAccum, batchesPerEpoch, o.BatchSize, replicas)
	}
	p.total = int64(o.Epochs) * int64(batchesPerEpoch) / k
	if o.MaxSteps > 0 {
		p.total = int64(o.MaxSteps)
		p.epochs = int((p.total*k + int64(batchesPerEpoch) - 1) / int64(batchesPerEpoch))
	}
	p.warmup = o.WarmupSteps
	if p.warmup == 0 && o.WarmupRatio > 0 {
		p.warmup = int64(math.Ceil(o.WarmupRatio * float64(p.total)))
	}
	var err error
	p.schedule, err = trainer.NewSchedule(o.Schedule, o.learningRate(), p.warmup, p.total)
	if err != nil {
		return p, flagError(err)
	}
	return p, nil
}

// prepareOptions are the Prepare options for the flags: accumulation, clipping, schedule.
func (o options) prepareOptions(p stepPlan) []accelerator.PrepareOption {
	var opts []accelerator.PrepareOption
	if o.GradAccum > 1 {
		opts = append(opts, accelerator.WithGradientAccumulation(o.GradAccum))
	}
	if o.MaxGradNorm > 0 {
		opts = append(opts, accelerator.WithClipGradNorm(o.MaxGradNorm))
	}
	if p.schedule.Name != trainer.ScheduleConstant || p.warmup > 0 {
		opts = append(opts, accelerator.WithLearningRateSchedule(p.schedule.Graph()))
	}
	return opts
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
