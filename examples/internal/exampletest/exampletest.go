// Package exampletest runs the examples' programs in child processes for their tests: start
// one, send it a signal once it trains, and compare the run directories it leaves.
package exampletest

import (
	"bytes"
	"context"
	"fmt"
	"github.com/goaccel/goaccel/internal/launch"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/trainer/args"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goaccel/goaccel/accelerator/acceltest"
	"github.com/goaccel/goaccel/checkpoint"
	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/ptytest"
	"github.com/goaccel/goaccel/models/bert"
	"github.com/goaccel/goaccel/trainer"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/spf13/pflag"
)

// Main is the TestMain of an example's tests: with $GOACCEL_EXAMPLE_CHILD=1, the test binary
// is the program (main) in a child process that a test started (Child), so that it can signal
// or kill it; else it runs the tests.
func Main(m *testing.M, main func()) {
	if envvar.ExampleChild.Value() == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Child runs the test binary with args in a new process, with $GOACCEL_EXAMPLE_CHILD=1: the
// test's TestMain then runs the program's main instead of the tests.
func Child(t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(envvar.Environ(), envvar.ExampleChild.KV("1"))
	return cmd
}

// Run runs the program (Child) on the XLA CPU plugin (acceltest.CPUPlugin, as
// $GOMLX_BACKEND) with the extra environment env ("NAME=value") and args, waits for it, fails
// the test with its output when it fails, and returns the output.
func Run(t testing.TB, env []string, args ...string) string {
	t.Helper()
	cmd := Child(t, args...)
	cmd.Env = append(append(cmd.Env, envvar.Backend.KV("xla:"+acceltest.CPUPlugin(t))), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", strings.Join(env, " "), strings.Join(args, " "), err, out)
	}
	return string(out)
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

// InterruptAfterFirstBatch starts the program, waits for the progress line of its first batch
// (the first step is done) and sends sig; it returns the output and exit code.
func InterruptAfterFirstBatch(t testing.TB, cmd *exec.Cmd, sig syscall.Signal) (string, int) {
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

// FinalWeights reads the weights of a run's latest checkpoint.
func FinalWeights(t testing.TB, dir string) string {
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

// CheckModes asserts that every file of a run directory has mode 0644 and every folder
// 0755 (the test runs under umask 022), as a user expects to share them.
func CheckModes(t testing.TB, when, dir string) {
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

// MetricsLines reads metrics.jsonl without its times and throughputs (which differ between
// runs).
func MetricsLines(t testing.TB, dir string) []string {
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

// RunOnTerminal runs cmd with its output on a pseudo-terminal and returns what the screen got.
func RunOnTerminal(t testing.TB, cmd *exec.Cmd) string {
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

// SameRun checks that the run directory resumed, which a signal interrupted and the same
// command resumed, ended as full, a run that was never interrupted: the same final weights
// (bit for bit), the same metrics.jsonl (times and throughputs aside), file modes as
// CheckModes, no interrupted.json left, one checkpoint kept, and best/ a Hugging Face folder.
func SameRun(t testing.TB, full, resumed string) {
	t.Helper()
	if FinalWeights(t, full) != FinalWeights(t, resumed) {
		t.Errorf("the final weights of the interrupted-and-resumed run differ from the uninterrupted run's")
	}
	if a, b := MetricsLines(t, full), MetricsLines(t, resumed); !slices.Equal(a, b) {
		t.Errorf("metrics.jsonl differs:\nuninterrupted:\n%s\nresumed:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	CheckModes(t, "after the resume", resumed)
	if _, err := os.Stat(filepath.Join(resumed, "interrupted.json")); err == nil {
		t.Error("interrupted.json is still there after the run completed")
	}
	if _, _, err := bert.LoadPretrained(filepath.Join(resumed, "best"), model.NewStore(),
		bert.LoadOptions{MaxLen: 64, NumLabels: 2}); err != nil {
		t.Errorf("best/ does not load with bert.LoadPretrained: %v", err)
	}
	if ckpts, _ := filepath.Glob(filepath.Join(resumed, "checkpoints", checkpoint.DirPrefix+"*")); len(ckpts) != 1 {
		t.Errorf("checkpoints kept: %v, want 1", ckpts)
	}
}

// FlagNames lists fs's flags and the aliases (the shared flags', args.Aliases, and the
// program's own), for testutil.BadFlags.
func FlagNames(fs *pflag.FlagSet, aliases map[string]string) []string {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	for alias := range aliases {
		names = append(names, alias)
	}
	for alias := range args.Aliases {
		names = append(names, alias)
	}
	return names
}

// SharedBadFlags are bad values of the shared training flags (trainer/args) and their
// aliases, for testutil.BadFlags, merged with the program's own (which win), and the reasons
// why the shared flags without a bad value have none.
func SharedBadFlags(t *testing.T, own map[string]string) (bad, none map[string]string) {
	bad = map[string]string{"model_dir": t.TempDir(), "output_dir": RegularFile(t), "epochs": "-1", "max_steps": "-1",
		"batch_size": "0", "global_batch_size": "0", "learning_rate": "-1", "weight_decay": "-1", "dropout": "1",
		"mixed_precision": "fp8", "sharding": "fsdp", "devices": "-1", "backend": "tpu", "workers": "-1", "report_to": "wandb",
		"logging_steps": "0", "gradient_accumulation_steps": "0", "lr_scheduler_type": "cosine_restarts", "warmup_ratio": "1.5",
		"warmup_steps": "-1", "max_grad_norm": "-1", "patience": "-1", "eval_steps": "-1", "save_steps": "-1",
		"save_total_limit": "-1", "lora_r": "0", "lora_alpha": "-1", "lora_dropout": "1", "lora_target_modules": "q_lin",
		// Hugging Face's names and the earlier --lr are aliases: the error names them as typed.
		"num_train_epochs": "-1", "lr": "-1", "per_device_train_batch_size": "0", "model_name_or_path": "/nonexistent/model",
		// Without a Hub id as --model_dir there is nothing to apply them to.
		"model_revision": "v2", "token": "hf_unused"}
	for k, v := range own {
		bad[k] = v
	}
	none = map[string]string{
		"async_save":             "a boolean: both values are valid",
		"cache_dir":              "any folder: created when a model is downloaded into it",
		"gradient_checkpointing": "a boolean: both values are valid",
		"do_predict":             "a boolean; without --test_file it is refused naming itself",
		"seed":                   "any integer is a seed",
		"use_peft":               "a boolean: both values are valid",
	}
	return bad, none
}

// RunChild is testutil.BadFlags's run for an example: the program (Child) with args, its output and
// exit error.
func RunChild(t *testing.T, args []string) (string, error) {
	out, err := Child(t, args...).CombinedOutput()
	return string(out), err
}

// ShortRunArgs are testutil.BadFlags's base arguments for an example: the pure-Go backend, a new run
// directory, 2 steps at most, one worker.
func ShortRunArgs(t *testing.T) []string {
	return []string{"--backend", "go", "--output_dir", t.TempDir(), "--max_steps", "2", "--workers", "1"}
}

// RegularFile is a new empty file: a bad --output_dir (no folder can be made below it).
func RegularFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// LaunchTwo runs the program with args(dir) as `goaccel launch --nproc_per_node 2` does (2
// ranks of 1 XLA CPU device, MPI between them), into dir = root/launch, and returns dir. A
// missing MPI skips the rest of the test, loudly (it fails under CI).
func LaunchTwo(t *testing.T, root string, args func(dir string) []string) string {
	t.Helper()
	testutil.NeedMPI(t)
	dir := filepath.Join(root, "launch")
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err := launch.Run(ctx, launch.Config{Program: os.Args[0], Args: args(dir), NprocPerNode: 2, LogDir: filepath.Join(root, "logs"),
		// 2 devices on the node: 1 a rank
		Env: append(envvar.Environ(), envvar.ExampleChild.KV("1"), envvar.Devices.KV("2"), envvar.Timeout.KV("3m")), Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("2 processes: %v\n%s", err, out.String())
	}
	return dir
}
