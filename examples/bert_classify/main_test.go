package main

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/accelerator/acceltest"
	"github.com/goaccel/goaccel/examples/internal/exampletest"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/trainer"
)

// cpuPlugin finds XLA's CPU plugin for the multi-device test; it skips loudly without one,
// except under CI where the plugin is installed by make deps and its absence is a failure.
func cpuPlugin(t *testing.T) string {
	t.Helper()
	return acceltest.CPUPlugin(t)
}

// TestTinyModelSameLossesOn1And4Devices trains the built-in tiny BERT for a few steps at the
// same global batch (16) on 1 and on 4 XLA CPU devices: the step losses must agree. Dropout is
// off: the masks are drawn for the global batch's rows, and on another device count the
// sampler puts other examples in those rows, so with dropout the runs are statistically, not
// numerically, alike (docs/semantics.md).
func TestTinyModelSameLossesOn1And4Devices(t *testing.T) {
	plugin := cpuPlugin(t)
	var ref []float64
	for _, devices := range []int{1, 4} {
		o := defaultOptions()
		o.Backend, o.Devices, o.BatchSize = plugin, devices, 16/devices
		o.Epochs, o.MaxSteps, o.Workers, o.Dropout = 1, 4, 0, 0
		o.OutputDir = t.TempDir()
		o.LoggingSteps = 1
		if _, _, err := run(o, io.Discard); err != nil {
			t.Fatalf("%d devices: %v", devices, err)
		}
		losses := stepLosses(t, o.OutputDir)
		if len(losses) != 4 {
			t.Fatalf("%d devices: %d step losses, want 4", devices, len(losses))
		}
		if devices == 1 {
			ref = losses
			continue
		}
		for i, l := range losses {
			if math.Abs(l-ref[i]) > 1e-4 {
				t.Errorf("step %d: loss %.6f on 4 devices, %.6f on 1", i, l, ref[i])
			}
		}
		t.Logf("losses 1 device %v, 4 devices %v", ref, losses)
	}
}

// TestDefaultRunLearns trains the default tiny model on the built-in data (on one XLA CPU
// device, for speed) and checks it learns and writes the run directory; the same flags on
// the finished directory train no more, and other flags are refused before anything changes.
func TestDefaultRunLearns(t *testing.T) {
	o := defaultOptions()
	o.Backend, o.Devices, o.BatchSize, o.Epochs, o.Workers = cpuPlugin(t), 1, 32, 3, 1
	o.OutputDir, o.ReportTo = t.TempDir(), "tensorboard,csv,jsonl"
	res, code, err := run(o, io.Discard)
	if err != nil || code != 0 {
		t.Fatal(code, err)
	}
	checkReports(t, o.OutputDir)
	if best := res.Best; best < 0.7 {
		t.Errorf("best test accuracy %.3f after %d epochs on the built-in data, want clearly above chance (>= 0.7)", best, o.Epochs)
	}
	for _, f := range []string{"config.json", "metrics.jsonl", "curves.png", "curves.svg", "best/model.safetensors", "best/config.json"} {
		if _, err := os.Stat(filepath.Join(o.OutputDir, f)); err != nil {
			t.Errorf("run directory lacks %s: %v", f, err)
		}
	}
	again, _, err := run(o, io.Discard)
	if err != nil || again.Steps != res.Steps || again.StopReason != "already complete" {
		t.Fatalf("the same flags on the finished run: %v; %d steps (%v), want %d and no more training", err, again.Steps,
			again, res.Steps)
	}
	checkReports(t, o.OutputDir)
	o.Seed++
	if _, _, err := run(o, io.Discard); err == nil || !strings.Contains(err.Error(), "another configuration") ||
		!strings.Contains(err.Error(), "seed: config.json has 42, this run 43") {
		t.Errorf("another --seed on the same run directory: %v; want an error naming the difference", err)
	}
}

