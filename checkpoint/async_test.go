package checkpoint

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// bigVars are large enough (64 MB) that an asynchronous save is still being written when the
// caller goes on.
var bigVars = []testVar{
	{"/layer/weights", shapes.Make(dtypes.Float32, 2048, 4096), true},
	{"/layer/biases", shapes.Make(dtypes.Float32, 4096), true},
	{"/adam/m1", shapes.Make(dtypes.Float32, 2048, 4096), false},
	{"/global_step", shapes.Make(dtypes.Int64), false},
}

// bigStore builds a Store of bigVars holding the values of step.
func bigStore(step int64) (*model.Store, error) {
	store := model.NewStore()
	for _, bv := range bigVars {
		v, err := store.CreateVariable(bv.path, tensors.FromShape(bv.shape))
		if err != nil {
			return nil, err
		}
		v.SetTrainable(bv.trainable)
	}
	return store, setStep(store, step)
}

// setStep overwrites, in place, every value of a bigStore with the values of step, as a
// training step that reuses its buffers would.
func setStep(store *model.Store, step int64) error {
	for v := range store.IterVariables() {
		t, err := v.Value()
		if err != nil {
			return err
		}
		if err := t.MutableFlatData(func(flat any) {
			switch s := flat.(type) {
			case []float32:
				for i := range s {
					s[i] = float32(step)*1000 + float32(i%100000) + 0.25
				}
			case []int64:
				for i := range s {
					s[i] = step
				}
			}
		}); err != nil {
			return err
		}
	}
	return nil
}

// checkBig reports the variables of got that do not hold the values of step.
func checkBig(t *testing.T, got *model.Store, step int64, where string) {
	t.Helper()
	want, err := bigStore(step)
	if err != nil {
		t.Fatal(err)
	}
	for _, bv := range bigVars {
		v := got.GetVariable(bv.path)
		if v == nil || !v.MustValue().Equal(want.GetVariable(bv.path).MustValue()) || v.Trainable != bv.trainable {
			t.Errorf("%s: variable %q does not hold the values of step %d", where, bv.path, step)
		}
	}
}

type asyncMetrics struct {
	Loss float64 `json:"loss"`
}

