package args

import (
	"errors"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/trainer"
	flag "github.com/spf13/pflag"
)

func parse(t *testing.T, own map[string]string, argv ...string) (Training, *flag.FlagSet, error) {
	t.Helper()
	tr := Defaults()
	fs := NewFlagSet("prog", own)
	tr.AddFlags(fs)
	var extra int
	fs.IntVar(&extra, "max_len", 64, "a program's own flag")
	return tr, fs, Parse(fs, &tr, argv)
}

// TestAliasesAndSpellings: Hugging Face's names, kebab-case and a program's own alias all
// reach their flags; an unknown flag is pflag's error.
func TestAliasesAndSpellings(t *testing.T) {
	tr, fs, err := parse(t, map[string]string{"max_seq_length": "max_len"}, "--num_train_epochs", "5", "--lr", "0.5",
		"--per-device-train-batch-size", "4", "--model_name_or_path", "org/name", "--max_seq_length", "48",
		"--gradient-accumulation-steps", "2")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Epochs != 5 || tr.LearningRate != 0.5 || tr.BatchSize != 4 || tr.ModelDir != "org/name" || tr.GradAccum != 2 {
		t.Errorf("parsed %+v", tr)
	}
	if v := fs.Lookup("max_len").Value.String(); v != "48" {
		t.Errorf("--max_seq_length 48 (the program's alias): --max_len is %s", v)
	}
	if _, _, err := parse(t, nil, "--batchsize", "1"); err == nil || !strings.Contains(err.Error(), "batchsize") {
		t.Errorf("--batchsize: %v, want pflag's unknown-flag error", err)
	}
	if _, _, err := parse(t, nil, "stray"); err == nil || !strings.Contains(err.Error(), `unexpected argument "stray"`) {
		t.Errorf("a stray argument: %v", err)
	}
}

// TestGlobalBatch: --global_batch_size replaces --batch_size; both, or a value below 1, are
// refused naming the flags.
func TestGlobalBatch(t *testing.T) {
	if tr, _, err := parse(t, nil, "--global_batch_size", "16"); err != nil || tr.BatchSize != 0 || tr.GlobalBatchSize != 16 {
		t.Errorf("--global_batch_size 16: %+v, %v", tr, err)
	}
	for argv, want := range map[string]string{
		"--global_batch_size 16 --batch_size 4": "--batch_size 4 and --global_batch_size 16 are both given",
		"--global_batch_size 0":                 "--global_batch_size 0: must be at least 1",
	} {
		if _, _, err := parse(t, nil, strings.Fields(argv)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", argv, err, want)
		}
	}
}

// TestCheckNamesTheFlag: each refused value is named by its flag.
func TestCheckNamesTheFlag(t *testing.T) {
	for want, set := range map[string]func(*Training){
		"--epochs 0":                        func(tr *Training) { tr.Epochs = 0 },
		"--logging_steps 0":                 func(tr *Training) { tr.LoggingSteps = 0 },
		"--gradient_accumulation_steps 0":   func(tr *Training) { tr.GradAccum = 0 },
		"--dropout 1":                       func(tr *Training) { tr.Dropout = 1 },
		"--lora_r needs --use_peft":         func(tr *Training) { tr.LoraR = 4 },
		"--lora_target_modules needs":       func(tr *Training) { tr.LoraTargetModules = "query" },
		"--lora_dropout 1: want a rate":     func(tr *Training) { tr.UsePEFT, tr.LoraDropout = true, 1 },
		"--lora_alpha -1: want a positive ": func(tr *Training) { tr.UsePEFT, tr.LoraAlpha = true, -1 },
	} {
		tr := Defaults()
		set(&tr)
		if err := tr.Check(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v", want, err)
		}
	}
	if err := Defaults().Check(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
}

// TestAsTyped: an error about a flag names it as the user typed it, in a check's words and in
// pflag's own.
func TestAsTyped(t *testing.T) {
	argv := []string{"--num-train-epochs=x", "--lr", "-1"}
	err := AsTyped(errors.New(`--epochs -1: bad; invalid argument "x" for "--epochs" flag; --learning_rate -1: bad`), argv, nil)
	want := `--num_train_epochs -1: bad; invalid argument "x" for "--num_train_epochs" flag; --lr -1: bad`
	if err.Error() != want {
		t.Errorf("AsTyped:\n got %s\nwant %s", err, want)
	}
	if NameFlags(errors.New("trainer: Config.LearningRate = -1")).Error() != "trainer: --learning_rate = -1" {
		t.Errorf("NameFlags did not rename Config.LearningRate")
	}
}

// TestFit: the shared flags become Fit's fields, --max_steps overrides --epochs, a zero rate
// takes the program's default, and the program's Extra joins the shared flags'.
func TestFit(t *testing.T) {
	tr := Defaults()
	tr.MaxSteps, tr.GradAccum, tr.SaveTotalLimit, tr.UsePEFT = 30, 4, 2, true
	c := tr.Fit("dir", 2e-5, "f1", trainer.Config{Extra: map[string]any{"max_len": 64}})
	if c.OutputDir != "dir" || c.Epochs != 0 || c.MaxSteps != 30 || c.LearningRate != 2e-5 || c.GradientAccumulation != 4 ||
		c.KeepLast != 2 || c.BestMetric != "f1" || c.LogEvery != 10 {
		t.Errorf("Fit: %+v", c)
	}
	if c.Extra["max_len"] != 64 || c.Extra["batch_size"] != 64 || c.Extra["lora_r"] != 8 {
		t.Errorf("Fit's Extra: %v", c.Extra)
	}
	tr.LearningRate = 1e-4
	if c := tr.Fit("dir", 2e-5, "f1", trainer.Config{}); c.LearningRate != 1e-4 {
		t.Errorf("--learning_rate 1e-4: Fit's rate %g", c.LearningRate)
	}
}