func TestBadFlagsStopBeforeTraining(t *testing.T) {
	cases := []struct {
		name string
		edit func(*options)
		want string
	}{
		{"missing data dir", func(o *options) { o.DataDir = "/nonexistent/rt" }, "/nonexistent/rt is not a readable folder"},
		{"data dir without files", func(o *options) { o.DataDir = t.TempDir() }, "--data_dir: text: LoadPolarityDir"},
		{"model dir without weights", func(o *options) { o.ModelDir = t.TempDir() }, "config.json"},
		{"max_len above positions", func(o *options) { o.MaxLen = 4096 }, "--max_len 4096"},
		{"zero batch", func(o *options) { o.BatchSize = 0 }, "--batch_size"},
		{"bad test size", func(o *options) { o.TestSize = 1.5 }, "--test_size"},
		{"unknown backend", func(o *options) { o.Backend = "tpu" }, `--backend "tpu": unknown backend`},
		{"unknown precision", func(o *options) { o.MixedPrecision = "fp8" }, `"bf16" and "fp16"`},
		{"sharding", func(o *options) { o.Sharding = "fsdp" }, `--sharding "fsdp": unknown sharding: valid values are "no", "zero1"`},
		{"dropout 1", func(o *options) { o.Dropout = 1 }, "--dropout 1: must be below 1"},
		{"dropout NaN", func(o *options) { o.Dropout = math.NaN() }, "--dropout NaN: not a number"},
		{"data dir and train file", func(o *options) { o.DataDir, o.TrainFile = "d", "t.csv" }, "--data_dir d and --train_file t.csv are both given"},
		{"validation file alone", func(o *options) { o.ValidationFile = "v.csv" }, `--validation_file "v.csv" needs --train_file`},
		{"empty column name", func(o *options) { o.TrainFile, o.TextColumnNames = "t.csv", "a,,b" }, `--text_column_names "a,,b", --label_column_name "label": a column name is empty`},
		{"train file pattern", func(o *options) { o.TrainFile = "/nonexistent/train-*.parquet" }, `--train_file: table: pattern "/nonexistent/train-*.parquet" matches no file`},
		{"train file column", func(o *options) {
			o.TrainFile = filepath.Join(o.OutputDir, "..", "t.csv")
			_ = os.WriteFile(o.TrainFile, []byte("text,label\nfine,1\n"), 0o644)
		}, `t.csv: no column "sentence" (the file has 2: "text", "label")`},
		{"foreign output dir", func(o *options) {
			_ = os.WriteFile(filepath.Join(o.OutputDir, "notes.txt"), []byte("mine"), 0o644)
		}, "not empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := defaultOptions()
			o.Backend = "go"
			o.OutputDir = t.TempDir()
			c.edit(&o)
			_, _, err := run(o, io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error mentioning %q", err, c.want)
			}
		})
	}
	t.Run("empty line in data", func(t *testing.T) {
		dir := t.TempDir()
		_ = os.WriteFile(filepath.Join(dir, "x.pos"), []byte("good movie\n\nfine film\n"), 0o644)
		_ = os.WriteFile(filepath.Join(dir, "x.neg"), []byte("bad movie\n"), 0o644)
		o := defaultOptions()
		o.Backend, o.DataDir, o.OutputDir = "go", dir, t.TempDir()
		_, _, err := run(o, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "x.pos:2") {
			t.Errorf("got %v, want an error naming x.pos:2", err)
		}
	})
}

// TestMixedPrecisionBF16 trains with --mixed_precision bf16 (bfloat16 activations, float32
// master weights): it still learns, and the run records the precision.
func TestMixedPrecisionBF16(t *testing.T) {
	testutil.Long(t, "the program in bf16 (tier 1: accelerator TestMixedPrecisionTinyBERT trains the tiny BERT in bf16)")
	o := defaultOptions()
	o.Backend, o.Devices, o.BatchSize, o.Epochs, o.Workers, o.MixedPrecision = cpuPlugin(t), 2, 16, 3, 1, "bf16"
	o.OutputDir = t.TempDir()
	res, _, err := run(o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.Best < 0.7 {
		t.Errorf("best accuracy %.3f in bf16, want >= 0.7", res.Best)
	}
	cfg, err := os.ReadFile(filepath.Join(o.OutputDir, "config.json"))
	if err != nil || !strings.Contains(string(cfg), "precision bf16") {
		t.Errorf("config.json does not record bf16 (%v)", err)
	}
}

// stepLosses reads the training losses of a run with --logging_steps 1 from its metrics.jsonl.
func stepLosses(t *testing.T, dir string) []float64 {
	t.Helper()
	recs, err := trainer.ReadMetrics(filepath.Join(dir, trainer.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	var losses []float64
	for _, r := range recs {
		if r.Kind == trainer.KindTrain {
			if r.Step != int64(len(losses)+1) {
				t.Fatalf("%s: a training record of step %d after %d steps: want one per step (--logging_steps 1)",
					dir, r.Step, len(losses))
			}
			losses = append(losses, r.Loss)
		}
	}
	return losses
}

// checkReports: --report_to tensorboard,csv left one TensorBoard event file and metrics.csv
// with a row per record of metrics.jsonl.
func checkReports(t *testing.T, dir string) {
	t.Helper()
	if files, _ := filepath.Glob(filepath.Join(dir, trainer.EventFilePrefix+"*")); len(files) != 1 {
		t.Errorf("--report_to tensorboard: the run directory holds the event files %v, want 1", files)
	}
	recs, err := trainer.ReadMetrics(filepath.Join(dir, trainer.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, trainer.CSVFile))
	if n := bytes.Count(raw, []byte("\n")) - 1; err != nil || n != len(recs) {
		t.Errorf("--report_to csv: %s has %d rows (%v), metrics.jsonl %d records", trainer.CSVFile, n, err, len(recs))
	}
}

// TestBadFlagsNameTheFlag: a bad value of any flag stops the program with an error that
// names the flag as typed, whichever layer (the program, the accelerator, the loader, the
// optimizer) refuses it.
func TestBadFlagsNameTheFlag(t *testing.T) {
	o := defaultOptions()
	names := exampletest.FlagNames(newFlagSet(&o), aliases)
	bad, none := exampletest.SharedBadFlags(t, map[string]string{
		"data_dir": "/nonexistent/rt", "max_len": "4096", "test_size": "1.5",
		"train_file": "/nonexistent/train.csv", "validation_file": "/nonexistent/dev.csv", "text_column_names": "",
		"label_column_name": "", "text_column_delimiter": "|", "problem_type": "ranking", "label_delimiter": "|", "test_file": "/nonexistent/test.csv",
		"max_seq_length": "4096", // run_classification.py's alias of --max_len
		"dataset_name":   "org/not-a-dataset", "dataset_config_name": "plain", "dataset_revision": "v2",
	})
	testutil.BadFlags(t, names, exampletest.ShortRunArgs, bad, none, exampletest.RunChild)
}
