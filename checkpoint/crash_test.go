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
	out := bufio.NewWriter(os.Stdout)
	for {
		step++
		store, err := crashStore(step)
		if err != nil {
			return err
		}
		if _, err := m.Save(&State{Store: store, Progress: Progress{Step: step}}); err != nil {
			return err
		}
		fmt.Fprintf(out, "saved %d\n", step)
		out.Flush()
	}
}

// TestCrashSafety kills a saving process with SIGKILL at 20 random moments; after each kill,
// LoadLatest must load a complete checkpoint without falling back, and every checkpoint
// directory must verify.
func TestCrashSafety(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	const kills = 20
	lastStep := int64(0)
	midWrite := 0
	for kill := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stdout)
		if !lines.Scan() { // Wait for the first save of this run, so that the kill lands in the loop.
			_ = cmd.Wait()
			t.Fatalf("kill %d: helper stopped before saving: %s", kill, stderr.String())
		}
		go func() {
			for lines.Scan() {
			}
		}()
		time.Sleep(time.Duration(rng.Int64N(int64(60 * time.Millisecond))))
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
				midWrite++
				break
			}
		}

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
		step := st.Progress.Step
		if step < lastStep {
			t.Errorf("kill %d: loaded step %d after having loaded step %d", kill, step, lastStep)
		}
		lastStep = step
		want, _ := crashStore(step)
		for _, cv := range crashVars {
			got := st.Store.GetVariable(cv.path)
			if got == nil || !got.MustValue().Equal(want.GetVariable(cv.path).MustValue()) || got.Trainable != cv.trainable {
				t.Errorf("kill %d: %s: variable %q does not hold the values of step %d", kill, path, cv.path, step)
			}
		}
		paths, err := m.List()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			if err := Verify(p); err != nil {
				t.Errorf("kill %d: a checkpoint directory is not complete: %v", kill, err)
			}
		}
		t.Logf("kill %2d: loaded %s (step %d); %d checkpoint dirs", kill, filepath.Base(path), step, len(paths))
	}
	t.Logf("%d of %d kills left a temporary or half-deleted directory behind (killed mid-save)", midWrite, kills)
	if lastStep < kills {
		t.Errorf("only %d steps saved over %d runs", lastStep, kills)
	}
}
