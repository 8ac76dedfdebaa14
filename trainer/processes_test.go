package trainer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/checkpoint"
	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/launch"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// The test binary doubles as the ranks of a real job (see TestMain): GOACCEL_TRAINER_WORKER
// sends a process to fitWorker.
const (
	fitWorkerEnv = "GOACCEL_TRAINER_WORKER" // the run directory of the worker's Fit
	fitKillEnv   = "GOACCEL_TRAINER_KILL"   // "rank:step": that rank SIGKILLs itself after that update, in attempt 0
	fitPlugin    = "GOACCEL_TRAINER_PLUGIN"
	fitDropout   = "GOACCEL_TRAINER_DROPOUT" // the dropout rate of the toy model's hidden layer (default none)
	fitReport    = "GOACCEL_TRAINER_REPORT"  // --report_to's names: those loggers, and a record every update
	fitAsync     = "GOACCEL_TRAINER_ASYNC"   // "1": Config.AsyncSave
)

// fitWorker is one rank of a 2-epoch Fit of the toy model that checkpoints every 3 updates.
// Rank 0 writes the final weights to RUN_DIR/final.json, and the checkpoint its last session
// resumed from ("" if none) to RUN_DIR/resumed.
func fitWorker(dir string) error {
	acc, err := accelerator.New(accelerator.Config{Backend: os.Getenv(fitPlugin), Quiet: true, Seed: 7})
	if err != nil {
		return err
	}
	defer acc.Close()
	killRank, killStep := -1, int64(-1)
	if v := os.Getenv(fitKillEnv); v != "" && os.Getenv("TORCHELASTIC_RESTART_COUNT") == "0" {
		if _, err := fmt.Sscanf(v, "%d:%d", &killRank, &killStep); err != nil {
			return fmt.Errorf("bad %s=%q", fitKillEnv, v)
		}
	}
	loader := func(n, offset int, shuffle bool) (*data.Loader[example], error) {
		return data.NewLoader(toyExamples(n, offset), data.LoaderConfig[example]{
			BatchSize: 4, Shuffle: shuffle, Seed: 3, Collate: collateToy})
	}
	train, err := loader(96, 0, true)
	if err != nil {
		return err
	}
	eval, err := loader(24, 1000, false)
	if err != nil {
		return err
	}
	var dropout float64
	if v := os.Getenv(fitDropout); v != "" {
		if _, err := fmt.Sscanf(v, "%g", &dropout); err != nil {
			return fmt.Errorf("bad %s=%q", fitDropout, v)
		}
	}
	store := model.NewStore()
	tr, err := New(acc, store, optimizer.Adam().LearningRate(0.01).Done(), toyDropoutTask(16, dropout))
	if err != nil {
		return err
	}
	cfg := Config{OutputDir: dir, Epochs: 2, SaveEvery: 3, LearningRate: 0.01, Quiet: true, AsyncSave: os.Getenv(fitAsync) == "1"}
	if v := os.Getenv(fitReport); v != "" {
		if cfg.Loggers, err = ReportTo(v); err != nil {
			return err
		}
		cfg.LogEvery = 1
	}
	cfg.Callbacks.OnStep = func(ev StepEvent) error {
		if acc.ProcessIndex() == killRank && ev.Step == killStep {
			return syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		return nil
	}
	res, err := tr.Fit(train, eval, cfg)
	if err != nil {
		return err
	}
	if !acc.IsMainProcess() {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "resumed"), []byte(res.Resumed), 0o644); err != nil {
		return err
	}
	w := map[string][]float32{}
	for v := range store.IterVariables() {
		if v.Trainable {
			t, err := v.Value()
			if err != nil {
				return err
			}
			if err := t.ConstFlatData(func(a any) { w[v.Path()] = append([]float32(nil), a.([]float32)...) }); err != nil {
				return err
			}
		}
	}
	b, err := json.Marshal(w)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "final.json"), b, 0o644)
}

// readFinal reads the final weights that fitWorker wrote in dir; out is the launcher's output,
// shown when there are none.
func readFinal(t *testing.T, dir, out string) map[string][]float32 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "final.json"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var w map[string][]float32
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	return w
}

// launchFit runs fitWorker as 2 ranks (1 XLA CPU device each, unless env sets
// GOACCEL_DEVICES to the total) on dir.
func launchFit(t *testing.T, dir string, restarts int, env ...string) (string, error) {
	t.Helper()
	return testutil.LaunchSelf(t, launch.Config{NprocPerNode: 2, MaxRestarts: restarts,
		Env: append(os.Environ(), append([]string{fitWorkerEnv + "=" + dir, fitPlugin + "=" + cpuPlugin(t), "GOACCEL_DEVICES=2",
			"GOACCEL_TIMEOUT=3m"}, env...)...)})
}

