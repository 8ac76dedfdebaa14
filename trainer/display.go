package trainer

import (
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/trainer/progress"
)

// Display is what Fit tells about a run while it runs, on the main process: the loop calls it
// and does not draw anything itself. progress.Bar is the default (Config.Display nil); another
// Display (a GUI, a notebook, a quieter log) attaches the same way.
type Display interface {
	// StartEpoch begins epoch (0-based), of which batchesDone batches are done already (a
	// resumed epoch), after stepsDone optimizer steps of the run.
	StartEpoch(epoch, batchesDone int, stepsDone int64)
	// Batch reports a finished batch: its loss, its real examples (all processes) and the
	// optimizer steps done after it.
	Batch(loss float64, examples int, step int64)
	// EndEpoch ends the epoch's display (complete or not) with summary ("" for none).
	EndEpoch(summary string)
	// Evaluating wraps the evaluation source so that its pass can be shown.
	Evaluating(src data.Source) data.Source
	// Println shows a line: an evaluation, a notice.
	Println(format string, args ...any)
}

var _ Display = (*progress.Bar)(nil)
