package checkpoint

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/ml/model"
)

// stopMidSaveEnv, set in a crash-test helper, stops its second save of the run in the middle
// (Manager.beforeCommit: the files are in the temporary directory, not yet renamed into place) and
// prints "mid-save N", so that a kill lands there for certain.
const stopMidSaveEnv = "GOACCEL_CHECKPOINT_CRASH_STOP_MID_SAVE"

// crashDirEnv, when set, turns the test binary into the crash-test helper: a process that saves
// checkpoints in that directory in a loop until it is killed.
const crashDirEnv = "GOACCEL_CHECKPOINT_CRASH_HELPER_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(topoWorkerEnv); dir != "" { // a rank of TestResumeOnAnotherTopology
		code := 0
		if err := topoWorker(dir); err != nil {
			fmt.Println("worker error:", err)
			code = 3
		}
		accelerator.Exit(code)
	}
	if dir := os.Getenv(asyncCrashDirEnv); dir != "" {
		if err := asyncCrashHelper(dir); err != nil {
			fmt.Fprintln(os.Stderr, "async crash helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if dir := os.Getenv(crashDirEnv); dir != "" {
		if err := crashHelper(dir); err != nil {
			fmt.Fprintln(os.Stderr, "crash helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashVars are the helper's variables: about 4.5 MB, so that a save takes a while.
var crashVars = []testVar{
	{"/layer/weights", shapes.Make(dtypes.Float32, 512, 1024), true},
	{"/layer/biases", shapes.Make(dtypes.Float32, 1024), true},
	{"/adam/m1", shapes.Make(dtypes.Float32, 512, 1024), false},
	{"/global_step", shapes.Make(dtypes.Int64), false},
}

// crashStore builds a Store whose every value is derived from step.
func crashStore(step int64) (*model.Store, error) {
	store := model.NewStore()
	for _, cv := range crashVars {
		v, err := store.CreateVariable(cv.path, valueFor(cv.shape, step))
		if err != nil {
			return nil, err
		}
		v.SetTrainable(cv.trainable)
	}
	return store, nil
}

// crashHelper resumes from the latest checkpoint in dir and then saves step after step, printing
// "saved N" after each save, until killed.
func crashHelper(dir string) error {
	return helperLoop(dir, "saved", func(m *Manager, step int64) error {
		store, err := crashStore(step)
		if err != nil {
			return err
		}
		_, err = m.Save(&State{Store: store, Progress: Progress{Step: step}})
		return err
	})
}

// helperLoop is the loop of the crash-test helpers: it resumes from the latest checkpoint in
// dir, then calls save for each next step and prints "<word> N" after it, until killed.
func helperLoop(dir, word string, save func(m *Manager, step int64) error) error {
	m, err := NewManager(dir, Options{KeepLast: 2, Logf: func(string, ...any) {}})
	if err != nil {
		return err
	}
	st := &State{Store: model.NewStore()}
	step := int64(0)
	if _, err := m.LoadLatest(st); err == nil {
		step = st.Progress.Step
	} else if !errors.Is(err, ErrNoCheckpoint) {
		return err
	}
	st.Store.Finalize()
	if os.Getenv(stopMidSaveEnv) != "" {
		saves := 0
		m.beforeCommit = func(step int64) {
			if saves++; saves == 2 {
				fmt.Printf("mid-save %d\n", step)
				time.Sleep(time.Hour) // until killed
			}
		}
	}
	out := bufio.NewWriter(os.Stdout)
	for {
		step++
		if err := save(m, step); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s %d\n", word, step)
		out.Flush()
	}
}

// TestCrashSafety kills a saving process with SIGKILL 20 times, every other time in the
// middle of a save (stopped there by beforeCommit) and otherwise at a random moment; after
// each kill, LoadLatest must load a complete checkpoint without falling back (after a kill
// in the middle of a save, the one before it), and every checkpoint directory must verify.
func TestCrashSafety(t *testing.T) {
	kills := 20
	if testing.Short() { // tier 1: fewer kills, the same checks; 20 in make test-all
		kills = 8
	}
	midSave := killLoop(t, crashDirEnv, kills, 1, 60*time.Millisecond, func(kill int, st *State, path string) {
		want, _ := crashStore(st.Progress.Step)
		for _, cv := range crashVars {
			got := st.Store.GetVariable(cv.path)
			if got == nil || !got.MustValue().Equal(want.GetVariable(cv.path).MustValue()) || got.Trainable != cv.trainable {
				t.Errorf("kill %d: %s: variable %q does not hold the values of step %d", kill, path, cv.path, st.Progress.Step)
			}
		}
	})
	t.Logf("%d of %d kills left a temporary or half-deleted directory behind (killed mid-save)", midSave, kills)
	if midSave < kills/2 {
		t.Errorf("%d of %d kills landed mid-save, want at least the %d that stopped there", midSave, kills, kills/2)
	}
}

// killLoop starts the helper that env makes of the test binary, in a new directory, kills it
// kills times (see killHelper): every even kill in the middle of the run's second save,
// where the helper stops (stopMidSaveEnv), the others after lines lines and a random delay
// under maxDelay. After each kill it loads the latest checkpoint (loadAfterKill), checks that
// the steps never go back, that a kill mid-save left the checkpoint before that save, and
// that every run saved, and gives the State to check. It returns how many kills landed
// mid-save.
func killLoop(t *testing.T, env string, kills, lines int, maxDelay time.Duration, check func(kill int, st *State, path string)) (midSave int) {
	t.Helper()
	lastStep := int64(0)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for kill := range kills {
		stopped := kill%2 == 0
		if killHelper(t, env, dir, kill, lines, time.Duration(rng.Int64N(int64(maxDelay))), stopped) {
			midSave++
		} else if stopped {
			t.Errorf("kill %d: the helper stopped in the middle of a save, but no temporary directory is left", kill)
		}
		st, path := loadAfterKill(t, dir, kill)
		if stopped && st.Progress.Step != lastStep+1 {
			t.Errorf("kill %d in the middle of the run's second save: loaded step %d, want the first save's, %d", kill,
				st.Progress.Step, lastStep+1)
		}
		if st.Progress.Step < lastStep {
			t.Errorf("kill %d: loaded step %d after having loaded step %d", kill, st.Progress.Step, lastStep)
		}
		lastStep = st.Progress.Step
		check(kill, st, path)
	}
	if lastStep < int64(kills) {
		t.Errorf("only %d steps saved over %d runs", lastStep, kills)
	}
	return midSave
}

// killHelper runs the test binary as the helper that env turns it into, on dir; once the
// helper has printed lines lines, it sleeps for delay and kills it with SIGKILL. With
// stopMidSave, it kills it once it has stopped in the middle of its second save instead. It
// reports whether the kill left a temporary or half-deleted directory behind: it landed
// mid-save.
func killHelper(t *testing.T, env, dir string, kill, lines int, delay time.Duration, stopMidSave bool) (midSave bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+dir)
	if stopMidSave {
		cmd.Env = append(cmd.Env, stopMidSaveEnv+"=1")
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for seen := 0; ; {
		if !sc.Scan() {
			_ = cmd.Wait()
			t.Fatalf("kill %d: helper stopped before saving: %s", kill, stderr.String())
		}
		seen++
		if stopMidSave {
			if strings.HasPrefix(sc.Text(), "mid-save ") {
				delay = 0
				break
			}
			if seen > 4 { // it stops in its second save
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("kill %d: the helper saved %d times without stopping in the middle of a save", kill, seen)
			}
		} else if seen == lines {
			break
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	time.Sleep(delay)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("kill %d: helper was not killed (%v): %s", kill, err, stderr.String())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) || strings.HasPrefix(e.Name(), trashPrefix) {
			return true
		}
	}
	return false
}

// loadAfterKill loads the latest checkpoint in dir, which must not need a fallback, and
// checks that every checkpoint directory verifies.
func loadAfterKill(t *testing.T, dir string, kill int) (*State, string) {
	t.Helper()
	rec := &logRecorder{}
	m, err := NewManager(dir, Options{Logf: rec.logf})
	if err != nil {
		t.Fatal(err)
	}
	st := &State{Store: model.NewStore()}
	path, err := m.LoadLatest(st)
	if err != nil {
		t.Fatalf("kill %d: LoadLatest: %v", kill, err)
	}
	if logs := rec.all(); len(logs) > 0 {
		t.Errorf("kill %d: LoadLatest had to fall back, so something partial was visible:\n%s", kill, strings.Join(logs, "\n"))
	}
	paths, err := m.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if err := VerifyManifest(p); err != nil {
			t.Errorf("kill %d: a checkpoint directory is not complete: %v", kill, err)
		}
	}
	t.Logf("kill %2d: loaded %s (step %d); %d checkpoint dirs", kill, filepath.Base(path), st.Progress.Step, len(paths))
	return st, path
}
