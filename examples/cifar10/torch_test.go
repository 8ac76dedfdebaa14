package main

import (
	"bufio"
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/accelerator/acceltest"
	"github.com/goaccel/goaccel/checkpoint/safetensors"
)

// torchPython is GOACCEL_TORCH_PYTHON, a Python with torch and torchvision; without it the
// test is skipped, saying so.
func torchPython(t *testing.T) string {
	t.Helper()
	py := os.Getenv("GOACCEL_TORCH_PYTHON")
	if py == "" {
		t.Skip("SKIPPED: GOACCEL_TORCH_PYTHON is not set (a Python with torch 2.15 and torchvision 0.29; `make torch-venv`): " +
			"the comparison with scripts/cifar10_torch.py did not run")
	}
	return py
}

// twin runs scripts/cifar10_torch.py with args and returns its output.
func twin(t *testing.T, py string, args ...string) string {
	t.Helper()
	cmd := exec.Command(py, append([]string{filepath.Join("..", "..", "scripts", "cifar10_torch.py")}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cifar10_torch.py %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// twinLosses reads the step losses the twin wrote with --losses.
func twinLosses(t *testing.T, path string) []float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct{ Loss float64 }
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, r.Loss)
	}
	return out
}

// TestTorchTwinSameLosses: examples/cifar10 and scripts/cifar10_torch.py, from the initial
// weights the Go program exports (--save_init, loaded by the twin's --init), augmentation and
// shuffling off (both read the files' order), on CIFAR-10 Python batches the twin writes
// (--make_data; torchvision's CIFAR10 reads them, and data/image's reader), width 8, batch
// 32, learning rate 1e-3 on the cosine schedule, momentum 0.9, weight decay 5e-4: the first
// 5 step losses agree within 1e-5 (measured: 5e-7 at most), and all 20 within 5e-3.
//
// Not 1e-4 over 20 steps, which is what issue 58 asked for: from step 6 on Go's losses move
// away from torch's by 1e-4 to 1e-3 (2026-12-07: 9.8e-5 at step 6, 3.4e-4 at step 7, 1.3e-3
// at step 19), while the twin in float32 and in float64 (--double, run here too and logged)
// stay within 1e-6 up to step 8 and part by 2-4e-4 only near step 20. Go's own float32 run
// moves as far when only XLA's optimisation level changes (step 6: 3.8e-6 off torch at the
// default level, 9.8e-5 at level 0), so the remaining difference is in how XLA's CPU
// float32 arithmetic rounds this network, not in the recipe: a wrong momentum, decay,
// schedule or initialisation shows at step 2 or 3, by 1e-3 or more.
func TestTorchTwinSameLosses(t *testing.T) {
	py := torchPython(t)
	plugin := acceltest.CPUPlugin(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	twin(t, py, "--make_data", data, "--train_images", "640", "--test_images", "64")

	init := filepath.Join(dir, "init.safetensors")
	o := defaultOptions()
	o.Backend, o.Devices, o.DataDir, o.Width, o.BatchSize, o.MaxSteps = plugin, 1, data, 8, 32, 20
	o.LearningRate, o.Augment, o.Shuffle, o.SaveInit, o.LoggingSteps, o.OutputDir = 1e-3, false, false, init, 1, filepath.Join(dir, "go")
	if _, _, err := run(o, io.Discard); err != nil {
		t.Fatal(err)
	}
	goLosses, _ := records(t, o.OutputDir)
	tensors, _, err := safetensors.ReadFile(init)
	if err != nil {
		t.Fatal(err)
	}
	if len(tensors) == 0 {
		t.Fatalf("--save_init wrote no tensor to %s", init)
	}

	common := []string{"--data_dir", data, "--width", "8", "--batch_size", "32", "--max_steps", "20", "--lr", "1e-3",
		"--no_augment", "--no_shuffle", "--init", init, "--workers", "0"}
	t32, t64 := filepath.Join(dir, "t32.jsonl"), filepath.Join(dir, "t64.jsonl")
	twin(t, py, append(common, "--losses", t32, "--output_dir", filepath.Join(dir, "torch32"))...)
	twin(t, py, append(common, "--losses", t64, "--output_dir", filepath.Join(dir, "torch64"), "--double")...)
	l32, l64 := twinLosses(t, t32), twinLosses(t, t64)
	if len(goLosses) != 20 || len(l32) != 20 || len(l64) != 20 {
		t.Fatalf("%d, %d and %d step losses (Go, torch float32, torch float64), want 20 each", len(goLosses), len(l32), len(l64))
	}
	for i := range goLosses {
		d := math.Abs(goLosses[i] - l32[i])
		t.Logf("step %2d: Go %.7f torch %.7f |diff| %.1e; torch in float64 %.7f (float32's own drift %.1e)",
			i+1, goLosses[i], l32[i], d, l64[i], math.Abs(l32[i]-l64[i]))
		tolerance := 5e-3
		if i < 5 {
			tolerance = 1e-5
		}
		if !(d <= tolerance) {
			t.Errorf("step %d: Go's loss %.7f, torch's %.7f: %.1e apart, want at most %g", i+1, goLosses[i], l32[i], d, tolerance)
		}
	}
}
