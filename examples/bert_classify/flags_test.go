package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestFlags: Hugging Face's names, kebab-case aliases, "did you mean" for a typo, and fp16
// refused with the reason and the alternative, all before anything is loaded.
func TestFlags(t *testing.T) {
	o := defaultOptions()
	fs := newFlagSet(&o)
	err := fs.Parse([]string{"--batch-size", "8", "--gradient-accumulation-steps", "4", "--max_grad_norm", "1",
		"--weight_decay", "0.01", "--warmup_ratio", "0.1", "--lr_scheduler_type", "linear", "--patience", "2",
		"--max-steps", "30", "--learning_rate", "3e-5"})
	if err != nil {
		t.Fatal(err)
	}
	if o.BatchSize != 8 || o.GradAccum != 4 || o.MaxGradNorm != 1 || o.WeightDecay != 0.01 || o.WarmupRatio != 0.1 ||
		o.Schedule != "linear" || o.Patience != 2 || o.MaxSteps != 30 || o.LR != 3e-5 {
		t.Errorf("flags not set: %+v", o)
	}
	for _, c := range []struct{ typo, want string }{
		{"--batchsize", "did you mean --batch_size?"},
		{"--learning-rat", "did you mean --learning_rate?"},
		{"--xyzzy", "--help lists the flags"},
		{"--warmup-ratios", "did you mean --warmup_ratio?"},
		{"--max_step", "did you mean --max_steps?"},
	} {
		o := defaultOptions()
		fs := newFlagSet(&o)
		err := fs.Parse([]string{c.typo, "1"})
		if err == nil {
			t.Errorf("%s accepted", c.typo)
			continue
		}
		if msg := explainFlagError(fs, err); !strings.Contains(msg, c.want) {
			t.Errorf("%s: %q, want it to contain %q", c.typo, msg, c.want)
		}
	}
	o = defaultOptions()
	o.MixedPrecision = "fp16"
	if err := o.check(); err == nil || !strings.Contains(err.Error(), "loss scaling") ||
		!strings.Contains(err.Error(), "--mixed_precision bf16") {
		t.Errorf("fp16: %v; want the reason (loss scaling) and the alternative (bf16)", err)
	}
}

// TestPlan: --max_steps is the number of optimizer steps of the whole run, in both loops; it
// overrides --epochs (Hugging Face's meaning), and gradient accumulation divides the batches.
func TestPlan(t *testing.T) {
	for _, c := range []struct {
		epochs, maxSteps, accum, batches int
		total                            int64
		epochsRun                        int
	}{
		{3, 0, 1, 23, 69, 3},
		{1, 3, 1, 23, 3, 1},
		{1, 30, 1, 23, 30, 2}, // more steps than --epochs gives: more epochs, as in Hugging Face
		{2, 0, 4, 23, 11, 2},  // 46 batches: 11 steps; the last 2 batches make no step
		{3, 7, 2, 10, 7, 2},
	} {
		o := defaultOptions()
		o.Epochs, o.MaxSteps, o.GradAccum = c.epochs, c.maxSteps, c.accum
		p, err := o.stepPlan(c.batches, 1)
		if err != nil {
			t.Fatal(err)
		}
		if p.total != c.total || p.epochs != c.epochsRun {
			t.Errorf("%+v: %d steps over %d epochs, want %d over %d", c, p.total, p.epochs, c.total, c.epochsRun)
		}
	}
}

// TestMessagesNameFlags: the library's errors that name Config fields reach the user with the
// flags to change instead, and still unwrap to the library's error.
func TestMessagesNameFlags(t *testing.T) {
	lib := errors.New(`trainer: --output_dir placeholder`)
	lib = fmt.Errorf("trainer: %s holds a run with another configuration; use another Config.OutputDir: %w", "runs/x", lib)
	got := flagError(lib)
	if !strings.Contains(got.Error(), "use another --output_dir") || strings.Contains(got.Error(), "Config.") {
		t.Errorf("got %q", got)
	}
	if !errors.Is(got, lib) {
		t.Error("the renamed error does not unwrap to the library's")
	}
}
