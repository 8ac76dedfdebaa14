package nn

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/accelerator/acceltest"
	"github.com/goaccel/goaccel/internal/launch"
	"github.com/goaccel/goaccel/internal/testutil"
)

// The test binary doubles as the ranks of a 2-process job (TestMain): bnWorkerEnv names the
// folder where each rank writes its losses and running statistics.
const (
	bnWorkerEnv = "GOACCEL_NN_WORKER"
	bnPluginEnv = "GOACCEL_NN_PLUGIN"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(bnWorkerEnv); dir != "" {
		code := 0
		if err := bnWorker(dir); err != nil {
			fmt.Println("worker error:", err)
			code = 3
		}
		accelerator.Exit(code)
	}
	os.Exit(m.Run())
}

type bnResult struct {
	Losses []float64
	Stats  [][]float64
}

// bnWorker is one rank: bnTrain, its result written to dir/rank-<rank>.json.
func bnWorker(dir string) error {
	acc, err := accelerator.New(accelerator.Config{Backend: os.Getenv(bnPluginEnv), Quiet: true, Seed: 5})
	if err != nil {
		return err
	}
	defer acc.Close()
	losses, stats, err := bnTrain(acc)
	if err != nil {
		return err
	}
	b, err := json.Marshal(bnResult{losses, stats})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, fmt.Sprintf("rank-%d.json", acc.ProcessIndex())), b, 0o644)
}

// TestBatchNormTwoProcesses: over 2 processes (1 device each) BatchNorm normalises with each
// process's own statistics, as DistributedDataParallel without SyncBatchNorm does, and the
// running statistics are rank 0's on both after every update (DDP's broadcast_buffers): the
// two ranks end with the same buffers, updated once per global batch. The losses differ from
// one process on 2 devices (the global batch's statistics) by what the test logs: the
// documented difference of per-process statistics.
func TestBatchNormTwoProcesses(t *testing.T) {
	testutil.NeedMPI(t)
	plugin := acceltest.CPUPlugin(t)
	dir := t.TempDir()
	out, err := testutil.LaunchSelf(t, launch.Config{NprocPerNode: 2,
		Env: append(os.Environ(), bnWorkerEnv+"="+dir, bnPluginEnv+"="+plugin, "GOACCEL_DEVICES=2", "GOACCEL_TIMEOUT=3m")})
	if err != nil {
		t.Fatalf("2 processes: %v\n%s", err, out)
	}
	var ranks [2]bnResult
	for r := range ranks {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank-%d.json", r)))
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if err := json.Unmarshal(b, &ranks[r]); err != nil {
			t.Fatal(err)
		}
	}
	for i, what := range []string{"running_mean", "running_var", "num_batches_tracked"} {
		if d := maxDiff(ranks[0].Stats[i], ranks[1].Stats[i]); d != 0 {
			t.Errorf("%s differs between the ranks by %.3g:\nrank 0: %v\nrank 1: %v", what, d, ranks[0].Stats[i], ranks[1].Stats[i])
		}
	}
	if n := ranks[0].Stats[2]; len(n) != 1 || n[0] != 8 {
		t.Errorf("num_batches_tracked %v after 8 global batches, want 8", n)
	}
	if d := maxDiff(ranks[0].Losses, ranks[1].Losses); d != 0 {
		t.Errorf("the ranks' losses (the global batch's, all-reduced) differ by %.3g", d)
	}
	acc, err := accelerator.New(accelerator.Config{Backend: plugin, Devices: 2, Quiet: true, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	one, stats, err := bnTrain(acc)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("per-process statistics against the global batch's: losses %.3g apart at most (2 processes %v, one process on 2 devices %v); "+
		"running_mean %.3g, running_var %.3g apart", maxDiff(ranks[0].Losses, one), ranks[0].Losses, one,
		maxDiff(ranks[0].Stats[0], stats[0]), maxDiff(ranks[0].Stats[1], stats[1]))
}
