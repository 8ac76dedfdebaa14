package args

import (
	"io"
	"os"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/trainer"
)

// Run is what a training program sets up from the shared flags before its data and model
// (Start): the loggers of --report_to, the accelerator, the run directory and the Ctrl-C /
// SIGTERM handler that Fit's Interrupt takes.
type Run struct {
	Acc       *accelerator.Accelerator
	Dir       string
	Interrupt *trainer.Interrupt
	Loggers   []trainer.Logger
}

// Start checks --report_to, makes the accelerator (NewAccelerator, printing to out), chooses
// the run directory (trainer.ChooseRunDir: --output_dir, or runs/<program>-<time>, or the
// interrupted run of the same command) and starts listening for Ctrl-C and SIGTERM, in the
// order the programs need them; Close undoes it. Errors name the flags.
func (t Training) Start(program string, out io.Writer) (*Run, error) {
	loggers, err := t.Loggers()
	if err != nil {
		return nil, err
	}
	acc, err := t.NewAccelerator(out)
	if err != nil {
		return nil, err
	}
	dir, err := trainer.ChooseRunDir(acc, t.OutputDir, program)
	if err != nil {
		acc.Close()
		return nil, err
	}
	return &Run{Acc: acc, Dir: dir, Interrupt: trainer.NotifyInterrupt(os.Stderr), Loggers: loggers}, nil
}

// Close stops listening for signals and closes the accelerator.
func (r *Run) Close() {
	r.Interrupt.Stop()
	r.Acc.Close()
}
