// Package args is the training flags that goaccel's programs share, the counterpart of
// Hugging Face's TrainingArguments and of the flags that run_classification.py, run_ner.py and
// run_image_classification.py have in common: the same names, aliases and defaults in every
// program that registers them, checked in one place and turned into the accelerator's and
// trainer.Fit's configurations. A program adds only its own flags (its data and task):
//
// t := args.Defaults()
// t.BatchSize = 32                         // this program's default
// fs := args.NewFlagSet("ner", nil)        // kebab-case spellings and the aliases work
// t.AddFlags(fs)
// fs.StringVar(&trainFile, "train_file", "", "...")
// if err := args.Parse(fs, &t, os.Args[1:]); err != nil { ... }
// acc, err := accelerator.New(t.Accelerator(os.Stdout))
// ...
// res, err := tr.Fit(trainLoader, testLoader, t.Fit(dir, lr, "f1", ...))
//
// Every error names the flag as the user typed it (AsTyped, NameFlags).
package args

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/models/auto"
	"github.com/goaccel/goaccel/models/lora"
	"github.com/goaccel/goaccel/trainer"
	flag "github.com/spf13/pflag"
)

// Training holds the shared flags' values; each field's comment is its flag.
type Training struct {
	ModelDir  string // --model_dir (also --model_name_or_path)
	OutputDir string // --output_dir

	// The Hub: how a --model_dir that is a Hub id is downloaded (models/auto.HubOptions).
	ModelRevision string // --model_revision
	CacheDir      string // --cache_dir
	Token         string // --token: never printed or saved

	Epochs          int     // --epochs (also --num_train_epochs)
	MaxSteps        int     // --max_steps: overrides --epochs when positive
	BatchSize       int     // --batch_size (also --per_device_train_batch_size): per device
	GlobalBatchSize int     // --global_batch_size: instead of --batch_size; 0 after Parse without it
	GradAccum       int     // --gradient_accumulation_steps
	LearningRate    float64 // --learning_rate (also --lr); 0: the program's default
	Schedule        string  // --lr_scheduler_type
	WarmupRatio     float64 // --warmup_ratio
	WarmupSteps     int64   // --warmup_steps
	WeightDecay     float64 // --weight_decay: AdamW's decoupled decay
	MaxGradNorm     float64 // --max_grad_norm
	Dropout         float64 // --dropout: negative for the model's own rates

	GradientCheckpointing bool    // --gradient_checkpointing
	UsePEFT               bool    // --use_peft: a LoRA adapter
	LoraR                 int     // --lora_r
	LoraAlpha             float64 // --lora_alpha
	LoraDropout           float64 // --lora_dropout
	LoraTargetModules     string  // --lora_target_modules, comma-separated

	Seed           int64 // --seed
	LoggingSteps   int64 // --logging_steps
	EvalSteps      int64 // --eval_steps
	SaveSteps      int64 // --save_steps
	Patience       int   // --patience
	SaveTotalLimit int   // --save_total_limit
	AsyncSave      bool  // --async_save

	MixedPrecision string // --mixed_precision
	Sharding       string // --sharding
	Devices        int    // --devices
	Backend        string // --backend
	Workers        int    // --workers
	ReportTo       string // --report_to

	DoPredict bool // --do_predict
}

// Defaults are the shared flags' defaults (Hugging Face's where it has the flag: 3 epochs, a
// constant rate without warm-up, seed 42, logging every 10 steps); a program changes the few
// it wants otherwise before AddFlags.
func Defaults() Training {
	return Training{Epochs: 3, BatchSize: 64, GradAccum: 1, Schedule: "constant", Dropout: -1, LoraR: 8, LoraAlpha: 8,
		Seed: 42, LoggingSteps: 10, SaveTotalLimit: 1, MixedPrecision: "no", Workers: 2, ReportTo: trainer.ReportJSONL}
}

