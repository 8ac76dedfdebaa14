package args

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/optim"
	"github.com/goaccel/goaccel/trainer"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	flag "github.com/spf13/pflag"
)

// Accelerator is accelerator.New's configuration of the shared flags (--backend, --devices,
// --mixed_precision, --sharding, --seed), printing to out; NewAccelerator names the flags in
// its errors.
func (t Training) Accelerator(out io.Writer) accelerator.Config {
	return accelerator.Config{Backend: t.Backend, Devices: t.Devices, MixedPrecision: t.MixedPrecision, Seed: t.Seed,
		Output: out, Sharding: t.Sharding}
}

// NewAccelerator is accelerator.New(t.Accelerator(out)) with the flags named in its error
// ("--devices -1: ..." rather than Config.Devices).
func (t Training) NewAccelerator(out io.Writer) (*accelerator.Accelerator, error) {
	acc, err := accelerator.New(t.Accelerator(out))
	if err != nil {
		return nil, accelerator.NameFlags(err, map[string]string{"Backend": "--backend", "Devices": "--devices",
			"MixedPrecision": "--mixed_precision", "Sharding": "--sharding"})
	}
	return acc, nil
}

// Loggers are the loggers of --report_to.
func (t Training) Loggers() ([]trainer.Logger, error) {
	loggers, err := trainer.ReportTo(t.ReportTo)
	if err != nil {
		return nil, fmt.Errorf("--report_to: %w", err)
	}
	return loggers, nil
}

// Optimizer is PyTorch's Adam, AdamW with --weight_decay; its rate is trainer.Fit's (Fit).
func (t Training) Optimizer() (optimizer.Interface, error) {
	opt, err := optim.Adam(optim.AdamConfig{WeightDecay: t.WeightDecay})
	if err != nil {
		return nil, NameFlags(err)
	}
	return opt, nil
}

// NameFlags renames the configuration fields in err's message (the trainer's, the loader's
// and the optimizer's: "Config.LearningRate", "LoaderConfig.BatchSize"...) to the shared flags
// that set them, so that an error says what to type.
func NameFlags(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s", flagNames.Replace(err.Error()))
}

// flagNames renames configuration fields to the flags that set them, for NameFlags.
var flagNames = strings.NewReplacer("AdamConfig.WeightDecay", "--weight_decay", "SGDConfig.WeightDecay", "--weight_decay",
	"LoaderConfig.BatchSize", "--batch_size", "LoaderConfig.GlobalBatchSize", "--global_batch_size",
	"LoaderConfig.Workers", "--workers", "Config.OutputDir", "--output_dir", "Config.LearningRate", "--learning_rate",
	"Config.Schedule", "--lr_scheduler_type", "Config.WarmupSteps", "--warmup_steps", "Config.WarmupRatio", "--warmup_ratio",
	"Config.ClipGradNorm", "--max_grad_norm", "Config.GradientAccumulation", "--gradient_accumulation_steps",
	"Config.Patience", "--patience", "Config.SaveEvery", "--save_steps", "Config.KeepLast", "--save_total_limit",
	"Config.EvalEvery", "--eval_steps", "Config.LogEvery", "--logging_steps", "Config.MaxSteps", "--max_steps",
	"Config.Epochs", "--epochs")

// AsTyped names a flag in err as argv spelled it when that was an alias (Aliases, or the
// program's own given to NewFlagSet): "--num_train_epochs -1: ..." for a user who typed
// --num_train_epochs, not --epochs.
func AsTyped(err error, argv []string, aliases map[string]string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, a := range argv {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.ReplaceAll(strings.TrimLeft(a, "-"), "-", "_"), "=")
		canonical, ok := aliases[name]
		if !ok {
			canonical, ok = Aliases[name]
		}
		if ok { // "--epochs -1: ..." of a check, and pflag's own `invalid argument "x" for "--epochs" flag`
			msg = strings.ReplaceAll(msg, "--"+canonical+" ", "--"+name+" ")
			msg = strings.ReplaceAll(msg, `"--`+canonical+`"`, `"--`+name+`"`)
		}
	}
	return fmt.Errorf("%s", msg)
}

// Main is a training program's main: it parses the command line (os.Args) into fs and t
// (Parse) and calls run, printing an error as "program: message" with the flag named as typed
// (AsTyped). A bad command line exits with status 2, --help with 0, a failed run with 1 or
// run's code; the exit goes through accelerator.Exit, as one of several processes must.
func Main(program string, fs *flag.FlagSet, t *Training, aliases map[string]string, run func() (int, error)) {
	if err := Parse(fs, t, os.Args[1:]); err != nil {
		if err != flag.ErrHelp {
			fmt.Fprintf(os.Stderr, "%s: %v (--help lists the flags)\n", program, AsTyped(err, os.Args[1:], aliases))
			os.Exit(2)
		}
		return
	}
	code, err := run()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", program, AsTyped(err, os.Args[1:], aliases))
		code = 1
	}
	accelerator.Exit(code) // os.Exit, or what an MPI launcher expects of one of several processes
}
