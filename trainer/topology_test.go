package trainer

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/checkpoint"
	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// globalLoader is toyLoader with a fixed global batch instead of a per-device one.
func globalLoader(t testing.TB, n, offset, global int, shuffle bool) *data.Loader[example] {
	t.Helper()
	l, err := data.NewLoader(toyExamples(n, offset), data.LoaderConfig[example]{
		GlobalBatchSize: global, Shuffle: shuffle, Seed: 3, Collate: collateToy})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// readRunInfo reads the config.json of the run directory dir, and returns its text too.
func readRunInfo(t *testing.T, dir string) (runFile, []byte) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, configFile))
	if err != nil {
		t.Fatal(err)
	}
	var info runFile
	if err := json.Unmarshal(raw, &info); err != nil {
		t.Fatal(err)
	}
	return info, raw
}

// topoFit fits the toy MLP (no dropout) on devices with a global batch of global over 44
// examples (6 global batches per epoch, the last of 4), 2 epochs, a checkpoint every 4 updates;
// crashAt > 0 fails the run at that step, as a crash would.
func topoFit(t *testing.T, dir string, devices, global int, crashAt int64) (*Result, *model.Store, error) {
	t.Helper()
	return topoFitOn(t, dir, devices, globalLoader(t, 44, 0, global, true), globalLoader(t, 12, 500, global, false), crashAt)
}

// topoFitOn is topoFit on the given training and evaluation data.
func topoFitOn(t *testing.T, dir string, devices int, train, eval data.Source, crashAt int64) (*Result, *model.Store, error) {
	t.Helper()
	store := model.NewStore()
	tr, err := New(accOn(t, devices), store, optimizer.Adam().Done(), toyTask(8))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := tr.Fit(train, eval, Config{
		OutputDir: dir, Epochs: 2, LearningRate: 0.03, SaveEvery: 4, Output: &out,
		Callbacks: Callbacks{OnStep: func(e StepEvent) error {
			if e.Step == crashAt {
				return errCrash
			}
			return nil
		}},
	})
	if err != nil && !errors.Is(err, errCrash) {
		t.Logf("output:\n%s", out.String())
	}
	return res, store, err
}

// TestFitResumesOnAnotherTopology: a Fit on a fixed global batch of 8
// (data.LoaderConfig.GlobalBatchSize) checkpointed mid-epoch on 4 devices resumes on 1
// device, ends within 2e-5 of the uninterrupted 4-device run, and config.json records the
// global batch and the change of topology (topologies, and the resume's changes); resuming
// with another fixed global batch, or with per-device batches of the same global size, is
// refused naming both values.
func TestFitResumesOnAnotherTopology(t *testing.T) {
	root := t.TempDir()
	_, fullStore, err := topoFit(t, filepath.Join(root, "full"), 4, 8, 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "resumed")
	if _, _, err := topoFit(t, dir, 4, 8, 6); !errors.Is(err, errCrash) {
		t.Fatalf("first session: %v, want the simulated crash", err)
	}
	res, store, err := topoFit(t, dir, 1, 8, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(res.Resumed, "ckpt-000000004") || res.Steps != 12 {
		t.Errorf("resumed from %q to step %d, want ckpt-000000004 to step 12", res.Resumed, res.Steps)
	}
	if d, where := maxAbsDiff(weights(t, store), weights(t, fullStore)); d > 2e-5 {
		t.Errorf("resumed on 1 device: final weights differ from the uninterrupted 4-device run by %g at %s", d, where)
	}
	info, _ := readRunInfo(t, dir)
	if want := []checkpoint.Topology{{Step: 0, Devices: 4, Processes: 1}, {Step: 4, Devices: 1, Processes: 1}}; !reflect.DeepEqual(info.Topologies, want) {
		t.Errorf("config.json topologies %v, want %v", info.Topologies, want)
	}
	if len(info.Resumes) != 1 || !slices.Contains(info.Resumes[0].Changed, "devices: config.json has 4, this run 1") ||
		info.GlobalBatch != 8 || info.GlobalBatchSize != 8 || info.PerDeviceBatch != 8 {
		t.Errorf("config.json: resumes %+v, global batch %d (fixed %d), per-device batch %d", info.Resumes, info.GlobalBatch,
			info.GlobalBatchSize, info.PerDeviceBatch)
	}
	last, err := checkpoint.NewManager(filepath.Join(dir, checkpointsDir), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := &checkpoint.State{Store: model.NewStore()}
	if _, err := last.LoadLatest(st); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st.Progress.Topologies, info.Topologies) {
		t.Errorf("the last checkpoint's topologies %v, config.json's %v", st.Progress.Topologies, info.Topologies)
	}

	// Another global batch.
	if _, _, err := topoFit(t, dir, 1, 12, 0); err == nil ||
		!strings.Contains(err.Error(), "global_batch_size: config.json has 8, this run 12") {
		t.Errorf("resuming a global batch 8 run with 12: %v", err)
	}
	// Per-device batches of 8 on 1 device: a global batch of 8 too, but not a fixed one.
	if _, _, err := topoFitOn(t, dir, 1, toyLoader(t, 44, 0, 8, true), toyLoader(t, 12, 500, 8, false), 0); err == nil ||
		!strings.Contains(err.Error(), "global_batch_size: config.json has 8, this run 0") {
		t.Errorf("resuming a fixed global batch 8 run with per-device batches of 8: %v", err)
	}
}

// TestSavedGlobalBatchSize: the fixed global batch is read from config.json's
// global_batch_size, or from trainer.global_batch_size in a file written when Config had it;
// a file with neither records none (-1, not compared).
func TestSavedGlobalBatchSize(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want int
	}{
		{`{"global_batch_size": 8, "trainer": {}}`, 8},
		{`{"global_batch_size": 0, "trainer": {"global_batch_size": 8}}`, 0},
		{`{"trainer": {"global_batch_size": 16}}`, 16},
		{`{"trainer": {"epochs": 1}}`, -1},
	} {
		if got := savedGlobalBatchSize([]byte(c.raw)); got != c.want {
			t.Errorf("%s: %d, want %d", c.raw, got, c.want)
		}
	}
}