// Aliases are the other names of the shared flags (Hugging Face's, and goaccel's earlier
// --lr), by alias. NewFlagSet accepts them; AsTyped names a flag in an error as it was typed.
var Aliases = map[string]string{"num_train_epochs": "epochs", "lr": "learning_rate",
	"per_device_train_batch_size": "batch_size", "model_name_or_path": "model_dir"}

// NewFlagSet is an empty flag set of program that reads --batch-size as --batch_size and each
// alias (Aliases, and the program's own: alias to flag) as its flag.
func NewFlagSet(program string, aliases map[string]string) *flag.FlagSet {
	fs := flag.NewFlagSet(program, flag.ContinueOnError)
	fs.SortFlags = false
	fs.SetNormalizeFunc(func(_ *flag.FlagSet, name string) flag.NormalizedName {
		name = strings.ReplaceAll(name, "-", "_")
		if a, ok := aliases[name]; ok {
			name = a
		} else if a, ok := Aliases[name]; ok {
			name = a
		}
		return flag.NormalizedName(name)
	})
	return fs
}

// AddFlags registers the shared flags in fs, with t's values as their defaults.
func (t *Training) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&t.ModelDir, "model_dir", t.ModelDir, "Hugging Face folder or Hub id in the local Hugging Face cache (org/name[@revision]) of any family of the registry, models/auto (also --model_name_or_path)")
	fs.StringVar(&t.ModelRevision, "model_revision", t.ModelRevision, "with a Hub id as --model_dir: the branch, tag or commit to download (as org/name@revision; default main)")
	fs.StringVar(&t.CacheDir, "cache_dir", t.CacheDir, "the Hugging Face hub cache folder models are downloaded to and found in (default $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub)")
	fs.StringVar(&t.Token, "token", t.Token, "a Hugging Face access token for a gated or private model (default $HF_TOKEN, else the file hf auth login wrote); sent to the Hub only")
	fs.StringVar(&t.OutputDir, "output_dir", t.OutputDir, "run directory; empty: runs/<program>-<time>, or the interrupted run of the same command")
	fs.IntVar(&t.Epochs, "epochs", t.Epochs, "number of epochs (also --num_train_epochs)")
	fs.IntVar(&t.MaxSteps, "max_steps", t.MaxSteps, "optimizer steps of the whole run; overrides --epochs, as in Hugging Face (0: --epochs decides)")
	fs.IntVar(&t.BatchSize, "batch_size", t.BatchSize, "batch size per device (global batch = batch_size x devices; also --per_device_train_batch_size)")
	fs.IntVar(&t.GlobalBatchSize, "global_batch_size", t.GlobalBatchSize, "examples per global batch, split over the devices and processes (instead of --batch_size): the same run on any topology")
	fs.IntVar(&t.GradAccum, "gradient_accumulation_steps", t.GradAccum, "batches whose gradients are averaged into one optimizer step")
	fs.Float64Var(&t.LearningRate, "learning_rate", t.LearningRate, "peak learning rate of Adam (also --lr); 0: the program's default")
	fs.StringVar(&t.Schedule, "lr_scheduler_type", t.Schedule, `learning-rate schedule: "constant", "linear" or "cosine"`)
	fs.Float64Var(&t.WarmupRatio, "warmup_ratio", t.WarmupRatio, "fraction of the optimizer steps with a linear warm-up")
	fs.Int64Var(&t.WarmupSteps, "warmup_steps", t.WarmupSteps, "optimizer steps with a linear warm-up (overrides --warmup_ratio)")
	fs.Float64Var(&t.WeightDecay, "weight_decay", t.WeightDecay, "AdamW's decoupled weight decay, not applied to biases and LayerNorm weights (0: Adam)")
	fs.Float64Var(&t.MaxGradNorm, "max_grad_norm", t.MaxGradNorm, "clip the gradients to this global L2 norm (0: no clipping)")
	fs.Float64Var(&t.Dropout, "dropout", t.Dropout, "dropout rate of every layer; negative: the model's own (0.1 for BERT)")
	fs.BoolVar(&t.GradientCheckpointing, "gradient_checkpointing", t.GradientCheckpointing, "recompute each encoder layer's activations in the backward pass: less memory, more time")
	fs.BoolVar(&t.UsePEFT, "use_peft", t.UsePEFT, "train a LoRA adapter (and the head) instead of every weight: the encoder is frozen; best/ is the merged model, with the adapter as PEFT's files in best/adapter (LoRA usually wants a higher --learning_rate, such as 2e-4)")
	fs.IntVar(&t.LoraR, "lora_r", t.LoraR, "with --use_peft: the rank of LoRA's update (PEFT's r)")
	fs.Float64Var(&t.LoraAlpha, "lora_alpha", t.LoraAlpha, "with --use_peft: LoRA's update is scaled by lora_alpha/lora_r")
	fs.Float64Var(&t.LoraDropout, "lora_dropout", t.LoraDropout, "with --use_peft: dropout rate on the adapted layers' inputs, in LoRA's branch")
	fs.StringVar(&t.LoraTargetModules, "lora_target_modules", t.LoraTargetModules, `with --use_peft: the linear layers to adapt, comma-separated module names or their last parts ("query,value"); empty: the family's defaults (PEFT's query,value; query_proj,value_proj for DeBERTa; q_lin,v_lin for DistilBERT and Wqkv for ModernBERT, which PEFT has no defaults for)`)
	fs.Int64Var(&t.Seed, "seed", t.Seed, "seed of the split, the shuffling and the initialisation")
	fs.Int64Var(&t.LoggingSteps, "logging_steps", t.LoggingSteps, "write the mean training loss to metrics.jsonl every this many optimizer steps (and at step 1), as Hugging Face's logging_steps")
	fs.Int64Var(&t.EvalSteps, "eval_steps", t.EvalSteps, "also evaluate every this many optimizer steps (0: at the end of each epoch only)")
	fs.IntVar(&t.Patience, "patience", t.Patience, "stop after this many evaluations without a better best metric (0: never)")
	fs.Int64Var(&t.SaveSteps, "save_steps", t.SaveSteps, "also save a checkpoint every this many optimizer steps (0: at epoch ends)")
	fs.IntVar(&t.SaveTotalLimit, "save_total_limit", t.SaveTotalLimit, "checkpoints kept in checkpoints/ (the newest)")
	fs.BoolVar(&t.AsyncSave, "async_save", t.AsyncSave, "write checkpoints in the background while training goes on (one more host copy of the state)")
	fs.StringVar(&t.MixedPrecision, "mixed_precision", t.MixedPrecision, `"no" (fp32), "bf16" or "fp16" (16-bit activations, float32 master weights; fp16 with loss scaling)`)
	fs.StringVar(&t.Sharding, "sharding", t.Sharding, `"no", "zero1", "zero2" or "zero3": state sharded over the devices (empty: $GOACCEL_SHARDING, else "no")`)
	fs.IntVar(&t.Devices, "devices", t.Devices, "devices to use; 0: all found (on XLA's CPU plugin: how many host devices to create)")
	fs.StringVar(&t.Backend, "backend", t.Backend, `backend: "go", "xla:cpu", "xla:cuda" or a plugin path; empty: discover`)
	fs.IntVar(&t.Workers, "workers", t.Workers, "goroutines that prepare batches ahead of training")
	fs.StringVar(&t.ReportTo, "report_to", t.ReportTo, "loggers besides the console and metrics.jsonl (always written), comma-separated: tensorboard (an event file in the run directory: tensorboard --logdir RUN), csv (metrics.csv), all (both), none, jsonl (metrics.jsonl only)")
	fs.BoolVar(&t.DoPredict, "do_predict", t.DoPredict, "after training, predict with best/ and write predict_results.jsonl (and the program's other formats) into the run directory")
}

