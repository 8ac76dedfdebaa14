package trainer

import (
	"fmt"
	"github.com/goaccel/goaccel/data"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/internal/ptytest"
	"github.com/goaccel/goaccel/trainer/progress"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// fitPrinting runs a short fit that prints to out.
func fitPrinting(t *testing.T, out *os.File, interval time.Duration) {
	t.Helper()
	tr, err := New(accOn(t, 1), model.NewStore(), optimizer.Adam().Done(), toyTask(4))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tr.Fit(toyLoader(t, 32, 0, 4, true), toyLoader(t, 8, 100, 4, false), Config{
		OutputDir: filepath.Join(t.TempDir(), "run"), Epochs: 2, LearningRate: 0.01, Output: out,
		PlainInterval: interval, DisableCheckpoints: true})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNonTTYOutputHasNoEscapes writes the progress to a file (not a terminal): plain lines,
// no bar, no escape codes and no carriage returns.
func TestNonTTYOutputHasNoEscapes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.txt")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if progress.IsTerminal(f) {
		t.Fatal("a regular file is taken for a terminal")
	}
	fitPrinting(t, f, time.Nanosecond) // a plain line after every step
	f.Close()
	raw, _ := os.ReadFile(path)
	out := string(raw)
	if strings.ContainsAny(out, "\x1b\r") {
		t.Errorf("non-terminal output has escape codes or carriage returns:\n%q", out)
	}
	plain := regexp.MustCompile(`(?m)^epoch 2/2 batch 8/8, step 16/16: loss \d+\.\d{4} \| \d+ ex/s$`)
	if !plain.MatchString(out) {
		t.Errorf("no plain progress line for the last step of epoch 2:\n%s", out)
	}
	for _, want := range []string{"epoch 1/2 batch 1/8, step 1/16: loss", "| ETA ", ", run ",
		"eval step 8, epoch 1: accuracy", "epoch 2 done: step 16, mean loss", "trainer: done after 2 epochs (step 16"} {
		if !strings.Contains(out, want) {
			t.Errorf("output misses %q:\n%s", want, out)
		}
	}
	// With the default interval (10 s) a short run prints only the first and the last batch
	// of each epoch.
	f2, _ := os.Create(path + ".2")
	fitPrinting(t, f2, 0)
	f2.Close()
	raw, _ = os.ReadFile(path + ".2")
	if strings.Contains(string(raw), " batch 2/8,") || !strings.Contains(string(raw), " batch 1/8,") {
		t.Errorf("with a 10 s interval a sub-second epoch printed a progress line:\n%s", raw)
	}
}

// TestTerminalOutputDrawsBars writes the progress to a pseudo-terminal: the bar is drawn
// (carriage returns, the count, the loss) and the eval lines still get their own lines.
func TestTerminalOutputDrawsBars(t *testing.T) {
	master, slave, err := ptytest.Open()
	if err != nil {
		t.Skipf("SKIPPING: no pseudo-terminal on this machine: %v", err)
	}
	defer master.Close()
	if !progress.IsTerminal(slave) {
		t.Fatal("the pseudo-terminal is not detected as a terminal")
	}
	screen := ptytest.Capture(master)
	fitPrinting(t, slave, 0)
	slave.Close()
	out := screen.Text()
	for _, want := range []string{"\r", "epoch 1/2", "epoch 2/2", "(8/8)", "loss ", "ex/s", "eval step 8, epoch 1:"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output misses %q:\n%q", want, out)
		}
	}
}

// recordingDisplay is a Display that notes what Fit tells it.
type recordingDisplay struct {
	epochs, batches, ends, evals int
	lines                        []string
}

func (d *recordingDisplay) StartEpoch(epoch, batchesDone int, stepsDone int64) { d.epochs++ }
func (d *recordingDisplay) Batch(loss float64, examples int, step int64)       { d.batches++ }
func (d *recordingDisplay) EndEpoch(summary string)                            { d.ends++ }
func (d *recordingDisplay) Println(format string, args ...any) {
	d.lines = append(d.lines, fmt.Sprintf(format, args...))
}
func (d *recordingDisplay) Evaluating(src data.Source) data.Source { d.evals++; return src }

// TestFitDisplayAttaches: a Config.Display replaces the progress bar: Fit tells it every
// epoch, batch and evaluation and gives it its lines, and writes nothing to Output itself.
func TestFitDisplayAttaches(t *testing.T) {
	tr, err := New(accOn(t, 1), model.NewStore(), optimizer.Adam().Done(), toyTask(4))
	if err != nil {
		t.Fatal(err)
	}
	d := &recordingDisplay{}
	var out strings.Builder
	_, err = tr.Fit(toyLoader(t, 32, 0, 4, true), toyLoader(t, 8, 100, 4, false), Config{
		OutputDir: filepath.Join(t.TempDir(), "run"), Epochs: 2, LearningRate: 0.01, Output: &out, Display: d,
		DisableCheckpoints: true})
	if err != nil {
		t.Fatal(err)
	}
	if d.epochs != 2 || d.ends != 2 || d.batches != 16 || d.evals != 2 {
		t.Errorf("the display saw %d epochs (%d ended), %d batches, %d evaluations; want 2, 2, 16, 2",
			d.epochs, d.ends, d.batches, d.evals)
	}
	joined := strings.Join(d.lines, "\n")
	if !strings.Contains(joined, "eval step 8, epoch 1: accuracy") || !strings.Contains(joined, "trainer: done after 2 epochs") {
		t.Errorf("the display's lines miss the evaluation or the end:\n%s", joined)
	}
	if out.Len() != 0 {
		t.Errorf("Fit wrote to Output beside its Display:\n%s", out.String())
	}
}
