package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goaccel/goaccel/checkpoint"
)

// TestMain lets the test binary act as the bert_classify program in a child process, so
// that a test can kill it with SIGKILL.
func TestMain(m *testing.M) {
	if os.Getenv("BERT_CLASSIFY_CHILD") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child runs the program with args in a new process.
func child(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "BERT_CLASSIFY_CHILD=1")
	return cmd
}

// TestKillAndResumeEqualsUninterrupted: the --fit program is killed with SIGKILL in the middle
// of its first epoch (right after the checkpoint of update 5 of 12), started again on the same
// run directory, and ends with the same weights (bit for bit, XLA CPU) as a run that was never
// interrupted: the resumed session continues the same epoch with the same order.
func TestKillAndResumeEqualsUninterrupted(t *testing.T) {
	plugin := cpuPlugin(t)
	root := t.TempDir()
	args := func(dir string) []string {
		return []string{"--fit", "--backend", plugin, "--devices", "2", "--batch_size", "16", "--epochs", "4",
			"--workers", "1", "--save_every", "5", "--output_dir", dir}
	}
	full := filepath.Join(root, "full")
	if out, err := child(t, args(full)...).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}

	resumed := filepath.Join(root, "resumed")
	first := child(t, args(resumed)...)
	var firstOut bytes.Buffer
	first.Stdout, first.Stderr = &firstOut, &firstOut
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it as soon as the first checkpoint (update 5) is complete.
	latest := filepath.Join(resumed, "checkpoints", checkpoint.LatestFile)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(latest); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = first.Process.Kill()
			t.Fatalf("no checkpoint after 2 minutes:\n%s", firstOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	if strings.Contains(firstOut.String(), "trainer: done") {
		t.Fatalf("the first session finished before it could be killed:\n%s", firstOut.String())
	}

	out, err := child(t, args(resumed)...).CombinedOutput()
	if err != nil {
		t.Fatalf("resumed run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "resuming") {
		t.Errorf("the second session did not resume:\n%s", out)
	}
	weights := func(dir string) string {
		b, err := os.ReadFile(filepath.Join(dir, "checkpoints", checkpoint.LatestFile))
		if err != nil {
			t.Fatal(err)
		}
		m, err := os.ReadFile(filepath.Join(dir, "checkpoints", strings.TrimSpace(string(b)), checkpoint.WeightsFile))
		if err != nil {
			t.Fatal(err)
		}
		return string(m)
	}
	if weights(full) != weights(resumed) {
		t.Errorf("the final weights of the killed-and-resumed run differ from the uninterrupted run's")
	}
	full1, _ := os.ReadFile(filepath.Join(full, "metrics.jsonl"))
	res1, _ := os.ReadFile(filepath.Join(resumed, "metrics.jsonl"))
	if n1, n2 := strings.Count(string(full1), "\n"), strings.Count(string(res1), "\n"); n1 != n2 {
		t.Errorf("metrics.jsonl has %d records after the resume, %d without interruption", n2, n1)
	}
}