// Parse parses argv into fs (which AddFlags registered t's flags in), refuses stray
// arguments, and applies --global_batch_size: that many examples per global batch instead of
// --batch_size per device (t.BatchSize is then 0; both given is an error).
func Parse(fs *flag.FlagSet, t *Training, argv []string) error {
	if err := fs.Parse(argv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags start with --)", fs.Arg(0))
	}
	t.useHub()
	switch {
	case !fs.Changed("global_batch_size"):
		return nil
	case fs.Changed("batch_size"):
		return fmt.Errorf("--batch_size %d and --global_batch_size %d are both given: give one", t.BatchSize, t.GlobalBatchSize)
	case t.GlobalBatchSize <= 0:
		return fmt.Errorf("--global_batch_size %d: must be at least 1 (or left out: --batch_size per device)", t.GlobalBatchSize)
	}
	t.BatchSize = 0
	return nil
}

// useHub hands --model_revision, --cache_dir and --token to models/auto, which downloads a
// Hub id named by --model_dir through them; the progress bars go to the standard error of
// the first process of each machine.
func (t *Training) useHub() {
	o := auto.HubOptions{Revision: t.ModelRevision, CacheDir: t.CacheDir, Token: t.Token}
	if r := envvar.LocalRank.Value(); r == "" || r == "0" {
		o.Progress = os.Stderr
	}
	auto.SetHubOptions(o)
}