// TestRestartAfterKillEqualsUninterrupted: a 2-process Fit whose rank 1 is SIGKILLed after
// update 7 is restarted by the launcher (--max_restarts 1), resumes from the checkpoint of
// update 6 on both processes, completes, and ends with exactly the weights of an uninterrupted
// 2-process run. That run's checkpoint then continues in one process on 2 devices.
func TestRestartAfterKillEqualsUninterrupted(t *testing.T) {
	testutil.NeedMPI(t)
	clean, killed := t.TempDir(), t.TempDir()
	if out, err := launchFit(t, clean, 0); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	out, err := launchFit(t, killed, 1, fitKillEnv+"=1:7")
	if err != nil {
		t.Fatalf("killed and restarted run: %v\n%s", err, out)
	}
	if !bytes.Contains([]byte(out), []byte("rank 1")) || !bytes.Contains([]byte(out), []byte("signal: killed")) {
		t.Errorf("the launcher did not report rank 1's kill:\n%s", out)
	}
	read := func(dir string) map[string][]float32 { return readFinal(t, dir, out) }
	if d, where := maxAbsDiff(read(killed), read(clean)); d != 0 {
		t.Errorf("after the kill and restart, %s differs from the uninterrupted run by %g; want identical weights", where, d)
	}
	recs := readRecords(t, killed)
	steps := map[int64]int{}
	for _, r := range recs {
		if r.Kind == KindEval {
			steps[r.Step]++
		}
	}
	for s, n := range steps {
		if n != 1 {
			t.Errorf("metrics.jsonl has %d evaluation records at step %d, want 1", n, s)
		}
	}
	t.Logf("launcher output of the killed run:\n%s", out)

	// The 2-process run's checkpoint continues in one process on 2 devices (the same global
	// batch), at its epoch boundary: a third epoch.
	acc := accOn(t, 2)
	store := model.NewStore()
	tr, err := New(acc, store, optimizer.Adam().LearningRate(0.01).Done(), toyTask(16))
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Fit(toyLoader(t, 96, 0, 4, true), toyLoader(t, 24, 1000, 4, false),
		Config{OutputDir: clean, Epochs: 3, SaveEvery: 3, LearningRate: 0.01, Quiet: true})
	if err != nil {
		t.Fatalf("continuing the 2-process run in 1 process x 2 devices: %v", err)
	}
	if res.Resumed == "" || res.Steps != 36 {
		t.Errorf("1 process resumed from %q and ended at step %d; want the 2-process run's last checkpoint and step 36",
			res.Resumed, res.Steps)
	}
}

// TestRestartWithDropoutEqualsUninterrupted: the same kill and restart as
// TestRestartAfterKillEqualsUninterrupted, at 2 processes x 2 devices and with dropout, ends
// with exactly the weights of the uninterrupted run. Each rank draws its own dropout masks
// (seeded with Seed + rank), so this holds only if the checkpoint gives each rank its own
// random state back: rank 1 resuming with rank 0's draws rank 0's masks.
func TestRestartWithDropoutEqualsUninterrupted(t *testing.T) {
	testutil.Long(t, "two 2 x 2 runs with dropout, one killed (tier 1: TestRestartWithDropoutEqualsUninterruptedAsync restores each rank's random state the same way, with background saves; TestRestartAfterKillEqualsUninterrupted restarts from a synchronous save)")
	checkRestartWithDropout(t, false)
}

// TestRestartWithDropoutEqualsUninterruptedAsync is TestRestartWithDropoutEqualsUninterrupted
// with Config.AsyncSave in both runs: rank 0 writes each checkpoint in the background while
// both ranks train on, and every rank's random state is the one of the checkpoint's step. The
// restart resumes from the last complete checkpoint: update 9's, or update 6's if the kill
// cut the writing of update 9's short.
func TestRestartWithDropoutEqualsUninterruptedAsync(t *testing.T) { checkRestartWithDropout(t, true) }

func checkRestartWithDropout(t *testing.T, async bool) {
	testutil.NeedMPI(t)
	env := []string{fitDropout + "=0.3", "GOACCEL_DEVICES=4"}
	if async {
		env = append(env, fitAsync+"=1")
	}
	clean, killed := t.TempDir(), t.TempDir()
	if out, err := launchFit(t, clean, 0, env...); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	// Rank 1 dies after update 10, in epoch 2: the restart resumes mid-epoch from update 9.
	out, err := launchFit(t, killed, 1, append(env, fitKillEnv+"=1:10")...)
	if err != nil {
		t.Fatalf("killed and restarted run: %v\n%s", err, out)
	}
	if !strings.Contains(out, "signal: killed") {
		t.Errorf("the launcher did not report rank 1's kill:\n%s", out)
	}
	read := func(dir string) map[string][]float32 { return readFinal(t, dir, out) }
	if d, where := maxAbsDiff(read(killed), read(clean)); d != 0 {
		t.Errorf("with dropout at 2 processes x 2 devices, after the kill and restart %s differs from the "+
			"uninterrupted run by %g; want identical weights", where, d)
	}
	b, err := os.ReadFile(filepath.Join(killed, "resumed"))
	if resumed := filepath.Base(string(b)); err != nil || resumed != "ckpt-000000009" && !(async && resumed == "ckpt-000000006") {
		t.Errorf("the restarted run resumed from %q (%v), want its checkpoint of update 9", b, err)
	}
	t.Logf("resumed from %s", b)
	// 2 epochs of 96 examples in global batches of 4 x 2 devices x 2 processes: 12 updates.
	latest, err := os.ReadFile(filepath.Join(killed, checkpointsDir, checkpoint.LatestFile))
	if err != nil || strings.TrimSpace(string(latest)) != "ckpt-000000012" {
		t.Fatalf("the last checkpoint is %q (%v), want ckpt-000000012 (12 updates on 2 x 2 replicas)", latest, err)
	}
	// The checkpoint holds each rank's own random state.
	f, err := safetensors.Open(filepath.Join(killed, checkpointsDir, "ckpt-000000012", checkpoint.RandomStateFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var states []*tensors.Tensor
	for _, name := range []string{"rank0", "rank1"} {
		st, err := f.Read(name)
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, st)
	}
	if states[0].Equal(states[1]) {
		t.Errorf("ranks 0 and 1 saved the same random state %v: want each its own", states[0])
	}
}
