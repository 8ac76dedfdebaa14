package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goaccel/goaccel/accelerator/acceltest"
	"github.com/goaccel/goaccel/checkpoint"
	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/examples/internal/exampletest"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/nn"
	"github.com/gomlx/gomlx/core/tensors"
)

// latestCheckpoint reads every tensor of a run's latest checkpoint (weights.safetensors and
// optimizer.safetensors: the BatchNorm statistics are not trained, so they sit in the second,
// beside SGD's momentum buffers), by name.
func latestCheckpoint(t *testing.T, dir string) map[string]*tensors.Tensor {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "checkpoints", checkpoint.LatestFile))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*tensors.Tensor{}
	for _, f := range []string{checkpoint.WeightsFile, checkpoint.OptimizerFile} {
		named, _, err := safetensors.ReadFile(filepath.Join(dir, "checkpoints", strings.TrimSpace(string(b)), f))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range named {
			out[n.Name] = n.Tensor
		}
	}
	return out
}

// tensorText is a tensor's dtype, shape and values, for comparing bit for bit.
func tensorText(t *tensors.Tensor) string {
	var s string
	if err := t.ConstFlatData(func(a any) { s = fmt.Sprintf("%s %v", t.Shape(), a) }); err != nil {
		return "error: " + err.Error()
	}
	return s
}

// TestKillAndResumeKeepsBatchNormStats: the program (built-in set, augmentation and shuffling
// on, 2 XLA CPU devices) is killed with SIGKILL right after the checkpoint of step 5
// (--save_steps 5) and started again on the same run directory; it ends as a run that was
// never interrupted: the same step losses and evaluations, and the same checkpoint bit for
// bit, every BatchNorm's running_mean, running_var and num_batches_tracked (20, one update a
// step, not counted again for the steps after the checkpoint that the killed session ran)
// included, and SGD's momentum buffers.
func TestKillAndResumeKeepsBatchNormStats(t *testing.T) {
	testutil.Long(t, "cifar10 killed and resumed, against an uninterrupted run (tier 1: models/nn's TestBatchNormSameRunOn1And2Devices, trainer's resume tests)")
	plugin := acceltest.CPUPlugin(t)
	root := t.TempDir()
	args := func(dir string) []string {
		return []string{"--backend", plugin, "--devices", "2", "--global_batch_size", "50", "--epochs", "1", "--width", "4",
			"--lr", "0.01", "--workers", "1", "--logging_steps", "1", "--save_steps", "5", "--output_dir", dir}
	}
	full := filepath.Join(root, "full")
	if out, err := exampletest.Child(t, args(full)...).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	resumed := filepath.Join(root, "resumed")
	first := exampletest.Child(t, args(resumed)...)
	var firstOut bytes.Buffer
	first.Stdout, first.Stderr = &firstOut, &firstOut
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	latest := filepath.Join(resumed, "checkpoints", checkpoint.LatestFile)
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(latest); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = first.Process.Kill()
			t.Fatalf("no checkpoint after 3 minutes:\n%s", firstOut.String())
		}
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	if strings.Contains(firstOut.String(), "best test accuracy") {
		t.Fatalf("the first session finished before it could be killed:\n%s", firstOut.String())
	}
	killedAt := latestCheckpoint(t, resumed)["/layer4/1/bn2/"+nn.BatchNormTracked]
	out, err := exampletest.Child(t, args(resumed)...).CombinedOutput()
	if err != nil {
		t.Fatalf("resumed run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "resuming") {
		t.Errorf("the second session did not resume:\n%s", out)
	}
	if a, b := exampletest.MetricsLines(t, full), exampletest.MetricsLines(t, resumed); !slices.Equal(a, b) {
		t.Errorf("metrics.jsonl differs:\nuninterrupted:\n%s\nresumed:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	want, got := latestCheckpoint(t, full), latestCheckpoint(t, resumed)
	stats := 0
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("the resumed run's checkpoint lacks %s", name)
		case tensorText(g) != tensorText(w):
			t.Errorf("%s: the resumed run's differs from the uninterrupted run's", name)
		}
		for _, s := range []string{nn.BatchNormRunningMean, nn.BatchNormRunningVar, nn.BatchNormTracked} {
			if strings.HasSuffix(name, "/"+s) {
				stats++
			}
		}
	}
	if len(got) != len(want) || stats != 3*20 { // 20 BatchNorms in a ResNet-18 (17 + 3 shortcuts)
		t.Errorf("checkpoints of %d and %d tensors with %d BatchNorm statistics, want the same count and 60", len(want), len(got), stats)
	}
	tracked := want["/layer4/1/bn2/"+nn.BatchNormTracked]
	if tracked == nil || tensors.ToScalar[int64](tracked) != 20 {
		t.Errorf("num_batches_tracked %v after 20 steps, want 20", tracked)
	}
	t.Logf("killed after the checkpoint with num_batches_tracked %v; resumed to %v, as the uninterrupted run", killedAt, tracked)
}
