package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goaccel/goaccel/checkpoint"
	"github.com/goaccel/goaccel/internal/ptytest"
	"github.com/goaccel/goaccel/models/bert"
	"github.com/goaccel/goaccel/trainer"
	"github.com/gomlx/gomlx/ml/model"
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

// signalRun is one session of the program in a child process whose output is read as it
// comes, to send it a signal once training has started.
type signalRun struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	out bytes.Buffer
}

func (s *signalRun) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.Write(p)
}

func (s *signalRun) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// interruptAfterFirstBatch starts the program, waits for the progress line of its first batch
// (the first step is done) and sends sig; it returns the output and exit code.
func interruptAfterFirstBatch(t *testing.T, cmd *exec.Cmd, sig syscall.Signal) (string, int) {
	t.Helper()
	s := &signalRun{cmd: cmd}
	cmd.Stdout, cmd.Stderr = s, s
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(s.String(), " batch 1/") {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no progress line after 3 minutes:\n%s", s.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return s.String(), code
}

// finalWeights reads the weights of a run's latest checkpoint.
func finalWeights(t *testing.T, dir string) string {
	t.Helper()
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

// checkModes asserts that every file of a run directory has mode 0644 and every folder
// 0755 (the test runs under umask 022), as a user expects to share them.
func checkModes(t *testing.T, when, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Errorf("%s: %v", when, err)
			return nil
		}
		info, _ := d.Info()
		want := fs.FileMode(0o644)
		if d.IsDir() {
			want = 0o755
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: %s has mode %v, want %v", when, path, info.Mode().Perm(), want)
		}
		return nil
	})
}

// metricsLines reads metrics.jsonl without its times and throughputs (which differ between
// runs).
func metricsLines(t *testing.T, dir string) []string {
	t.Helper()
	recs, err := trainer.ReadMetrics(filepath.Join(dir, trainer.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, fmt.Sprintf("%s step %d epoch %.4f loss %.6g lr %.6g eval %v", r.Kind, r.Step, r.Epoch,
			r.Loss, r.LR, r.Eval))
	}
	return out
}

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
			uninterrupted := child(t, append(args, "--output_dir", full)...)
			screen := runOnTerminal(t, uninterrupted)

			work := filepath.Join(root, "work")
			if err := os.Mkdir(work, 0o755); err != nil {
				t.Fatal(err)
			}
			sessionArgs := args
			first := child(t, sessionArgs...)
			first.Dir = work
			out, code := interruptAfterFirstBatch(t, first, c.sig)
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
			checkModes(t, "after the interrupt", runDir)
			if !strings.Contains(out, "--output_dir "+runDir[len(work)+1:]) && !strings.Contains(out, "--output_dir "+runDir) {
				t.Errorf("the resume command does not name the run directory %s:\n%s", runDir, out)
			}

			second := child(t, sessionArgs...)
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
			if finalWeights(t, full) != finalWeights(t, runDir) {
				t.Errorf("the final weights of the interrupted-and-resumed run differ from the uninterrupted run's")
			}
			if a, b := metricsLines(t, full), metricsLines(t, runDir); !slices.Equal(a, b) {
				t.Errorf("metrics.jsonl differs:\nuninterrupted:\n%s\nresumed:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
			}
			checkModes(t, "after the resume", runDir)
			if _, err := os.Stat(filepath.Join(runDir, "interrupted.json")); err == nil {
				t.Error("interrupted.json is still there after the run completed")
			}
			for _, f := range []string{"best/config.json", "best/vocab.txt", "best/model.safetensors", "curves.png"} {
				if _, err := os.Stat(filepath.Join(runDir, f)); err != nil {
					t.Errorf("run directory lacks %s: %v", f, err)
				}
			}
			// best/ is a Hugging Face folder.
			if _, _, err := bert.LoadPretrained(filepath.Join(runDir, "best"), model.NewStore(),
				bert.LoadOptions{MaxLen: 64, NumLabels: 2}); err != nil {
				t.Errorf("best/ does not load with bert.LoadPretrained: %v", err)
			}
			if ckpts, _ := filepath.Glob(filepath.Join(runDir, "checkpoints", checkpoint.DirPrefix+"*")); len(ckpts) != 1 {
				t.Errorf("checkpoints kept: %v, want 1 (the newest)", ckpts)
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

// runOnTerminal runs cmd with its output on a pseudo-terminal and returns what the screen got.
func runOnTerminal(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	master, slave, err := ptytest.Open()
	if err != nil {
		t.Skipf("SKIPPING: no pseudo-terminal on this machine: %v", err)
	}
	defer master.Close()
	screen := ptytest.Capture(master)
	cmd.Stdout, cmd.Stderr = slave, slave
	err = cmd.Run()
	slave.Close()
	if err != nil {
		t.Fatalf("run on a terminal: %v\n%s", err, screen.Text())
	}
	return screen.Text()
}
