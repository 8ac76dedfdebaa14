package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/accelerator/acceltest"
	"github.com/goaccel/goaccel/examples/internal/exampletest"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/auto"
	"github.com/goaccel/goaccel/models/bert/sample"
	"github.com/goaccel/goaccel/trainer"
)

func TestMain(m *testing.M) { exampletest.Main(m, main) }

// records returns the training losses (one per step) and the last evaluation of a run.
func records(t *testing.T, dir string) ([]float64, map[string]float64) {
	t.Helper()
	recs, err := trainer.ReadMetrics(filepath.Join(dir, trainer.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	var losses []float64
	var eval map[string]float64
	for _, r := range recs {
		switch r.Kind {
		case trainer.KindTrain:
			losses = append(losses, r.Loss)
		case trainer.KindEval:
			eval = r.Eval
		}
	}
	return losses, eval
}

// TestDefaultRunLearns: the built-in sentences on the tiny BERT learn the entities (F1
// well above what tagging everything O gives, 0), best/ is a token-classification folder
// with the tag names that the registry loads back, and --do_predict writes the entities of
// --test_file's sentences, most of the gold ones among them (type and text).
func TestDefaultRunLearns(t *testing.T) {
	o := defaultOptions()
	o.Backend, o.Devices, o.Epochs, o.Workers, o.OutputDir = acceltest.CPUPlugin(t), 1, 4, 0, t.TempDir()
	o.DoPredict, o.TestFile = true, filepath.Join(t.TempDir(), "test.conll")
	writeCoNLL(t, o.TestFile, 20, 3)
	var out bytes.Buffer
	res, _, err := run(o, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	_, eval := records(t, o.OutputDir)
	t.Logf("after %d steps: %v", res.Steps, eval)
	if !(eval["f1"] > 0.8 && eval["accuracy"] > 0.9) {
		t.Errorf("entity F1 %.3f, token accuracy %.3f after %d epochs: want > 0.8 and > 0.9", eval["f1"], eval["accuracy"], o.Epochs)
	}
	raw, err := os.ReadFile(filepath.Join(o.OutputDir, "best", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Architectures []string          `json:"architectures"`
		ID2Label      map[string]string `json:"id2label"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Architectures) != 1 || cfg.Architectures[0] != "BertForTokenClassification" || cfg.ID2Label["1"] != "B-PER" {
		t.Errorf("best/config.json: architectures %v, id2label %v; want BertForTokenClassification with the tags", cfg.Architectures, cfg.ID2Label)
	}
	m, err := auto.Load(filepath.Join(o.OutputDir, "best"), nil, auto.Options{MaxLen: o.MaxLen, Head: auto.TokenClassification, LoadHead: true})
	if err != nil || m.NumLabels() != len(sample.EntityTags()) {
		t.Errorf("loading best/ back: %v", err)
	}
	checkPredictions(t, filepath.Join(o.OutputDir, "predict_results.jsonl"), 20, 3)
}

// checkPredictions reads predict_results.jsonl and counts the gold entities of
// sample.Entities(n, seed) (a type and its words) that it has; it wants most of them.
func checkPredictions(t *testing.T, path string, n int, seed uint64) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != n {
		t.Fatalf("%s: %d lines for %d sentences", path, len(lines), n)
	}
	tags := sample.EntityTags()
	gold, found := 0, 0
	for i, s := range sample.Entities(n, seed) {
		var row struct {
			Text     string `json:"text"`
			Entities []struct {
				Group      string `json:"entity_group"`
				Start, End int
			} `json:"entities"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &row); err != nil {
			t.Fatal(err)
		}
		if row.Text != strings.Join(s.Words, " ") {
			t.Fatalf("line %d: text %q, want the sentence's words %q", i+1, row.Text, s.Words)
		}
		have := map[string]bool{}
		for _, e := range row.Entities {
			have[e.Group+" "+string([]rune(row.Text)[e.Start:e.End])] = true
		}
		for j := 0; j < len(s.Words); j++ {
			name := tags[s.Tags[j]]
			if !strings.HasPrefix(name, "B-") {
				continue
			}
			k := j + 1
			for k < len(s.Words) && tags[s.Tags[k]] == "I-"+name[2:] {
				k++
			}
			gold++
			if have[name[2:]+" "+strings.Join(s.Words[j:k], " ")] {
				found++
			}
		}
	}
	t.Logf("--do_predict: %d of the %d gold entities found", found, gold)
	if gold == 0 || found*2 < gold {
		t.Errorf("--do_predict found %d of %d gold entities: want most", found, gold)
	}
}

// writeCoNLL writes sentences as a CoNLL file ("word tag" lines, blank lines between
// sentences, a -DOCSTART- line first).
func writeCoNLL(t *testing.T, path string, n int, seed uint64) {
	t.Helper()
	var b strings.Builder
	b.WriteString("-DOCSTART- O\n\n")
	tags := sample.EntityTags()
	for _, s := range sample.Entities(n, seed) {
		for i, w := range s.Words {
			b.WriteString(w + " " + tags[s.Tags[i]] + "\n")
		}
		b.WriteString("\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeJSONLines writes sentences as JSON Lines with tokens and ner_tags lists.
func writeJSONLines(t *testing.T, path string, n int, seed uint64) {
	t.Helper()
	var b bytes.Buffer
	tags := sample.EntityTags()
	for _, s := range sample.Entities(n, seed) {
		names := make([]string, len(s.Tags))
		for i, id := range s.Tags {
			names[i] = tags[id]
		}
		line, err := json.Marshal(map[string]any{"tokens": s.Words, "ner_tags": names})
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSameRunOnEveryTopology: a CoNLL training file and a JSON Lines validation file, at a
// global batch of 8 sentences, give the same step losses and the same gathered entity
// metrics on 1 XLA device, on 2, and as 2 processes under the launcher (within 1e-5): the
// loss is the mean over the global batch's tokens whatever the number of replicas.
func TestSameRunOnEveryTopology(t *testing.T) {
	plugin := acceltest.CPUPlugin(t)
	root := t.TempDir()
	train, valid := filepath.Join(root, "train.conll"), filepath.Join(root, "dev.jsonl")
	writeCoNLL(t, train, 120, 1)
	writeJSONLines(t, valid, 30, 2)
	args := func(dir string) []string {
		return []string{"--backend", plugin, "--train_file", train, "--validation_file", valid, "--global_batch_size", "8",
			"--max_steps", "6", "--eval_steps", "3", "--max_len", "32", "--dropout", "0", "--workers", "0", "--logging_steps", "1",
			"--label_all_tokens", "--output_dir", dir}
	}
	one := filepath.Join(root, "1")
	if out, err := exampletest.Child(t, append(args(one), "--devices", "1")...).CombinedOutput(); err != nil {
		t.Fatalf("1 device: %v\n%s", err, out)
	}
	ref, refEval := records(t, one)
	if len(ref) != 6 || refEval == nil {
		t.Fatalf("1 device: %d losses, evaluation %v", len(ref), refEval)
	}
	compare := func(what, dir string) {
		t.Helper()
		losses, eval := records(t, dir)
		if len(losses) != len(ref) {
			t.Fatalf("%s: %d losses, want %d", what, len(losses), len(ref))
		}
		for i := range ref {
			if !(math.Abs(losses[i]-ref[i]) <= 1e-5) {
				t.Errorf("%s: step %d loss %.9f, %.9f on 1 device", what, i+1, losses[i], ref[i])
			}
		}
		for k, v := range refEval {
			if !(math.Abs(eval[k]-v) <= 1e-5) {
				t.Errorf("%s: %s %.9f, %.9f on 1 device", what, k, eval[k], v)
			}
		}
	}
	two := filepath.Join(root, "2")
	if out, err := exampletest.Child(t, append(args(two), "--devices", "2")...).CombinedOutput(); err != nil {
		t.Fatalf("2 devices: %v\n%s", err, out)
	}
	compare("2 devices", two)
	multi := exampletest.LaunchTwo(t, root, args) // after the device counts: a missing MPI skips only this
	compare("2 processes", multi)
	t.Logf("step losses %v, last evaluation %v; the same on 2 devices and 2 processes", ref, refEval)
}

// TestBadInput: bad files and flags stop the program before training, naming the file and
// line or the flag.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	three := filepath.Join(dir, "three.conll")
	if err := os.WriteFile(three, []byte("alice B-PER\nwatched VBD O\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mismatch := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(mismatch, []byte(`{"tokens": ["a", "b"], "ner_tags": ["O"]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		set  func(*options)
		want string
	}{
		{"three fields", func(o *options) { o.TrainFile = three }, "--train_file: " + three + ":2: 3 fields"},
		{"length mismatch", func(o *options) { o.TrainFile = mismatch }, mismatch + `:1: row 1, column "ner_tags": 1 tags for 2 words`},
		{"validation alone", func(o *options) { o.ValidationFile = three }, "--validation_file " + three + " needs --train_file"},
		{"missing file", func(o *options) { o.TrainFile = filepath.Join(dir, "none.conll") }, "none.conll"},
		{"dropout", func(o *options) { o.Dropout = 1 }, "--dropout 1"},
		{"predict without a file", func(o *options) { o.DoPredict = true }, "--do_predict needs --test_file"},
		{"a test file without predict", func(o *options) { o.TestFile = three }, "--test_file " + three + " is read by --do_predict only"},
		{"bad test file", func(o *options) { o.DoPredict, o.TestFile = true, mismatch }, "--test_file: " + mismatch},
		{"aggregation", func(o *options) { o.DoPredict, o.TestFile, o.Aggregation = true, three, "mean" }, `--aggregation_strategy "mean"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := defaultOptions()
			o.Backend, o.OutputDir = "go", filepath.Join(t.TempDir(), "run")
			c.set(&o)
			if _, _, err := run(o, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant one containing %q", err, c.want)
			}
		})
	}
	if out, err := exampletest.Child(t, "--num_train_epochs", "x").CombinedOutput(); err == nil || !strings.Contains(string(out), "num_train_epochs") {
		t.Errorf("a bad --num_train_epochs: %v\n%s", err, out)
	}
}

// TestBadFlagsNameTheFlag: a bad value of any flag, the shared training flags (trainer/args)
// and run_ner.py's own, stops the program with an error that names the flag as typed.
func TestBadFlagsNameTheFlag(t *testing.T) {
	o := defaultOptions()
	names := exampletest.FlagNames(newFlagSet(&o), aliases)
	bad, none := exampletest.SharedBadFlags(t, map[string]string{
		"train_file": "/nonexistent/train.conll", "validation_file": "/nonexistent/dev.conll", "max_len": "4096",
		"test_size": "1.5", "test_file": "/nonexistent/test.conll", "aggregation_strategy": "mean",
		"text_column_name": "", "label_column_name": "",
		"max_seq_length": "4096", // run_ner.py's alias of --max_len
	})
	none["label_all_tokens"] = "a boolean: both values are valid"
	testutil.BadFlags(t, names, exampletest.ShortRunArgs, bad, none, exampletest.RunChild)
}
