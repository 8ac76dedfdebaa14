package main

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data/text"
)

// writeCSV writes examples as a CSV file with the columns sentence and label, the label
// named by names[example label].
func writeCSV(t *testing.T, path string, examples []text.Labeled, names [2]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"sentence", "label"})
	for _, ex := range examples {
		_ = w.Write([]string{ex.Text, names[ex.Label]})
	}
	if w.Flush(); w.Error() != nil {
		t.Fatal(w.Error())
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// headOf reads the head's keys of a Hugging Face config.json.
func headOf(t *testing.T, path string) (id2label map[string]string, label2id map[string]int, problem string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		ID2Label    map[string]string `json:"id2label"`
		Label2ID    map[string]int    `json:"label2id"`
		ProblemType string            `json:"problem_type"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c.ID2Label, c.Label2ID, c.ProblemType
}

// TestLabelNamesReachBest: a run on a file with string labels writes them into best/config.json
// as id2label and label2id (with problem_type), so that transformers' pipeline answers with
// them, and keeps them in the run's config.json. Fine-tuning again from that best/ on data
// without names (the built-in sentences) keeps the folder's names; on a file whose labels are
// other names, it is refused, naming both.
func TestLabelNamesReachBest(t *testing.T) {
	plugin := cpuPlugin(t)
	dir := t.TempDir()
	train := filepath.Join(dir, "train.csv")
	writeCSV(t, train, shuffledSample(), [2]string{"negative", "positive"})
	o := defaultOptions()
	o.Backend, o.Devices, o.BatchSize, o.Epochs, o.MaxSteps, o.Workers = plugin, 1, 32, 1, 2, 0
	o.TrainFile, o.OutputDir = train, filepath.Join(dir, "first")
	if _, _, err := run(o, io.Discard); err != nil {
		t.Fatal(err)
	}
	best := filepath.Join(o.OutputDir, "best")
	check := func(what, path string) {
		t.Helper()
		id2label, label2id, problem := headOf(t, path)
		if id2label["0"] != "negative" || id2label["1"] != "positive" || len(id2label) != 2 || label2id["negative"] != 0 ||
			label2id["positive"] != 1 || len(label2id) != 2 || problem != "single_label_classification" {
			t.Errorf("%s: id2label %v, label2id %v, problem_type %q; want the names negative and positive", what, id2label,
				label2id, problem)
		}
	}
	check("the first run's best/", filepath.Join(best, "config.json"))
	if raw, err := os.ReadFile(filepath.Join(o.OutputDir, "config.json")); err != nil ||
		!strings.Contains(string(raw), `"labels": [`) {
		t.Errorf("the run's config.json does not keep the label names (%v)", err)
	}

	again := defaultOptions()
	again.Backend, again.Devices, again.BatchSize, again.Epochs, again.MaxSteps, again.Workers = plugin, 1, 32, 1, 2, 0
	again.ModelDir, again.OutputDir = best, filepath.Join(dir, "again")
	if _, _, err := run(again, io.Discard); err != nil {
		t.Fatal(err)
	}
	check("best/ of a fine-tune of best/ on unnamed data", filepath.Join(again.OutputDir, "best", "config.json"))

	other := filepath.Join(dir, "other.csv")
	writeCSV(t, other, shuffledSample(), [2]string{"bad", "good"})
	again.TrainFile, again.OutputDir = other, filepath.Join(dir, "other")
	want := `names its 2 classes ["negative" "positive"] (id2label in its config.json), but --train_file's labels are ["bad" "good"]`
	if _, _, err := run(again, io.Discard); err == nil || !strings.Contains(err.Error(), want) ||
		!strings.Contains(err.Error(), "--model_dir "+best) {
		t.Errorf("other label names than --model_dir's: %v, want an error containing %q", err, want)
	}
}