// Check refuses values of the shared flags that no layer below would name: the run's length,
// logging, accumulation, the dropout rate and the LoRA flags (LoRA). The accelerator, the
// loader, the optimizer and Fit check the others; NameFlags names their fields as flags.
func (t Training) Check() error {
	switch {
	case t.Epochs < 1 || t.MaxSteps < 0:
		return fmt.Errorf("--epochs %d, --max_steps %d: want at least 1 epoch, and 0 steps (--epochs decides) or more",
			t.Epochs, t.MaxSteps)
	case t.LoggingSteps <= 0:
		return fmt.Errorf("--logging_steps %d: must be at least 1", t.LoggingSteps)
	case t.GradAccum < 1:
		return fmt.Errorf("--gradient_accumulation_steps %d: must be at least 1 (1: no accumulation)", t.GradAccum)
	}
	if _, err := t.DropoutRate(); err != nil {
		return err
	}
	if err := t.checkHub(); err != nil {
		return err
	}
	_, err := t.LoRA()
	return err
}

// checkHub refuses --model_revision and --token without a Hub id to apply them to: an empty
// --model_dir or one that is a folder.
func (t Training) checkHub() error {
	st, err := os.Stat(t.ModelDir)
	folder := t.ModelDir == "" || (err == nil && st.IsDir())
	switch {
	case folder && t.ModelRevision != "":
		return fmt.Errorf("--model_revision %s: --model_dir %q is not a Hub id (org/name) to take it from", t.ModelRevision, t.ModelDir)
	case folder && t.Token != "":
		return fmt.Errorf("--token: --model_dir %q is not a Hub id (org/name) to download with it", t.ModelDir)
	}
	return nil
}

// DropoutRate is --dropout for the model's options: nil for a negative value (the model's own
// rates); NaN and rates of 1 or more are errors.
func (t Training) DropoutRate() (*float64, error) {
	switch {
	case math.IsNaN(t.Dropout):
		return nil, fmt.Errorf("--dropout %g: not a number (a rate below 1, or negative for the model's own rates)", t.Dropout)
	case t.Dropout >= 1:
		return nil, fmt.Errorf("--dropout %g: must be below 1 (negative: the model's own rates)", t.Dropout)
	case t.Dropout >= 0:
		rate := t.Dropout
		return &rate, nil
	}
	return nil, nil
}

