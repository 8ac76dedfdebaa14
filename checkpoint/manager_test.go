package checkpoint

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/ml/model"
)

type testConfig struct {
	LR     float64 `json:"lr"`
	Layers int     `json:"layers"`
}

func newTestManager(t *testing.T, dir string, opts Options) (*Manager, *logRecorder) {
	t.Helper()
	rec := &logRecorder{}
	if opts.Logf == nil {
		opts.Logf = rec.logf
	}
	m, err := NewManager(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return m, rec
}

func saveAt(t *testing.T, m *Manager, step int64) string {
	t.Helper()
	st := &State{Store: newTestStore(t, step), Progress: Progress{Step: step, Epoch: int(step / 10)}}
	path, err := m.Save(st)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSaveLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	m, _ := newTestManager(t, dir, Options{})
	progress := Progress{Epoch: 2, Step: 1234, Seed: 42, Devices: 4, Processes: 1,
		Loader: data.LoaderState{Epoch: 2, BatchesConsumed: 17, Seed: 42, NumReplicas: 4}}
	metrics := []map[string]float64{{"step": 1000, "accuracy": 0.75}, {"step": 1234, "accuracy": 0.8}}
	st := &State{Store: newTestStore(t, 7), Progress: progress,
		Config: testConfig{LR: 2e-5, Layers: 12}, Metrics: metrics}
	path, err := m.Save(st)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "ckpt-000001234"); path != want {
		t.Errorf("Save returned %q, want %q", path, want)
	}
	for _, name := range []string{ManifestFile, WeightsFile, OptimizerFile, ProgressFile, ConfigFile, MetricsFile} {
		if _, err := os.Stat(filepath.Join(path, name)); err != nil {
			t.Errorf("missing %s: %v", name, err)
		}
	}
	if raw, _ := os.ReadFile(filepath.Join(dir, LatestFile)); strings.TrimSpace(string(raw)) != "ckpt-000001234" {
		t.Errorf("latest = %q", raw)
	}
	if err := VerifyManifest(path); err != nil {
		t.Errorf("VerifyManifest: %v", err)
	}
	// The weights file holds exactly the trainable variables, the optimizer file the others.
	for file, trainable := range map[string]bool{WeightsFile: true, OptimizerFile: false} {
		got, meta, err := safetensors.ReadFile(filepath.Join(path, file))
		if err != nil {
			t.Fatal(err)
		}
		if meta["format"] != "pt" {
			t.Errorf("%s: metadata %v lacks format=pt", file, meta)
		}
		var names, want []string
		for _, nt := range got {
			names = append(names, nt.Name)
		}
		for _, tv := range testVars {
			if tv.trainable == trainable {
				want = append(want, tv.path)
			}
		}
		slices.Sort(names)
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Errorf("%s holds %v, want %v", file, names, want)
		}
	}

	var cfg testConfig
	loaded := &State{Store: model.NewStore(), Config: &cfg}
	got, err := m.LoadLatest(loaded)
	if err != nil {
		t.Fatal(err)
	}
	if got != path {
		t.Errorf("LoadLatest loaded %q, want %q", got, path)
	}
	checkStore(t, loaded.Store, 7)
	if !reflect.DeepEqual(loaded.Progress, progress) {
		t.Errorf("Progress = %+v, want %+v", loaded.Progress, progress)
	}
	if cfg != (testConfig{LR: 2e-5, Layers: 12}) {
		t.Errorf("Config decoded to %+v", cfg)
	}
	raw, ok := loaded.Metrics.(json.RawMessage)
	if !ok {
		t.Fatalf("Metrics is %T, want json.RawMessage", loaded.Metrics)
	}
	var gotMetrics []map[string]float64
	if err := json.Unmarshal(raw, &gotMetrics); err != nil || len(gotMetrics) != 2 || gotMetrics[1]["accuracy"] != 0.8 {
		t.Errorf("Metrics = %s (%v)", raw, err)
	}

	// Loading into a Store that already has the variables (with other values) overwrites them
	// and keeps the Trainable flags.
	other := &State{Store: newTestStore(t, 99)}
	if err := m.Load(path, other); err != nil {
		t.Fatal(err)
	}
	checkStore(t, other.Store, 7)
	if raw, ok := other.Config.(json.RawMessage); !ok || !strings.Contains(string(raw), `"layers": 12`) {
		t.Errorf("Config = %#v, want the raw JSON", other.Config)
	}
	// A bare name is looked up in the Manager's directory.
	if err := m.Load("ckpt-000001234", &State{Store: model.NewStore()}); err != nil {
		t.Errorf("Load by name: %v", err)
	}
}

