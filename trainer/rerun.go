package trainer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/internal/fsutil"
	"github.com/goaccel/goaccel/internal/shell"
)

// Helpers that let a program — Fit's or a hand-written loop — be stopped and started again
// by its user: the run directory is chosen so that the same command continues an interrupted
// run, the interruption is marked with the command that resumes it, and folders such as
// best/ are replaced whole.

const (
	// interruptedFile marks a run directory whose run a signal stopped.
	interruptedFile = "interrupted.json"
	// runsDir holds the run directories that ChooseRunDir makes.
	runsDir = "runs"
)

// interruptMark is interrupted.json: the signal, the step and the command line that resumes.
type interruptMark struct {
	Signal  string   `json:"signal"`
	Step    int64    `json:"step"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// ChooseRunDir returns the run directory of this program (os.Args): dir when it is not
// empty; else the newest runs/<name>-<time> that an interrupted session left for the same arguments
// (--output_dir aside), so that running the same command again resumes it; else a new
// runs/<name>-<time> (-2, -3... appended when taken). The main process chooses and prints its
// choice; the other processes receive it, so that all use the same directory.
func ChooseRunDir(acc *accelerator.Accelerator, dir, name string) (string, error) {
	if acc == nil {
		return "", errors.New("trainer: ChooseRunDir: the Accelerator is nil")
	}
	if dir == "" && acc.IsMainProcess() {
		dir = filepath.Join(runsDir, name+"-"+time.Now().Format("20060102-150405"))
		for n, base := 2, dir; exists(dir); n++ {
			dir = fmt.Sprintf("%s-%d", base, n) // another run started within the same second
		}
		note := fmt.Sprintf("after a crash, resume with --output_dir %s", dir)
		marks, _ := filepath.Glob(filepath.Join(runsDir, name+"-2*", interruptedFile))
		slices.Sort(marks)
		for i := len(marks) - 1; i >= 0; i-- {
			var m interruptMark
			raw, err := os.ReadFile(marks[i])
			if err == nil && json.Unmarshal(raw, &m) == nil && slices.Equal(withoutOutputDir(m.Args), withoutOutputDir(withoutToken(os.Args[1:]))) {
				dir = filepath.Dir(marks[i])
				note = fmt.Sprintf("the interrupted run of this command, stopped by %s at step %d; resuming it; "+
					"give --output_dir for a new run", m.Signal, m.Step)
				break
			}
		}
		acc.Printf("run directory: %s (%s)", dir, note)
	} else if dir != "" {
		acc.Printf("run directory: %s", dir)
	}
	chosen, err := acc.Broadcast([]byte(dir))
	if err != nil {
		return "", fmt.Errorf("trainer: ChooseRunDir: %w", err)
	}
	return string(chosen), nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// markInterrupted records in dir that sig stopped its run after step (interrupted.json, read
// by ChooseRunDir) and prints the command that resumes it. Only the main process writes.
func markInterrupted(acc *accelerator.Accelerator, dir string, sig os.Signal, step int64) error {
	if !acc.IsMainProcess() {
		return nil
	}
	cmd := resumeCommand(dir)
	raw, err := json.MarshalIndent(interruptMark{Signal: signalName(sig), Step: step, Command: cmd, Args: withoutToken(os.Args[1:])}, "", "  ")
	if err != nil {
		return fmt.Errorf("trainer: marking the interruption: %w", err)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, interruptedFile), append(raw, '\n')); err != nil {
		return fmt.Errorf("trainer: marking the interruption: %w", err)
	}
	acc.Printf("to resume: %s", cmd)
	return nil
}

// clearInterrupted removes markInterrupted's record from dir once its run has ended. Only the
// main process writes.
func clearInterrupted(acc *accelerator.Accelerator, dir string) error {
	if !acc.IsMainProcess() {
		return nil
	}
	if err := os.Remove(filepath.Join(dir, interruptedFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("trainer: clearing the interruption mark: %w", err)
	}
	return nil
}

// saveFolder writes the folder dst (best/, say) whole: the main process fills a new folder
// beside it with fill and renames it into place, so that dst is never half written; the
// other processes wait for it.
func saveFolder(acc *accelerator.Accelerator, dst string, fill func(dir string) error) error {
	if acc.IsMainProcess() {
		if err := fsutil.ReplaceDir(dst, fill); err != nil {
			return fmt.Errorf("trainer: saving %s: %w", dst, err)
		}
	}
	return acc.WaitForEveryone()
}

// resumeCommand is the command line that runs this program again on the run directory dir:
// os.Args with --output_dir dir added when missing. Under `go run` it is `go run PACKAGE`,
// the package named relative to the working directory.
func resumeCommand(dir string) string {
	args := []string{os.Args[0]}
	if pkg := goRunPackage(); pkg != "" {
		args = []string{"go", "run", pkg}
	}
	rest := withoutToken(os.Args[1:])
	args = append(args, rest...)
	if len(withoutOutputDir(rest)) == len(rest) {
		args = append(args, "--output_dir", dir)
	}
	return shell.Join(args)
}

// withoutToken is args without --token and its value (trainer/args' Hub token): the mark and
// the resume command never hold it (the resumed run finds the model in the cache, or the token
// in $HF_TOKEN or the token file).
func withoutToken(args []string) []string { return withoutFlag(args, "token") }

// withoutOutputDir is args without --output_dir and its value.
func withoutOutputDir(args []string) []string { return withoutFlag(args, "output_dir") }

// withoutFlag is args without the flag name and its value (any spelling: dashes or
// underscores, "=value" or the next argument).
func withoutFlag(args []string, name string) []string {
	out := []string{}
	for i := 0; i < len(args); i++ {
		norm := strings.ReplaceAll(args[i], "-", "_")
		if norm == "__"+name {
			i++
			continue
		}
		if strings.HasPrefix(norm, "__"+name+"=") {
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// goRunPackage is, for a program started by `go run` (its binary in go-build's temporary
// folder), its main package relative to the working directory ("./examples/bert_classify"); "" else.
func goRunPackage() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || !strings.Contains(os.Args[0], "go-build") || bi.Main.Path == "" {
		return ""
	}
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for root := wd; ; root = filepath.Dir(root) {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			rel, err := filepath.Rel(wd, filepath.Join(root, strings.TrimPrefix(strings.TrimPrefix(bi.Path, bi.Main.Path), "/")))
			if err != nil {
				return ""
			}
			if rel == "." || strings.HasPrefix(rel, "..") {
				return rel
			}
			return "./" + rel
		}
		if filepath.Dir(root) == root {
			return ""
		}
	}
}
