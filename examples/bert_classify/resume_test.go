package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goaccel/goaccel/checkpoint"
	"github.com/goaccel/goaccel/examples/internal/exampletest"
	"github.com/goaccel/goaccel/internal/testutil"
)

// TestMain: see exampletest.Main.
func TestMain(m *testing.M) { exampletest.Main(m, main) }

// TestSignalAndResumeEqualsUninterrupted: the program gets SIGINT (Ctrl-C) in the middle of
// its first epoch; it finishes the step, saves a checkpoint, prints the command that resumes
// and exits with status 130. Running the same command again (without --output_dir, from a
// working folder of its own: it finds the interrupted run by itself) ends with the same
// weights (bit for bit, XLA CPU) and the same metrics.jsonl as a run that was never
// interrupted. The files keep their modes before and after the resume. The uninterrupted run
// writes to a pseudo-terminal: its progress bar moves; the interrupted one writes to a pipe:
// plain lines. SIGTERM (a preempted job) does the same with exit status 143.
func TestSignalAndResumeEqualsUninterrupted(t *testing.T) {
	plugin := cpuPlugin(t)
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	args := []string{"--backend", plugin, "--devices", "2", "--batch-size", "16", "--epochs", "2", "--workers", "1"}
	full := filepath.Join(t.TempDir(), "full")
	uninterrupted := exampletest.Child(t, append(args, "--output_dir", full)...)
	screen := exampletest.RunOnTerminal(t, uninterrupted)
	// The bar moved: several counts of the first epoch were drawn, over carriage returns.
	counts := regexp.MustCompile(`\((\d+)/23`).FindAllStringSubmatch(screen, -1)
	seen := map[string]bool{}
	for _, m := range counts {
		seen[m[1]] = true
	}
	if !strings.Contains(screen, "\r") || len(seen) < 3 || !seen["23"] {
		t.Errorf("the terminal shows no moving bar (counts seen %v):\n%q", seen, screen)
	}
	if !strings.Contains(screen, "eval step 23, epoch 1: accuracy") {
		t.Errorf("the terminal output misses the evaluation line:\n%q", screen)
	}
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			if c.sig == syscall.SIGTERM {
				testutil.Long(t, "SIGTERM's resume (tier 1: SIGINT's, the same stop and resume; trainer's TestInterruptSIGTERM checks SIGTERM's stop and status 143)")
			}
			root := t.TempDir()
			work := filepath.Join(root, "work")
			if err := os.Mkdir(work, 0o755); err != nil {
				t.Fatal(err)
			}
			sessionArgs := args
			first := exampletest.Child(t, sessionArgs...)
			first.Dir = work
			out, code := exampletest.InterruptAfterFirstBatch(t, first, c.sig)
			if code != c.code {
				t.Errorf("exit status %d after %v, want %d", code, c.sig, c.code)
			}
			for _, want := range []string{"run directory: ", "epoch 1/2: training from step 0/46",
				"finishing the current step and saving a checkpoint",
				"stopped after step", "to resume: "} {
				if !strings.Contains(out, want) {
					t.Errorf("the interrupted session's output misses %q:\n%s", want, out)
				}
			}
			if strings.ContainsAny(out, "\r\x1b") {
				t.Errorf("output to a pipe has carriage returns or escape codes:\n%q", out)
			}
			if !regexp.MustCompile(`(?m)^epoch 1/2 batch 1/23, step 1/46: loss \d\.\d{4}$`).MatchString(out) {
				t.Errorf("no plain progress line for the first batch:\n%s", out)
			}
			configs, _ := filepath.Glob(filepath.Join(work, "runs", "bert_classify-*", "config.json"))
			if len(configs) != 1 {
				t.Fatalf("want one run directory under %s, found %v", work, configs)
			}
			runDir := filepath.Dir(configs[0])
			exampletest.CheckModes(t, "after the interrupt", runDir)
			if !strings.Contains(out, "--output_dir "+runDir[len(work)+1:]) && !strings.Contains(out, "--output_dir "+runDir) {
				t.Errorf("the resume command does not name the run directory %s:\n%s", runDir, out)
			}

			second := exampletest.Child(t, sessionArgs...)
			second.Dir = work
			out2, err := second.CombinedOutput()
			if err != nil {
				t.Fatalf("resumed session: %v\n%s", err, out2)
			}
			if !strings.Contains(string(out2), "resuming") {
				t.Errorf("the second session did not resume:\n%s", out2)
			}
			if !strings.Contains(string(out2), "the interrupted run of this command") {
				t.Errorf("the same command without --output_dir did not find the interrupted run:\n%s", out2)
			}
			exampletest.SameRun(t, full, runDir)
			for _, f := range []string{"best/config.json", "best/vocab.txt", "best/model.safetensors", "curves.png"} {
				if _, err := os.Stat(filepath.Join(runDir, f)); err != nil {
					t.Errorf("run directory lacks %s: %v", f, err)
				}
			}
		})
	}
}

// TestKillAndResumeEqualsUninterrupted: the program is killed with SIGKILL in the middle of
// its first epoch (right after the checkpoint of step 5, --save_steps 5), started again on
// the same run directory, and ends with the same weights (bit for bit, XLA CPU) and records
// as a run that was never interrupted: the resumed session continues the same epoch in the
// same order.
func TestKillAndResumeEqualsUninterrupted(t *testing.T) {
	testutil.Long(t, "the program killed and resumed, against an uninterrupted run (tier 1: TestSignalAndResumeEqualsUninterrupted resumes the program, trainer TestRestartAfterKillEqualsUninterrupted a killed Fit)")
	plugin := cpuPlugin(t)
	root := t.TempDir()
	args := func(dir string) []string {
		return []string{"--backend", plugin, "--devices", "2", "--batch_size", "16", "--epochs", "2", "--workers", "1",
			"--save_steps", "5", "--output_dir", dir}
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
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(latest); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = first.Process.Kill()
			t.Fatalf("no checkpoint after 2 minutes:\n%s", firstOut.String())
		}
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	if strings.Contains(firstOut.String(), "done after") {
		t.Fatalf("the first session finished before it could be killed:\n%s", firstOut.String())
	}
	out, err := exampletest.Child(t, args(resumed)...).CombinedOutput()
	if err != nil {
		t.Fatalf("resumed run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "resuming") {
		t.Errorf("the second session did not resume:\n%s", out)
	}
	if exampletest.FinalWeights(t, full) != exampletest.FinalWeights(t, resumed) {
		t.Errorf("the final weights of the killed-and-resumed run differ from the uninterrupted run's")
	}
	if a, b := exampletest.MetricsLines(t, full), exampletest.MetricsLines(t, resumed); !slices.Equal(a, b) {
		t.Errorf("metrics.jsonl differs:\nuninterrupted:\n%s\nresumed:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
}