func TestLoadMismatch(t *testing.T) {
	dir := t.TempDir()
	m, _ := newTestManager(t, dir, Options{})
	path := saveAt(t, m, 5)

	tests := []struct {
		name         string
		edit         func(s *model.Store)
		allowMissing bool
		want         string // "" means success
	}{
		{"shape differs", func(s *model.Store) {
			_ = s.DeleteVariable("/dense/biases")
			_, _ = s.CreateVariable("/dense/biases", valueFor(shapes.Make(dtypes.Float32, 4), 1))
		}, false, `"/dense/biases": checkpoint has (Float32)[3], Store has (Float32)[4]`},
		{"dtype differs", func(s *model.Store) {
			_ = s.DeleteVariable("/counts")
			v, _ := s.CreateVariable("/counts", valueFor(shapes.Make(dtypes.Int64, 2, 2), 1))
			v.SetTrainable(false)
		}, false, `"/counts": checkpoint has (Int32)[2, 2], Store has (Int64)[2, 2]`},
		{"store has extra variable", func(s *model.Store) {
			_, _ = s.CreateVariable("/head/weights", valueFor(shapes.Make(dtypes.Float32, 3, 2), 1))
		}, false, `"/head/weights" ((Float32)[3, 2]) is in the Store but not in the checkpoint`},
		{"store has extra variable, allowed", func(s *model.Store) {
			_, _ = s.CreateVariable("/head/weights", valueFor(shapes.Make(dtypes.Float32, 3, 2), 1))
		}, true, ""},
		{"checkpoint has unknown weight", func(s *model.Store) {
			_ = s.DeleteVariable("/embed/table")
		}, false, `"/embed/table" ((BFloat16)[5, 2], from weights.safetensors) is not in the Store`},
		{"checkpoint has unknown optimizer state: created", func(s *model.Store) {
			_ = s.DeleteVariable("/optimizers/adam/dense/weights/m2")
		}, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := newTestStore(t, 1)
			tc.edit(store)
			before := map[string]string{}
			for v := range store.IterVariables() {
				before[v.Path()] = v.MustValue().String()
			}
			m.opts.AllowMissing = tc.allowMissing
			defer func() { m.opts.AllowMissing = false }()
			err := m.Load(path, &State{Store: store})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if v := store.GetVariable("/optimizers/adam/dense/weights/m2"); v == nil || v.Trainable {
					t.Errorf("m2 not restored as a non-trainable variable: %v", v)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v\nwant it to contain %s", err, tc.want)
			}
			if errors.Is(err, ErrCorrupt) {
				t.Errorf("a mismatch must not be reported as corruption: %v", err)
			}
			for v := range store.IterVariables() {
				if got := v.MustValue().String(); got != before[v.Path()] {
					t.Errorf("failed Load changed %q", v.Path())
				}
			}
		})
	}
}

func TestKeepLastAndReplace(t *testing.T) {
	dir := t.TempDir()
	m, _ := newTestManager(t, dir, Options{KeepLast: 2})
	for step := int64(1); step <= 5; step++ {
		saveAt(t, m, step*10)
	}
	names := func() []string {
		paths, err := m.List()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range paths {
			out = append(out, filepath.Base(p))
		}
		return out
	}
	if got, want := names(), []string{"ckpt-000000040", "ckpt-000000050"}; !slices.Equal(got, want) {
		t.Errorf("after 5 saves with KeepLast=2: %v, want %v", got, want)
	}
	// A save at a lower step (a run resumed from an earlier checkpoint) is kept, and is latest.
	saveAt(t, m, 30)
	if got, want := names(), []string{"ckpt-000000030", "ckpt-000000040", "ckpt-000000050"}; !slices.Equal(got, want) {
		t.Errorf("after saving step 30: %v, want %v", got, want)
	}
	st := &State{Store: model.NewStore()}
	if path, err := m.LoadLatest(st); err != nil || filepath.Base(path) != "ckpt-000000030" {
		t.Errorf("LoadLatest = %q, %v; want ckpt-000000030", path, err)
	}
	// Saving the same step again replaces it atomically.
	st = &State{Store: newTestStore(t, 77), Progress: Progress{Step: 50}}
	if _, err := m.Save(st); err != nil {
		t.Fatal(err)
	}
	loaded := &State{Store: model.NewStore()}
	if err := m.Load(m.PathFor(50), loaded); err != nil {
		t.Fatal(err)
	}
	checkStore(t, loaded.Store, 77)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("leftover entry %s", e.Name())
		}
	}
}

