package main

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/examples/internal/exampletest"

	"github.com/goaccel/goaccel/models/auto"
	"github.com/goaccel/goaccel/models/bert"
	"github.com/gomlx/gomlx/ml/model"
)

// TestUsePEFT: --use_peft attaches a LoRA adapter of the --lora_* flags (PEFT's default
// targets without --lora_target_modules), bad values are refused naming their flag, and a
// short run writes best/ as the merged model (which loads with its head) and best/adapter as
// PEFT's files.
func TestUsePEFT(t *testing.T) {
	parse := func(args ...string) options {
		t.Helper()
		o := defaultOptions()
		if err := newFlagSet(&o).Parse(args); err != nil {
			t.Fatal(err)
		}
		return o
	}
	m, err := loadModel(parse("--use_peft", "--lora_r", "4", "--lora_alpha", "16", "--lora_dropout", "0.1"))
	if err != nil {
		t.Fatal(err)
	}
	a := m.Classifier.(*bert.Classifier).Adapter()
	if a == nil {
		t.Fatal("--use_peft: the model has no LoRA adapter")
	}
	if c := a.Config(); c.R != 4 || c.Alpha != 16 || c.Dropout != 0.1 || strings.Join(c.TargetModules, ",") != "query,value" {
		t.Errorf("--use_peft --lora_r 4 --lora_alpha 16 --lora_dropout 0.1: adapter config %+v", c)
	}
	for flag, value := range map[string]string{"lora_r": "0", "lora_alpha": "-1", "lora_dropout": "1", "lora_target_modules": "q_lin"} {
		_, err := loadModel(parse("--use_peft", "--"+flag, value))
		if err == nil || !strings.Contains(err.Error(), "--"+flag) {
			t.Errorf("--use_peft --%s %s: got %v, want an error naming the flag", flag, value, err)
		}
	}
	if _, err := loadModel(parse("--lora_r", "4")); err == nil || !strings.Contains(err.Error(), "--use_peft") {
		t.Errorf("--lora_r without --use_peft: got %v, want an error saying it needs --use_peft", err)
	}

	o := parse("--use_peft", "--backend", "go", "--max_steps", "2", "--workers", "0", "--learning_rate", "1e-3")
	o.OutputDir = t.TempDir()
	if _, _, err := run(o, io.Discard); err != nil {
		t.Fatal(err)
	}
	best := filepath.Join(o.OutputDir, "best")
	for _, f := range []string{"adapter/adapter_config.json", "adapter/adapter_model.safetensors", "config.json", "model.safetensors"} {
		if _, err := os.Stat(filepath.Join(best, f)); err != nil {
			t.Errorf("best/%s: %v", f, err)
		}
	}
	if _, err := auto.Load(best, model.NewStore(), auto.Options{MaxLen: o.MaxLen, LoadHead: true}); err != nil {
		t.Errorf("best/ (merged) does not load: %v", err)
	}
}

// TestLoRASameLossesOn1And2Processes: --use_peft trains a BERT-family model (the built-in
// tiny BERT), ModernBERT and DeBERTa-v3 (their tiny checkpoints) at a fixed global batch (8)
// with the same step losses on 1 process of 1 XLA CPU device and, under the launcher (MPI),
// on 2 processes of 1 device each, within 1e-5; both runs write best/adapter.
func TestLoRASameLossesOn1And2Processes(t *testing.T) {
	plugin := cpuPlugin(t)
	cache, _ := modernBERTCache(t)
	t.Setenv("HF_HUB_CACHE", cache)
	folders := map[string][]string{
		"bert":       nil, // the built-in tiny BERT
		"modernbert": {"--model_dir", "org/tiny-modernbert"},
		"deberta-v2": {"--model_dir", filepath.Join("..", "..", "models", "deberta", "testdata", "tiny")}, // read only
	}
	const steps = 4
	for _, family := range []string{"bert", "modernbert", "deberta-v2"} {
		t.Run(family, func(t *testing.T) {
			args := func(dir string) []string {
				return append([]string{"--backend", plugin, "--use_peft", "--lora_r", "4", "--lora_alpha", "8",
					"--global_batch_size", "8", "--max_steps", strconv.Itoa(steps), "--max_len", "24", "--dropout", "0",
					"--workers", "0", "--logging_steps", "1", "--learning_rate", "1e-2", "--output_dir", dir}, folders[family]...)
			}
			root := t.TempDir()
			one := filepath.Join(root, "1")
			if out, err := exampletest.Child(t, append(args(one), "--devices", "1")...).CombinedOutput(); err != nil {
				t.Fatalf("1 process: %v\n%s", err, out)
			}
			ref := stepLosses(t, one)
			if len(ref) != steps {
				t.Fatalf("1 process: %d step losses, want %d", len(ref), steps)
			}
			multi := exampletest.LaunchTwo(t, root, args)
			d := checkSameLosses(t, "2 processes", stepLosses(t, multi), ref)
			for _, dir := range []string{one, multi} {
				if _, err := os.Stat(filepath.Join(dir, "best", "adapter", "adapter_model.safetensors")); err != nil {
					t.Errorf("no adapter in best/: %v", err)
				}
			}
			t.Logf("%s with LoRA (r 4, alpha 8): step losses %v on 1 process; max abs diff %.2g on 2 processes", family, ref, d)
		})
	}
}