// LoRA is the LoRA configuration of --use_peft and the --lora_* flags: nil without
// --use_peft, which the other flags then must leave at their defaults.
func (t Training) LoRA() (*lora.Config, error) {
	d := Defaults()
	if !t.UsePEFT {
		for _, f := range []struct {
			name    string
			changed bool
		}{{"lora_r", t.LoraR != d.LoraR}, {"lora_alpha", t.LoraAlpha != d.LoraAlpha},
			{"lora_dropout", t.LoraDropout != d.LoraDropout}, {"lora_target_modules", t.LoraTargetModules != ""}} {
			if f.changed {
				return nil, fmt.Errorf("--%s needs --use_peft", f.name)
			}
		}
		return nil, nil
	}
	switch {
	case t.LoraR < 1:
		return nil, fmt.Errorf("--lora_r %d: want a positive rank", t.LoraR)
	case !(t.LoraAlpha > 0) || math.IsInf(t.LoraAlpha, 1):
		return nil, fmt.Errorf("--lora_alpha %g: want a positive scale", t.LoraAlpha)
	case !(t.LoraDropout >= 0 && t.LoraDropout < 1):
		return nil, fmt.Errorf("--lora_dropout %g: want a rate in [0, 1)", t.LoraDropout)
	}
	cfg := &lora.Config{R: t.LoraR, Alpha: t.LoraAlpha, Dropout: t.LoraDropout}
	if t.LoraTargetModules != "" {
		for m := range strings.SplitSeq(t.LoraTargetModules, ",") {
			cfg.TargetModules = append(cfg.TargetModules, strings.TrimSpace(m))
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("--lora_target_modules %s: %w", t.LoraTargetModules, err)
	}
	return cfg, nil
}

// Extra is what the shared flags add to config.json's program settings (trainer.Config's
// Extra, which a resumed run must match): the model, the batch, the dropout, the weight
// decay, the precision and, with --use_peft, the adapter's flags. The run's length, rate and
// checkpointing are trainer.Config's own fields.
func (t Training) Extra() map[string]any {
	extra := map[string]any{"model_dir": t.ModelDir, "batch_size": t.BatchSize, "global_batch_size": t.GlobalBatchSize,
		"dropout": t.Dropout, "weight_decay": t.WeightDecay, "mixed_precision": t.MixedPrecision}
	if t.UsePEFT {
		extra["use_peft"], extra["lora_r"], extra["lora_alpha"] = true, t.LoraR, t.LoraAlpha
		extra["lora_dropout"], extra["lora_target_modules"] = t.LoraDropout, t.LoraTargetModules
	}
	return extra
}

// Fit is trainer.Fit's configuration of the shared flags: the run in dir, --max_steps over
// --epochs, the rate (--learning_rate, else defaultLR), the schedule and warm-up, clipping,
// accumulation, evaluation, logging and checkpoint steps, early stopping on best (the metric
// that picks best/); run holds what the program adds (Output, Interrupt, Loggers, SaveBest,
// Extra), whose Extra is merged with the shared flags' (Extra).
func (t Training) Fit(dir string, defaultLR float64, best string, run trainer.Config) trainer.Config {
	epochs := t.Epochs
	if t.MaxSteps > 0 { // --max_steps overrides --epochs, as in Hugging Face
		epochs = 0
	}
	lr := t.LearningRate
	if lr == 0 {
		lr = defaultLR
	}
	extra := t.Extra()
	for k, v := range run.Extra {
		extra[k] = v
	}
	run.OutputDir, run.Epochs, run.MaxSteps, run.LearningRate = dir, epochs, int64(t.MaxSteps), lr
	run.Schedule, run.WarmupSteps, run.WarmupRatio, run.ClipGradNorm = t.Schedule, t.WarmupSteps, t.WarmupRatio, t.MaxGradNorm
	run.GradientAccumulation, run.EvalEvery, run.LogEvery, run.SaveEvery = t.GradAccum, t.EvalSteps, t.LoggingSteps, t.SaveSteps
	run.KeepLast, run.AsyncSave, run.BestMetric, run.Patience = t.SaveTotalLimit, t.AsyncSave, best, t.Patience
	run.Extra = extra
	return run
}

// NameTargets names --lora_target_modules in err when a model refused the adapter's targets
// (a lora.TargetError: a module the model does not have), and returns err unchanged otherwise.
func (t Training) NameTargets(err error) error {
	var target *lora.TargetError
	if errors.As(err, &target) {
		return fmt.Errorf("--lora_target_modules %s: %w", t.LoraTargetModules, err)
	}
	return err
}
