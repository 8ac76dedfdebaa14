package trainer

import "errors"

// ErrStop, returned by a callback, ends the run cleanly: the last checkpoint is saved and the
// curves are drawn, and Fit returns a nil error with Result.StopReason set. Any other error
// returned by a callback aborts the run at once, as a crash would (nothing more is saved), and
// Fit returns it.
var ErrStop = errors.New("trainer: stop requested by a callback")

// Callbacks are called by Fit on the main process and on every other process alike. A nil
// field is skipped. They run on Fit's goroutine, between steps: a slow callback slows training.
type Callbacks struct {
	// OnTrainBegin is called once per Fit, before the first training step, with the model's
	// variables in place (built by Task.Eval on the first training batch, or restored from
	// the checkpoint of a resumed run): the weights the next step starts from, for example
	// to export them. Without Task.Eval the variables are only created by the first step.
	OnTrainBegin func(TrainBeginEvent) error
	// OnStep is called after every optimizer update.
	OnStep func(StepEvent) error
	// OnEval is called after every evaluation, once the best model has been updated.
	OnEval func(EvalEvent) error
	// OnEpochEnd is called at the end of every epoch, after its evaluation and checkpoint.
	OnEpochEnd func(EpochEvent) error
}

// TrainBeginEvent describes the start of training in a session.
type TrainBeginEvent struct {
	// Step is the number of updates already done: 0 on a new run, the checkpoint's on a
	// resumed one.
	Step int64
	// Resumed is the checkpoint the session continues from ("" for a new run).
	Resumed string
}

// StepEvent describes an optimizer update.
type StepEvent struct {
	// Step is the number of updates done, this one included (1 for the first update).
	Step int64
	// Epoch is the training progress in epochs: 1.5 is the middle of the second epoch.
	Epoch float64
	// Loss is the mean training loss of the batches of this update.
	Loss float64
	// Examples is the number of real (non-padding) examples of those batches.
	Examples int
}

// EvalEvent describes an evaluation.
type EvalEvent struct {
	Step  int64
	Epoch float64
	// Metrics are the task's metrics over the whole evaluation set.
	Metrics map[string]float64
	// Improved reports whether Config.BestMetric improved (always false without BestMetric).
	Improved bool
	// Best is the best value of Config.BestMetric so far, and BestStep the step it was
	// reached at.
	Best     float64
	BestStep int64
	// BadEvals is the number of evaluations in a row without improvement.
	BadEvals int
}

// EpochEvent describes the end of an epoch.
type EpochEvent struct {
	// Epoch is the 0-based index of the epoch that ended.
	Epoch int
	Step  int64
	// Loss is the mean training loss over the epoch's batches run in this process (a resumed
	// epoch counts only the batches after the resume point).
	Loss float64
	// Metrics are the metrics of the evaluation at the end of the epoch (nil if none ran).
	Metrics map[string]float64
}