func TestLeftoversRemoved(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{".tmp-ckpt-000000001-123", ".trash-ckpt-000000002-456"} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, WeightsFile), []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, _ := newTestManager(t, dir, Options{})
	if _, err := m.LoadLatest(&State{Store: model.NewStore()}); !errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("LoadLatest with only leftovers: %v, want ErrNoCheckpoint", err)
	}
	saveAt(t, m, 3)
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"ckpt-000000003", "latest"}; !slices.Equal(names, want) {
		t.Errorf("directory holds %v, want %v", names, want)
	}
}

// fakeProcesses records barrier calls.
type fakeProcesses struct {
	main    bool
	waits   int
	waitErr error
}

func (f *fakeProcesses) IsMainProcess() bool { return f.main }
func (f *fakeProcesses) WaitForEveryone() error {
	f.waits++
	return f.waitErr
}

func TestProcesses(t *testing.T) {
	dir := t.TempDir()
	worker := &fakeProcesses{main: false}
	mw, _ := newTestManager(t, dir, Options{Processes: worker})
	path := saveAt(t, mw, 9)
	if worker.waits != 1 {
		t.Errorf("worker waited %d times, want 1", worker.waits)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a non-main process wrote %s", path)
	}
	main := &fakeProcesses{main: true}
	mm, _ := newTestManager(t, dir, Options{Processes: main})
	if got := saveAt(t, mm, 9); got != path {
		t.Errorf("main saved to %q, worker expected %q", got, path)
	}
	if main.waits != 1 {
		t.Errorf("main waited %d times, want 1", main.waits)
	}
	if err := VerifyManifest(path); err != nil {
		t.Error(err)
	}
	// The barrier is reached even when the write fails, and its error is reported.
	main.waitErr = errors.New("rank 1 is gone")
	_, err := mm.Save(&State{Store: newTestStore(t, 1), Progress: Progress{Step: 10}})
	if err == nil || !strings.Contains(err.Error(), "rank 1 is gone") {
		t.Errorf("barrier error not reported: %v", err)
	}
	main.waitErr = nil
	bad := model.NewStore()
	bad.VariableWithShape("/x", shapes.Make(dtypes.Float32, 2), nil)
	waits := main.waits
	_, err = mm.Save(&State{Store: bad, Progress: Progress{Step: 11}})
	if err == nil || !strings.Contains(err.Error(), `variable "/x" has no value`) {
		t.Errorf("Save of an uninitialized variable: %v", err)
	}
	if main.waits != waits+1 {
		t.Errorf("a failed save must still reach the barrier")
	}
}

func TestWeightName(t *testing.T) {
	dir := t.TempDir()
	hf := map[string]string{"/dense/weights": "classifier.weight", "/dense/biases": "classifier.bias"}
	m, _ := newTestManager(t, dir, Options{WeightName: func(p string) (string, bool) {
		n, ok := hf[p]
		return n, ok
	}})
	path := saveAt(t, m, 4)
	got, _, err := safetensors.ReadFile(filepath.Join(path, WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, nt := range got {
		names = append(names, nt.Name)
	}
	if want := []string{"classifier.weight", "classifier.bias", "/embed/table"}; !slices.Equal(names, want) {
		t.Errorf("weights file names %v, want %v", names, want)
	}
	st := &State{Store: model.NewStore()}
	if err := m.Load(path, st); err != nil {
		t.Fatal(err)
	}
	checkStore(t, st.Store, 4)
}

func TestBadArguments(t *testing.T) {
	if _, err := NewManager("", Options{}); err == nil {
		t.Error("NewManager with empty dir should fail")
	}
	if _, err := NewManager(t.TempDir(), Options{KeepLast: -1}); err == nil {
		t.Error("KeepLast=-1 should fail")
	}
	m, _ := newTestManager(t, t.TempDir(), Options{})
	if _, err := m.Save(&State{}); err == nil {
		t.Error("Save without a Store should fail")
	}
	if _, err := m.Save(&State{Store: model.NewStore(), Progress: Progress{Step: -1}}); err == nil {
		t.Error("Save at a negative step should fail")
	}
	if err := m.Load("nope", &State{Store: model.NewStore()}); err == nil {
		t.Error("Load of a missing directory should fail")
	}
}
