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
// 32, learning rate 1e-3 on the cosine schedule, momentum 0.9, weight decay 5e-4.
//
// In float64 (--float64 against the twin's --double) the 20 step losses agree within 1e-9
// (measured 2.7e-15): the recipe (BatchNorm, SGD, schedule, loss, data order) is torch's.
// In float32 the first 5 agree within 1e-5 and all 20 within 5e-3, not the 1e-4 issue 58 asked
// for: from step 3 to 6 some ReLU's input lies within float32's rounding of 0 (3.1e-7 at
// step 3), the two float32 programs round it to different sides, the gradient of a layer moves
// by a few percent and the runs part; torch float32 parts from torch float64 in the same way
// (2-4e-4 from step 13 on, run and logged here). docs/cifar10.md has the measurements.
func TestTorchTwinSameLosses(t *testing.T) {
	py := torchPython(t)
	plugin := acceltest.CPUPlugin(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	twin(t, py, "--make_data", data, "--train_images", "640", "--test_images", "64")
	const steps = 20
	// goRun runs examples/cifar10 in float32 or float64, exporting its initial weights, and
	// returns its step losses and the initial weights' file.
	goRun := func(name string, f64 bool) ([]float64, string) {
		init := filepath.Join(dir, name+"-init.safetensors")
		o := defaultOptions()
		o.Backend, o.Devices, o.DataDir, o.Width, o.BatchSize, o.MaxSteps, o.Float64 = plugin, 1, data, 8, 32, steps, f64
		o.LearningRate, o.Augment, o.Shuffle, o.SaveInit, o.LoggingSteps, o.OutputDir = 1e-3, false, false, init, 1, filepath.Join(dir, name)
		if _, _, err := run(o, io.Discard); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		losses, _ := records(t, o.OutputDir)
		tensors, _, err := safetensors.ReadFile(init)
		if err != nil {
			t.Fatal(err)
		}
		if len(tensors) == 0 {
			t.Fatalf("--save_init wrote no tensor to %s", init)
		}
		return losses, init
	}
	// torchRun runs the twin from init and returns its step losses.
	torchRun := func(name, init string, extra ...string) []float64 {
		file := filepath.Join(dir, name+".jsonl")
		twin(t, py, append([]string{"--data_dir", data, "--width", "8", "--batch_size", "32", "--max_steps", "20", "--lr", "1e-3",
			"--no_augment", "--no_shuffle", "--init", init, "--workers", "0", "--losses", file,
			"--output_dir", filepath.Join(dir, name)}, extra...)...)
		return twinLosses(t, file)
	}
	check := func(what string, got, want []float64, tolerance func(step int) float64, log func(i int)) {
		if len(got) != steps || len(want) != steps {
			t.Fatalf("%s: %d and %d step losses (Go, torch), want %d each", what, len(got), len(want), steps)
		}
		for i := range got {
			log(i)
			if d := math.Abs(got[i] - want[i]); !(d <= tolerance(i+1)) {
				t.Errorf("%s, step %d: Go's loss %.12f, torch's %.12f: %.1e apart, want at most %g", what, i+1, got[i], want[i], d, tolerance(i+1))
			}
		}
	}

	go64, init64 := goRun("go64", true)
	t64 := torchRun("torch64", init64, "--double")
	check("float64", go64, t64, func(int) float64 { return 1e-9 }, func(i int) {
		t.Logf("float64, step %2d: Go %.12f torch %.12f |diff| %.1e", i+1, go64[i], t64[i], math.Abs(go64[i]-t64[i]))
	})

	go32, init32 := goRun("go32", false)
	l32, l64 := torchRun("torch32", init32), torchRun("torch32in64", init32, "--double")
	if len(l64) != steps {
		t.Fatalf("torch in float64 from the float32 weights: %d step losses, want %d", len(l64), steps)
	}
	check("float32", go32, l32, func(step int) float64 {
		if step <= 5 {
			return 1e-5
		}
		return 5e-3
	}, func(i int) {
		t.Logf("float32, step %2d: Go %.7f torch %.7f |diff| %.1e; torch in float64 %.7f (torch float32's own drift %.1e)",
			i+1, go32[i], l32[i], math.Abs(go32[i]-l32[i]), l64[i], math.Abs(l32[i]-l64[i]))
	})
}
