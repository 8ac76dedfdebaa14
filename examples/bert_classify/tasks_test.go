package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/examples/internal/exampletest"
	"github.com/goaccel/goaccel/trainer"
)

// The synthetic tasks are made from the built-in sentences, so that the tiny BERT can
// learn them in a few epochs: a sentence's polarity is known (sample.Polarity), and its
// length is in the text.

// writeRegression writes a CSV whose label is a float: 1.0 for a positive sentence and -1.0
// for a negative one, plus 0.5 for a sentence of more than 8 words.
func writeRegression(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"sentence", "score"})
	for _, ex := range shuffledSample() {
		score := 2*float64(ex.Label) - 1
		if len(strings.Fields(ex.Text)) > 8 {
			score += 0.5
		}
		_ = w.Write([]string{ex.Text, strconv.FormatFloat(score, 'f', 1, 64)})
	}
	if w.Flush(); w.Error() != nil {
		t.Fatal(w.Error())
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeMultiLabel writes JSON Lines whose label is a list: "positive" or "negative", and
// "long" too for a sentence of more than 8 words.
func writeMultiLabel(t *testing.T, path string) {
	t.Helper()
	var b bytes.Buffer
	for _, ex := range shuffledSample() {
		labels := []string{[]string{"negative", "positive"}[ex.Label]}
		if len(strings.Fields(ex.Text)) > 8 {
			labels = append(labels, "long")
		}
		line, err := json.Marshal(map[string]any{"sentence": ex.Text, "tags": labels})
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// evalOf returns the last evaluation record's metrics of a run directory.
func evalOf(t *testing.T, dir string) map[string]float64 {
	t.Helper()
	recs, err := trainer.ReadMetrics(filepath.Join(dir, trainer.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	var last map[string]float64
	for _, r := range recs {
		if r.Kind == trainer.KindEval {
			last = r.Eval
		}
	}
	if last == nil {
		t.Fatalf("%s: no evaluation record", dir)
	}
	return last
}

// TestRegressionAndMultiLabelLearn: a float label column trains a regression and a list
// column a multi-label classifier, chosen from the data as run_classification.py chooses;
// both learn their synthetic task, and best/config.json says the problem_type (and, for
// multi-label, names the classes).
func TestRegressionAndMultiLabelLearn(t *testing.T) {
	plugin := cpuPlugin(t)
	dir := t.TempDir()
	cases := []struct {
		problem, file, label, best string
		write                      func(*testing.T, string)
		check                      func(map[string]float64) error
	}{
		{"regression", "scores.csv", "score", "loss", writeRegression, func(m map[string]float64) error {
			if !(m["pearson"] > 0.6 && m["spearman"] > 0.5 && m["mse"] < 0.8) {
				return fmt.Errorf("pearson %.3f, spearman %.3f, mse %.3f: want pearson > 0.6, spearman > 0.5, mse < 0.8",
					m["pearson"], m["spearman"], m["mse"])
			}
			return nil
		}},
		{"multi_label_classification", "tags.jsonl", "tags", "micro_f1", writeMultiLabel, func(m map[string]float64) error {
			if !(m["micro_f1"] > 0.75 && m["subset_accuracy"] > 0.4) {
				return fmt.Errorf("micro_f1 %.3f, subset_accuracy %.3f: want > 0.75 and > 0.4", m["micro_f1"], m["subset_accuracy"])
			}
			return nil
		}},
	}
	for _, c := range cases {
		t.Run(c.problem, func(t *testing.T) {
			train := filepath.Join(dir, c.file)
			c.write(t, train)
			o := defaultOptions()
			o.Backend, o.Devices, o.BatchSize, o.Epochs, o.Workers = plugin, 1, 32, 4, 0
			o.TrainFile, o.LabelColumnName, o.OutputDir = train, c.label, filepath.Join(dir, c.problem)
			var out bytes.Buffer
			res, _, err := run(o, &out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			m := evalOf(t, o.OutputDir)
			t.Logf("%s after %d steps: %v", c.problem, res.Steps, m)
			if err := c.check(m); err != nil {
				t.Error(err)
			}
			if !strings.Contains(out.String(), "best test "+c.best) {
				t.Errorf("the last line does not name the best metric %q:\n%s", c.best, out.String())
			}
			raw, err := os.ReadFile(filepath.Join(o.OutputDir, "best", "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			var cfg struct {
				ProblemType string            `json:"problem_type"`
				NumLabels   int               `json:"num_labels"`
				ID2Label    map[string]string `json:"id2label"`
			}
			if err := json.Unmarshal(raw, &cfg); err != nil {
				t.Fatal(err)
			}
			wantLabels := map[string]string{"0": "long", "1": "negative", "2": "positive"}
			if c.problem == "regression" {
				wantLabels = map[string]string{"0": "LABEL_0"}
			}
			if cfg.ProblemType != c.problem || cfg.NumLabels != len(wantLabels) || fmt.Sprint(cfg.ID2Label) != fmt.Sprint(wantLabels) {
				t.Errorf("best/config.json: problem_type %q, num_labels %d, id2label %v; want %s, %d, %v",
					cfg.ProblemType, cfg.NumLabels, cfg.ID2Label, c.problem, len(wantLabels), wantLabels)
			}
		})
	}
}

// TestValueTasksSameRunOnEveryTopology: regression and multi-label classification give the
// same step losses and the same gathered metrics on 1 XLA device, on 2, and as 2 processes
// of 1 device under the launcher (global batch 8): losses and metrics within 1e-5, the
// correlations within 1e-4. After 6 steps the model's predictions barely vary, and Pearson's
// and Spearman's division by their spread amplifies the float32 summation order of other
// device counts (the predictions agree to 1e-7; Pearson moved by 8e-6 and 1.1e-5).
func TestValueTasksSameRunOnEveryTopology(t *testing.T) {
	plugin := cpuPlugin(t)
	dir := t.TempDir()
	files := map[string]string{"score": filepath.Join(dir, "scores.csv"), "tags": filepath.Join(dir, "tags.jsonl")}
	writeRegression(t, files["score"])
	writeMultiLabel(t, files["tags"])
	for _, label := range []string{"score", "tags"} {
		t.Run(label, func(t *testing.T) {
			args := func(out string) []string {
				return []string{"--backend", plugin, "--train_file", files[label], "--label_column_name", label,
					"--global_batch_size", "8", "--max_steps", "6", "--eval_steps", "3", "--max_len", "24", "--dropout", "0",
					"--workers", "0", "--logging_steps", "1", "--output_dir", out}
			}
			root := t.TempDir()
			one := filepath.Join(root, "1")
			if out, err := exampletest.Child(t, append(args(one), "--devices", "1")...).CombinedOutput(); err != nil {
				t.Fatalf("1 device: %v\n%s", err, out)
			}
			ref, refEval := stepLosses(t, one), evalOf(t, one)
			compare := func(what, dir string) {
				t.Helper()
				checkSameLosses(t, what, stepLosses(t, dir), ref)
				got := evalOf(t, dir)
				for k, v := range refEval {
					tolerance := 1e-5
					if k == "pearson" || k == "spearman" {
						tolerance = 1e-4
					}
					if !(math.Abs(got[k]-v) <= tolerance) {
						t.Errorf("%s: %s %.9f, %.9f on 1 device", what, k, got[k], v)
					}
				}
			}
			two := filepath.Join(root, "2")
			if out, err := exampletest.Child(t, append(args(two), "--devices", "2")...).CombinedOutput(); err != nil {
				t.Fatalf("2 devices: %v\n%s", err, out)
			}
			compare("2 devices", two)
			compare("2 processes", exampletest.LaunchTwo(t, root, args)) // after the device counts: a missing MPI skips only this
			t.Logf("%s: step losses %v, last evaluation %v, the same on 2 devices and 2 processes", label, ref, refEval)
		})
	}
}

// TestValueTaskBadInput: the flags and the labels of the new task shapes are checked before
// training, naming the flag or the file, row and column.
func TestValueTaskBadInput(t *testing.T) {
	dir := t.TempDir()
	nan := filepath.Join(dir, "nan.csv")
	if err := os.WriteFile(nan, []byte("sentence,score\ngood,0.5\nbad,nan\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(empty, []byte(`{"sentence": "good", "tags": ["a"]}`+"\n"+`{"sentence": "bad", "tags": []}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		set  func(*options)
		want string
	}{
		{"NaN target", func(o *options) { o.TrainFile, o.LabelColumnName = nan, "score" },
			`--train_file: ` + nan + `:3: row 2, column "score": regression target nan is not a finite float32`},
		{"empty list", func(o *options) { o.TrainFile, o.LabelColumnName = empty, "tags" },
			empty + `:2: row 2, column "tags": an empty label list`},
		{"unknown problem", func(o *options) { o.TrainFile, o.LabelColumnName, o.ProblemType = nan, "score", "ranking" },
			`--problem_type "ranking": want`},
		{"delimiter without file", func(o *options) { o.LabelDelimiter = "|" }, `--label_delimiter "|" needs --train_file`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := defaultOptions()
			o.Backend, o.OutputDir = "go", filepath.Join(t.TempDir(), "run")
			c.set(&o)
			_, _, err := run(o, io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant one containing %q", err, c.want)
			}
			if _, err := os.Stat(o.OutputDir); err == nil {
				entries, _ := os.ReadDir(o.OutputDir)
				if len(entries) > 0 {
					t.Errorf("the run directory was written before the error: %d entries", len(entries))
				}
			}
		})
	}
}

// TestDoPredict: --do_predict classifies --test_file's texts (a file without a label column)
// with best/ and writes predict_results.jsonl and .csv with the label names and scores that
// sum to 1; --do_predict without a test file, and a test file without the text column, stop
// the program before training.
func TestDoPredict(t *testing.T) {
	plugin := cpuPlugin(t)
	dir := t.TempDir()
	train := filepath.Join(dir, "train.csv")
	writeCSV(t, train, shuffledSample(), [2]string{"negative", "positive"})
	test := filepath.Join(dir, "test.csv")
	if err := os.WriteFile(test, []byte("sentence\n\"a charming , often hilarious movie .\"\ndull and far too long\nthe film\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := defaultOptions()
	o.Backend, o.Devices, o.BatchSize, o.Epochs, o.MaxSteps, o.Workers = plugin, 1, 32, 1, 3, 0
	o.TrainFile, o.OutputDir, o.DoPredict, o.TestFile = train, filepath.Join(dir, "run"), true, test
	var out bytes.Buffer
	if _, _, err := run(o, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	raw, err := os.ReadFile(filepath.Join(o.OutputDir, "predict_results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d predictions for 3 texts:\n%s", len(lines), raw)
	}
	for i, line := range lines {
		var row struct {
			Index  int                `json:"index"`
			Text   string             `json:"text"`
			Label  string             `json:"label"`
			Score  float64            `json:"score"`
			Scores map[string]float64 `json:"scores"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatal(err)
		}
		sum := row.Scores["negative"] + row.Scores["positive"]
		if row.Index != i || (row.Label != "negative" && row.Label != "positive") || math.Abs(sum-1) > 1e-9 ||
			row.Score != row.Scores[row.Label] || len(row.Scores) != 2 {
			t.Errorf("prediction %d: %s", i, line)
		}
	}
	if csvRaw, err := os.ReadFile(filepath.Join(o.OutputDir, "predict_results.csv")); err != nil ||
		!strings.HasPrefix(string(csvRaw), "index,label,score,text\n0,") {
		t.Errorf("predict_results.csv: %v\n%s", err, csvRaw)
	}
	for _, c := range []struct {
		set  func(*options)
		want string
	}{
		{func(o *options) { o.TestFile = "" }, "--do_predict needs --test_file"},
		{func(o *options) { o.TestFile = train; o.TextColumnNames = "review" }, `no column "review"`},
	} {
		bad := o
		bad.OutputDir = filepath.Join(t.TempDir(), "run")
		c.set(&bad)
		if _, _, err := run(bad, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
		if _, err := os.Stat(bad.OutputDir); err == nil {
			if entries, _ := os.ReadDir(bad.OutputDir); len(entries) > 0 {
				t.Errorf("%q: the run directory was written before the error", c.want)
			}
		}
	}
}
