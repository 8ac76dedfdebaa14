package checkpoint

import (
	"fmt"
	"testing"
	"time"

	"github.com/gomlx/gomlx/ml/model"
)

// asyncCrashDirEnv, when set, turns the test binary into the helper of
// TestAsyncSaveCrashSafety: a process that trains (overwrites its Store in place) while it
// saves asynchronously, in that directory, until it is killed.
const asyncCrashDirEnv = "GOACCEL_CHECKPOINT_ASYNC_CRASH_HELPER_DIR"

// asyncCrashHelper resumes from the latest checkpoint in dir, then for each next step sets
// the Store to the values of the step and starts its asynchronous save, printing "saving N":
// the next step's values are written into the Store while save N is still being written.
func asyncCrashHelper(dir string) error {
	var store *model.Store
	return helperLoop(dir, "saving", func(m *Manager, step int64) error {
		var err error
		if store == nil {
			store, err = bigStore(step)
		} else {
			err = setStep(store, step)
		}
		if err == nil {
			_, err = m.SaveAsync(&State{Store: store, Progress: Progress{Step: step}})
		}
		return err
	})
}

// TestAsyncSaveCrashSafety kills, with SIGKILL, a process that saves asynchronously while it
// goes on changing its Store: every other kill lands in the middle of a save, where the
// helper stops (killLoop), and most others while one is being written. After each kill
// LoadLatest must load a complete checkpoint without falling back, holding the values of its
// own step, and every checkpoint directory must verify.
func TestAsyncSaveCrashSafety(t *testing.T) {
	kills := 12
	if testing.Short() { // tier 1: fewer kills, the same checks; 12 in make test-all
		kills = 4
	}
	// Two lines: the second save of a run has started, so the first one is complete
	// (SaveAsync waits for the previous save), and the kill lands in the loop.
	midSave := killLoop(t, asyncCrashDirEnv, kills, 2, 150*time.Millisecond, func(kill int, st *State, path string) {
		checkBig(t, st.Store, st.Progress.Step, fmt.Sprintf("kill %d: %s", kill, path))
		st.Store.Finalize()
	})
	t.Logf("%d of %d kills landed while an asynchronous save was being written", midSave, kills)
	if midSave < kills/2 {
		t.Errorf("%d of %d kills landed during an asynchronous save, want at least the %d that stopped there", midSave,
			kills, kills/2)
	}
}
