package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goaccel/goaccel/accelerator/acceltest"
	"github.com/goaccel/goaccel/checkpoint"
	"github.com/goaccel/goaccel/examples/internal/exampletest"
	"github.com/goaccel/goaccel/internal/testutil"
)

// TestMain: see exampletest.Main.
func TestMain(m *testing.M) { exampletest.Main(m, main) }

// parse returns the options of a command line.
func parse(t *testing.T, args ...string) options {
	t.Helper()
	var o options
	if err := newFlagSet(&o).Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestFlags: Hugging Face's TrainingArguments names, kebab case accepted.
func TestFlags(t *testing.T) {
	o := parse(t, "--batch-size", "8", "--gradient-accumulation-steps", "4", "--max_grad_norm", "1", "--weight_decay", "0.01",
		"--warmup_ratio", "0.1", "--lr_scheduler_type", "linear", "--patience", "2", "--max-steps", "30",
		"--learning_rate", "3e-5", "--save_steps", "5", "--save_total_limit", "2", "--gradient-checkpointing")
	if o.BatchSize != 8 || o.GradAccum != 4 || o.MaxGradNorm != 1 || o.WeightDecay != 0.01 || o.WarmupRatio != 0.1 ||
		o.Schedule != "linear" || o.Patience != 2 || o.MaxSteps != 30 || o.LearningRate != 3e-5 || o.SaveSteps != 5 ||
		o.SaveTotalLimit != 2 || o.Epochs != 3 || o.Seed != 42 || !o.GradientCheckpointing {
		t.Errorf("flags not set: %+v", o)
	}
}

// TestFitLearnsAndNamesFlags trains the tiny model through trainer.Fit: it learns, leaves a
// run directory, and the same command on it finds the run complete; the trainer's errors
// reach the user with the flag to change.
func TestFitLearnsAndNamesFlags(t *testing.T) {
	o := parse(t, "--backend", acceltest.CPUPlugin(t), "--devices", "2", "--batch_size", "16", "--workers", "1",
		"--output_dir", t.TempDir(), "--report_to", "tensorboard,csv")
	var out strings.Builder
	res, code, err := run(o, &out)
	if err != nil || code != 0 {
		t.Fatal(code, err)
	}
	if res.Best < 0.7 {
		t.Errorf("best accuracy %.3f, want >= 0.7", res.Best)
	}
	for _, f := range []string{"config.json", "metrics.jsonl", "curves.png", "best/model.safetensors", "metrics.csv"} {
		if _, err := os.Stat(filepath.Join(o.OutputDir, f)); err != nil {
			t.Errorf("run directory lacks %s: %v", f, err)
		}
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Error("progress written to a non-terminal contains escape codes")
	}
	out.Reset()
	if res, _, err := run(o, &out); err != nil || res.StopReason != "already complete" {
		t.Errorf("the same command on the finished run: %v, %+v:\n%s", err, res, out.String())
	}
	if files, _ := filepath.Glob(filepath.Join(o.OutputDir, "events.out.tfevents.*")); len(files) != 1 {
		t.Errorf("--report_to tensorboard: the run directory holds the event files %v, want 1", files)
	}
	if _, _, err := run(parse(t, "--report_to", "tensorboard,wandb"), io.Discard); err == nil ||
		!strings.Contains(err.Error(), "--report_to") || !strings.Contains(err.Error(), "wandb") {
		t.Errorf("--report_to tensorboard,wandb: %v, want an error naming the flag and wandb", err)
	}
	o.WarmupRatio, o.OutputDir = 1.5, t.TempDir()
	if _, _, err := run(o, io.Discard); err == nil || !strings.Contains(err.Error(), "--warmup_ratio = 1.5") {
		t.Errorf("--warmup_ratio 1.5: %v, want an error naming the flag", err)
	}
}

// TestSignalAndResumeEqualsUninterrupted: SIGTERM (a preempted job) in the middle of the
// first epoch: Fit finishes the step, saves, prints the command that resumes and the program
// exits with 143; the same command again (no --output_dir) finds the run, resumes it and
// ends with the weights and metrics.jsonl of an uninterrupted run, best/ a Hugging Face
// folder.
func TestSignalAndResumeEqualsUninterrupted(t *testing.T) {
	plugin := acceltest.CPUPlugin(t)
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	root := t.TempDir()
	args := []string{"--backend", plugin, "--devices", "2", "--batch-size", "16", "--epochs", "2", "--workers", "1"}
	full := filepath.Join(root, "full")
	if out, err := exampletest.Child(t, append(args, "--output_dir", full)...).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	work := filepath.Join(root, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	first := exampletest.Child(t, args...)
	first.Dir = work
	out, code := exampletest.InterruptAfterFirstBatch(t, first, syscall.SIGTERM)
	if code != 143 {
		t.Errorf("exit status %d after SIGTERM, want 143", code)
	}
	for _, want := range []string{"run directory: ", "epoch 1/2: training from step 0/46",
		"finishing the current step and saving a checkpoint", "stopped after step", "to resume: "} {
		if !strings.Contains(out, want) {
			t.Errorf("the interrupted session's output misses %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`(?m)^epoch 1/2 batch 1/23, step 1/46: loss \d\.\d{4}$`).MatchString(out) {
		t.Errorf("no plain progress line for the first batch:\n%s", out)
	}
	configs, _ := filepath.Glob(filepath.Join(work, "runs", "fit-*", "config.json"))
	if len(configs) != 1 {
		t.Fatalf("want one run directory under %s/runs, found %v", work, configs)
	}
	runDir := filepath.Dir(configs[0])
	exampletest.CheckModes(t, "after the interrupt", runDir)
	second := exampletest.Child(t, args...)
	second.Dir = work
	out2, err := second.CombinedOutput()
	if err != nil {
		t.Fatalf("resumed session: %v\n%s", err, out2)
	}
	if !strings.Contains(string(out2), "the interrupted run of this command") || !strings.Contains(string(out2), "resuming") {
		t.Errorf("the same command did not find and resume the interrupted run:\n%s", out2)
	}
	exampletest.SameRun(t, full, runDir)
}

// TestKillAndResumeEqualsUninterrupted: the program is killed with SIGKILL in the middle of
// its first epoch (right after the checkpoint of step 5, --save_steps 5), started again on
// the same run directory, and ends with the same weights (bit for bit, XLA CPU) as a run that
// was never interrupted: the resumed session continues the same epoch in the same order.
func TestKillAndResumeEqualsUninterrupted(t *testing.T) {
	plugin := acceltest.CPUPlugin(t)
	root := t.TempDir()
	args := func(dir string) []string {
		return []string{"--backend", plugin, "--devices", "2", "--batch_size", "16", "--epochs", "4", "--workers", "1",
			"--save_steps", "5", "--output_dir", dir}
	}
	full := filepath.Join(root, "full")
	if out, err := exampletest.Child(t, args(full)...).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	resumed := filepath.Join(root, "resumed")
	first := exampletest.Child(t, args(resumed)...)
	var firstOut bytes.Buffer
	first.Stdout, first.Stderr = &firstOut, &firstOut
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	latest := filepath.Join(resumed, "checkpoints", checkpoint.LatestFile)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(latest); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = first.Process.Kill()
			t.Fatalf("no checkpoint after 2 minutes:\n%s", firstOut.String())
		}
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	if strings.Contains(firstOut.String(), "trainer: done") {
		t.Fatalf("the first session finished before it could be killed:\n%s", firstOut.String())
	}
	out, err := exampletest.Child(t, args(resumed)...).CombinedOutput()
	if err != nil {
		t.Fatalf("resumed run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "resuming") {
		t.Errorf("the second session did not resume:\n%s", out)
	}
	if exampletest.FinalWeights(t, full) != exampletest.FinalWeights(t, resumed) {
		t.Errorf("the final weights of the killed-and-resumed run differ from the uninterrupted run's")
	}
	if a, b := exampletest.MetricsLines(t, full), exampletest.MetricsLines(t, resumed); len(a) != len(b) {
		t.Errorf("metrics.jsonl has %d records after the resume, %d without interruption", len(b), len(a))
	}
}

// TestBadFlagsNameTheFlag: a bad value of any flag stops the program with an error that
// names the flag as typed, whichever layer (the program, the trainer, the accelerator, the
// loader) refuses it.
func TestBadFlagsNameTheFlag(t *testing.T) {
	var o options
	testutil.BadFlags(t, exampletest.FlagNames(newFlagSet(&o)), exampletest.ShortRunArgs, map[string]string{
		"data_dir": "/nonexistent/rt", "model_dir": t.TempDir(), "output_dir": exampletest.RegularFile(t), "epochs": "-1", "max_steps": "-1",
		"batch_size": "0", "global_batch_size": "0", "gradient_accumulation_steps": "0", "learning_rate": "-1",
		"lr_scheduler_type": "cosine_restarts", "warmup_ratio": "1.5", "warmup_steps": "-1", "weight_decay": "-1",
		"max_grad_norm": "-1", "patience": "-1", "save_steps": "-1", "save_total_limit": "-1", "max_len": "4096",
		"dropout": "1", "test_size": "1.5", "mixed_precision": "fp8", "sharding": "fsdp", "devices": "-1",
		"backend": "tpu", "workers": "-1", "report_to": "wandb",
	}, map[string]string{
		"async_save":             "a boolean: both values are valid",
		"gradient_checkpointing": "a boolean: both values are valid",
		"seed":                   "any integer is a seed",
	}, exampletest.RunChild)
}
