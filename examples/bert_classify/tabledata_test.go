package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data/text"
	"github.com/goaccel/goaccel/examples/internal/exampletest"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/bert/sample"
	"github.com/parquet-go/parquet-go"
)

// review is a row of the Parquet files written here: a text split over two columns and a
// string label.
type review struct {
	Title     string `parquet:"title"`
	Body      string `parquet:"body"`
	Sentiment string `parquet:"sentiment"`
}

// shuffledSample is the built-in sentences in a fixed random order, so that a head of them
// holds both classes.
func shuffledSample() []text.Labeled {
	all := sample.Polarity()
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return all
}

// writeReviews writes examples as Parquet rows (title: the first word, body: the rest; the
// label as "negative" or "positive"), 100 rows per row group.
func writeReviews(t *testing.T, path string, examples []text.Labeled, extraLabel string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[review](f, parquet.MaxRowsPerRowGroup(100))
	for i, ex := range examples {
		title, body, _ := strings.Cut(ex.Text, " ")
		if body == "" {
			body = title
		}
		r := review{Title: title, Body: body, Sentiment: []string{"negative", "positive"}[ex.Label]}
		if i == 0 && extraLabel != "" {
			r.Sentiment = extraLabel
		}
		if _, err := w.Write([]review{r}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestParquetTrainFile trains on a Parquet file written here (two text columns joined, string
// labels, row groups of 100) and evaluates on another: the run learns (labels scrambled
// between the files would keep it at chance), config.json records the label map, the same
// command on the finished run trains no more, training files whose label map differs are
// refused on that run directory, and a validation label not in the map is an error.
func TestParquetTrainFile(t *testing.T) {
	dir := t.TempDir()
	all := shuffledSample()
	train, valid := filepath.Join(dir, "train.parquet"), filepath.Join(dir, "validation.parquet")
	writeReviews(t, train, all[:700], "")
	writeReviews(t, valid, all[700:], "")
	o := defaultOptions()
	o.Backend, o.Devices, o.BatchSize, o.Epochs, o.Workers = cpuPlugin(t), 1, 32, 3, 1
	o.TrainFile, o.ValidationFile, o.TextColumnNames, o.LabelColumnName = train, valid, "title,body", "sentiment"
	o.OutputDir = t.TempDir()
	var out bytes.Buffer
	res, code, err := run(o, &out)
	if err != nil || code != 0 {
		t.Fatal(code, err)
	}
	for _, want := range []string{`2 labels, in sorted order: 0="negative" 1="positive"`,
		fmt.Sprintf("training on 700 sentences, testing on %d", len(all)-700)} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	t.Logf("best validation accuracy %.3f after %d epochs (%d steps)", res.Best, o.Epochs, res.Steps)
	if res.Best < 0.7 {
		t.Errorf("best validation accuracy %.3f after %d epochs, want >= 0.7", res.Best, o.Epochs)
	}
	cfg, err := os.ReadFile(filepath.Join(o.OutputDir, "config.json"))
	if err != nil || !strings.Contains(string(cfg), `"labels": [`) || !strings.Contains(string(cfg), `"negative",`) {
		t.Errorf("config.json does not record the label map (%v):\n%s", err, cfg)
	}
	again, _, err := run(o, io.Discard)
	if err != nil || again.Steps != res.Steps {
		t.Fatalf("the same flags on the finished run: %v; %d steps, want %d and no more training", err, again.Steps, res.Steps)
	}
	writeReviews(t, train, all[:700], "mixed")
	if _, _, err := run(o, io.Discard); err == nil || !strings.Contains(err.Error(), "another configuration") ||
		!strings.Contains(err.Error(), `"labels":["mixed","negative","positive"]`) {
		t.Errorf("training files with another label map on the same run directory: %v; want an error naming Labels", err)
	}
	// A validation label that the training files lack is an error naming file, row and column.
	writeReviews(t, train, all[:700], "")
	writeReviews(t, valid, all[700:], "neutral")
	o.OutputDir = t.TempDir()
	want := "--validation_file: " + valid + `: row group 0, row 1, column "sentiment": label "neutral" is not in the label map`
	if _, _, err := run(o, io.Discard); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a validation label not in the map: %v; want an error containing %q", err, want)
	}
}

// pyarrowScript writes the sentences given on stdin (label TAB text) as Parquet to argv[1], in
// row groups of 100, with an int64 label and a nullable string column the run does not read:
// with pyarrow's defaults (dictionary pages, Snappy, data pages v1), or, for a validation file,
// Zstandard and data pages v2.
const pyarrowScript = `
import sys
import pyarrow as pa, pyarrow.parquet as pq
rows = [l.rstrip("\n").split("\t", 1) for l in sys.stdin]
t = pa.table({"idx": pa.array(range(len(rows)), pa.int32()),
              "sentence": [r[1] for r in rows],
              "label": pa.array([int(r[0]) for r in rows], pa.int64()),
              "note": [None] * len(rows)})
extra = {"compression": "zstd", "data_page_version": "2.0"} if "validation" in sys.argv[1] else {}
pq.write_table(t, sys.argv[1], row_group_size=100, **extra)
print(pq.ParquetFile(sys.argv[1]).metadata.created_by)
`

// TestPyarrowParquet runs the program, flags and all, on training and validation files that
// pyarrow wrote (integer labels, the default column name "sentence"). Without pyarrow it is
// skipped with a line that starts with SKIPPING, except under CI, where it fails.
func TestPyarrowParquet(t *testing.T) {
	py := needPyarrow(t)
	plugin := cpuPlugin(t)
	dir := t.TempDir()
	all := shuffledSample()
	for _, f := range []struct {
		name     string
		from, to int
	}{{"train.parquet", 0, 600}, {"validation.parquet", 600, len(all)}} {
		var in strings.Builder
		for _, ex := range all[f.from:f.to] {
			fmt.Fprintf(&in, "%d\t%s\n", ex.Label, ex.Text)
		}
		cmd := exec.Command(py, "-c", pyarrowScript, filepath.Join(dir, f.name))
		cmd.Stdin = strings.NewReader(in.String())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("pyarrow: %v\n%s", err, out)
		}
		t.Logf("%s written by %s", f.name, strings.TrimSpace(string(out)))
	}
	cmd := exampletest.Child(t, "--train_file", filepath.Join(dir, "train.parquet"), "--validation_file",
		filepath.Join(dir, "validation.parquet"), "--backend", plugin, "--devices", "1", "--batch_size", "32",
		"--epochs", "1", "--max_steps", "6", "--output_dir", filepath.Join(dir, "run"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bert_classify: %v\n%s", err, out)
	}
	for _, want := range []string{`2 labels, in sorted order: 0="0" 1="1"`,
		fmt.Sprintf("training on 600 sentences, testing on %d", len(all)-600), "done after 6 steps"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// needPyarrow returns a python3 that imports pyarrow (`make deps` installs it into
// .deps/python, on the PYTHONPATH that the Makefile exports), or skips the test loudly; under
// CI it fails instead.
func needPyarrow(t *testing.T) string {
	t.Helper()
	return testutil.Python(t, "pyarrow.parquet", "pip's pyarrow (make deps)")
}