// TestSaveAsyncHoldsTheStepValues changes everything a State refers to as soon as SaveAsync
// returns (the tensors in place, the Metrics it points to, the Progress): the checkpoint must
// still hold what the State held at the call.
func TestSaveAsyncHoldsTheStepValues(t *testing.T) {
	m, rec := newTestManager(t, t.TempDir(), Options{})
	store, err := bigStore(1)
	if err != nil {
		t.Fatal(err)
	}
	metrics := &asyncMetrics{Loss: 1.5}
	st := &State{Store: store, Progress: Progress{Step: 1, Epoch: 1}, Metrics: metrics}
	path, err := m.SaveAsync(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := setStep(store, 2); err != nil {
		t.Fatal(err)
	}
	metrics.Loss, st.Progress.Step, st.Progress.Epoch = 2.5, 2, 2
	if _, err := os.Stat(path); err == nil {
		t.Logf("the save was already complete when the Store changed; the check below is weaker")
	}
	if err := m.Wait(); err != nil {
		t.Fatal(err)
	}
	loaded := &State{Store: model.NewStore(), Metrics: &asyncMetrics{}}
	got, err := m.LoadLatest(loaded)
	if err != nil {
		t.Fatal(err)
	}
	if got != path || loaded.Progress.Step != 1 || loaded.Progress.Epoch != 1 {
		t.Errorf("loaded %s at step %d epoch %d, want %s at step 1 epoch 1", got, loaded.Progress.Step, loaded.Progress.Epoch, path)
	}
	if l := loaded.Metrics.(*asyncMetrics).Loss; l != 1.5 {
		t.Errorf("metrics.json holds loss %v, want 1.5 (the value at the call)", l)
	}
	checkBig(t, loaded.Store, 1, path)
	if err := VerifyManifest(path); err != nil {
		t.Error(err)
	}
	if logs := rec.all(); len(logs) > 0 {
		t.Errorf("unexpected notices: %v", logs)
	}
}

// TestSaveAsyncErrors: the error of an asynchronous save is returned once, by the next
// SaveAsync (which then starts nothing) or by Wait; the Manager works again after it.
func TestSaveAsyncErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ckpts")
	m, _ := newTestManager(t, dir, Options{})
	store := newTestStore(t, 1)
	if err := os.RemoveAll(dir); err != nil { // The write will fail: the directory is gone.
		t.Fatal(err)
	}
	if _, err := m.SaveAsync(&State{Store: store, Progress: Progress{Step: 1}}); err != nil {
		t.Fatalf("SaveAsync: %v (the failure is the write's, in the background)", err)
	}
	_, err := m.SaveAsync(&State{Store: store, Progress: Progress{Step: 2}})
	if err == nil || !strings.Contains(err.Error(), "asynchronous save of step 1 failed") {
		t.Fatalf("the next SaveAsync returned %v, want the failure of step 1", err)
	}
	if err := m.Wait(); err != nil {
		t.Errorf("Wait after the error was reported: %v, want nil (step 2 was not started)", err)
	}
	if _, err := m.SaveAsync(&State{Store: store, Progress: Progress{Step: 3}}); err != nil {
		t.Fatal(err)
	}
	if err := m.Wait(); err == nil || !strings.Contains(err.Error(), "step 3") {
		t.Errorf("Wait returned %v, want the failure of step 3", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := m.SaveAsync(&State{Store: store, Progress: Progress{Step: 4}}); err != nil {
		t.Fatal(err)
	}
	// Load waits for the save in flight; a sync Save after it works too.
	loaded := &State{Store: model.NewStore()}
	if _, err := m.LoadLatest(loaded); err != nil || loaded.Progress.Step != 4 {
		t.Fatalf("LoadLatest after SaveAsync: step %d, %v", loaded.Progress.Step, err)
	}
	checkStore(t, loaded.Store, 1)
	if _, err := m.Save(&State{Store: store, Progress: Progress{Step: 5}}); err != nil {
		t.Fatal(err)
	}
	if err := m.Wait(); err != nil {
		t.Error(err)
	}
}

// TestSaveAsyncRanks saves asynchronously as two processes, twice: each rank's random state
// is its own, and when Wait returns on the rank that does not write, the last checkpoint is
// complete and named by "latest".
func TestSaveAsyncRanks(t *testing.T) {
	dir := t.TempDir()
	job := newFakeJob(2)
	errs := make([]error, 2)
	var latestSeen string
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			store := newTestStore(t, 10)
			m, err := NewManager(dir, Options{Processes: fakeRank{job, r}, Logf: func(string, ...any) {}})
			if err != nil {
				errs[r] = err
				return
			}
			for _, step := range []int64{5, 6} {
				if err := store.GetVariable(rngPath).SetValue(valueFor(rngShape, 10*step+int64(r))); err != nil {
					errs[r] = err
					return
				}
				if _, err := m.SaveAsync(&State{Store: store, Progress: Progress{Step: step}}); err != nil {
					errs[r] = err
					return
				}
			}
			if errs[r] = m.Wait(); errs[r] == nil && r == 1 {
				raw, _ := os.ReadFile(filepath.Join(dir, LatestFile))
				latestSeen = strings.TrimSpace(string(raw))
				errs[r] = VerifyManifest(filepath.Join(dir, latestSeen))
			}
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(2 * time.Minute):
		t.Fatal("the ranks did not finish: their barriers do not match")
	}
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	if latestSeen != "ckpt-000000006" {
		t.Errorf("after Wait, rank 1 sees latest = %q, want ckpt-000000006", latestSeen)
	}
	for r := range 2 {
		m, err := NewManager(dir, Options{Processes: fakeRank{newFakeJob(1), r}})
		if err != nil {
			t.Fatal(err)
		}
		st := &State{Store: model.NewStore()}
		if _, err := m.LoadLatest(st); err != nil {
			t.Fatal(err)
		}
		if got, want := rngOf(t, st.Store), rngFor(60+int64(r)); !equalU64(got, want) {
			t.Errorf("rank %d loaded random state %v, want its own of step 6 %v", r, got, want)
		}
	}
	var man manifest
	raw, _ := os.ReadFile(filepath.Join(dir, "ckpt-000000006", ManifestFile))
	if err := json.Unmarshal(raw, &man); err != nil || man.Files[RandomStateFile].Size == 0 {
		t.Errorf("the manifest of step 6 lists no %s: %v", RandomStateFile, err)
	}
}
