package trainer

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// brokenAt is a dataset whose examples at the given indices fail to read, as an image
// dataset with SkipBad reports a truncated file: data.Skip of an error naming the file.
type brokenAt struct {
	data.Slice[example]
	bad map[int]bool
}

func (d brokenAt) Get(i int) (example, error) {
	if d.bad[i] {
		return example{}, data.Skip(fmt.Errorf("photos/cat_%d.png: png: unexpected EOF", i))
	}
	return d.Slice.Get(i)
}

// TestFitCountsBadExamples: a training set of 24 whose examples 3, 10 and 17 are broken
// (data.Skip), batches of 4, 2 epochs, a record every 2 steps: the records' bad_examples add
// up to 6 (each broken example left out once an epoch; the first batch, which Fit reads
// before training to build the model, is not counted twice) and sit on the records of the
// steps whose batches held them; the log names the files as the loader reported them, at the
// step and in the run's last lines (each once, with its count).
func TestFitCountsBadExamples(t *testing.T) {
	acc, err := accelerator.New(accelerator.Config{Backend: cpuPlugin(t), Devices: 1, Quiet: true, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	train := brokenAt{toyExamples(24, 0), map[int]bool{3: true, 10: true, 17: true}}
	loader, err := data.NewLoader[example](train, data.LoaderConfig[example]{BatchSize: 4, Collate: collateToy})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(acc, model.NewStore(), optimizer.Adam().Done(), toyTask(8))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	dir := filepath.Join(t.TempDir(), "run")
	cfg := Config{OutputDir: dir, Epochs: 2, LearningRate: 0.01, LogEvery: 2, Output: &out, DisableCheckpoints: true}
	if _, err := tr.Fit(loader, nil, cfg); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	var total int64
	withBad := 0
	for _, r := range readRecords(t, dir) {
		if r.Kind == KindTrain && r.BadExamples > 0 {
			total += r.BadExamples
			withBad++
		}
	}
	if total != 6 || withBad < 2 {
		t.Errorf("the records' bad_examples add up to %d over %d records, want 6 over at least 2 (3 an epoch)", total, withBad)
	}
	log := out.String()
	for _, want := range []string{
		"the loader left out 3 broken example(s) of the training data 6 time(s) in this session",
		"photos/cat_3.png: png: unexpected EOF (2 times)", "photos/cat_10.png: png: unexpected EOF (2 times)", "photos/cat_17.png",
		"the loader left out 1 broken training example(s): replica 0: example 3: photos/cat_3.png",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the run's log lacks %q:\n%s", want, log)
		}
	}
	if loader.Skipped() != int64(len(loader.SkippedExamples())) || loader.SkippedExamples()[0].Index != 3 {
		t.Errorf("loader: Skipped %d, SkippedExamples %v; want as many, the first at index 3", loader.Skipped(), loader.SkippedExamples())
	}
}
