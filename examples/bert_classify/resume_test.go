package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/goaccel/goaccel/examples/internal/exampletest"
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
// plain lines. (examples/fit has the same test for SIGTERM and SIGKILL through trainer.Fit.)
func TestSignalAndResumeEqualsUninterrupted(t *testing.T) {
	plugin := cpuPlugin(t)
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			root := t.TempDir()
			args := []string{"--backend", plugin, "--devices", "2", "--batch-size", "16", "--epochs", "2", "--workers", "1"}
			full := filepath.Join(root, "full")
			uninterrupted := exampletest.Child(t, append(args, "--output_dir", full)...)
			screen := exampletest.RunOnTerminal(t, uninterrupted)

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
			configs, _ := filepath.Glob(filepath.Join(work, "*", "config.json"))
			more, _ := filepath.Glob(filepath.Join(work, "*", "*", "config.json"))
			if configs = append(configs, more...); len(configs) != 1 {
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
		})
	}
}
