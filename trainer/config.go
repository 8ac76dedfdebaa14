package trainer

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/goaccel/goaccel/accelerator"
	. "github.com/gomlx/gomlx/core/graph"
)

// Config holds the hyperparameters of a Fit run and how it reports. The JSON fields are
// written to the run directory's config.json and compared when a run is resumed; the others
// (writers, intervals, callbacks) only change what is shown.
//
// Steps are optimizer updates, as in the Hugging Face Trainer: with gradient accumulation over
// k batches, one step consumes k batches of the training data.
type Config struct {
	// OutputDir is the run directory (config.json, metrics.jsonl, checkpoints, curves). Required.
	// A directory that already holds a run of the same configuration is resumed from its
	// latest valid checkpoint; see Fit.
	OutputDir string `json:"output_dir"`

	// Epochs is the number of passes over the training data; 0 means no limit (MaxSteps then
	// ends the run). At least one of Epochs and MaxSteps must be set.
	Epochs int `json:"epochs"`
	// MaxSteps stops the run after this many optimizer updates; 0 means no limit.
	MaxSteps int64 `json:"max_steps"`

	// LearningRate is the peak learning rate of the schedule, the one place a Fit run's rate
	// is given: build the optimizer without one (optim.AdamConfig{}); a rate it was built
	// with is replaced. Required.
	LearningRate float64 `json:"learning_rate"`
	// Schedule names the learning-rate schedule: "constant" (the default), "linear" or
	// "cosine". With peak rate η = LearningRate, W warm-up updates and T updates in the run,
	// the rate of update u (0 for the first) is
	//
	//	warm-up (u < W):  η · (u+1)/W              (the W-th update reaches η)
	//	constant:         η
	//	linear:           η · max(0, (T-u)/(T-W))   (η at u = W, η/(T-W) for the last update)
	//	cosine:           η · ½(1 + cos(π · min(1, (u-W)/(T-W))))
	//
	// computed in the training graph, which the accelerator runs once per update (Fit passes
	// the schedule as accelerator.WithLearningRateSchedule); the rate of the last update is the
	// Store variable /optimizers/learning_rate, and metrics.jsonl records it.
	Schedule string `json:"schedule"`
	// WarmupSteps is the number of updates over which the rate rises linearly to LearningRate.
	WarmupSteps int64 `json:"warmup_steps"`
	// WarmupRatio, when WarmupSteps is 0, warms up over ceil(WarmupRatio x the run's updates),
	// as Hugging Face's warmup_ratio; in [0, 1).
	WarmupRatio float64 `json:"warmup_ratio,omitempty"`
	// ClipGradNorm clips the gradients by their global L2 norm before each update; 0 disables.
	// The accelerator does it: Fit passes it as accelerator.WithClipGradNorm.
	ClipGradNorm float64 `json:"clip_grad_norm"`
	// GradientAccumulation is the number of batches whose gradients are averaged into one
	// update; 0 or 1 updates after every batch. The accelerator does it: Fit passes it as
	// accelerator.WithGradientAccumulation.
	GradientAccumulation int `json:"gradient_accumulation"`
	// AutoBatch keeps the global batch when it does not fit the device memory budget
	// (accelerator.Config.DeviceMemory): the first step picks the largest per-device batch whose
	// memory plan fits and accumulates micro-batches up to the global batch
	// (accelerator.WithAutoBatch). Batches and steps are counted as without it.
	AutoBatch bool `json:"auto_batch"`

	// EvalEvery evaluates every this many updates, in addition to the end of each epoch;
	// 0 evaluates at epoch ends only.
	EvalEvery int64 `json:"eval_every"`
	// SkipEpochEval turns off the evaluation at the end of each epoch.
	SkipEpochEval bool `json:"skip_epoch_eval"`
	// BestMetric is the evaluation metric that picks the best model, saved under best/ in the
	// run directory, and that early stopping watches. It must be one of Task.MetricNames:
	// for SingleLabelClassification "accuracy", "macro_f1", "macro_precision", "macro_recall" and
	// "loss", and with 2 classes only also "f1", "precision" and "recall" (of class 1). Empty:
	// no best-model tracking.
	BestMetric string `json:"best_metric"`
	// BestMode is "max" or "min": whether a larger or a smaller BestMetric is better. Empty
	// means "min" for metrics whose name contains "loss" and "max" for the others.
	BestMode string `json:"best_mode"`
	// Patience stops training after this many evaluations in a row without an improvement of
	// BestMetric by more than MinDelta; 0 disables early stopping.
	Patience int `json:"patience"`
	// MinDelta is the smallest change of BestMetric that counts as an improvement.
	MinDelta float64 `json:"min_delta"`

	// SaveEvery saves the last checkpoint every this many updates, in addition to the end of
	// each epoch and of the run; 0 saves at epoch ends and at the end only.
	SaveEvery int64 `json:"save_every"`
	// KeepLast is how many of the last checkpoints to keep; 0 means 2.
	KeepLast int `json:"keep_last"`
	// DisableCheckpoints writes no checkpoint at all (no resume, no best model); for quick
	// experiments and benchmarks.
	DisableCheckpoints bool `json:"disable_checkpoints"`
	// AsyncSave writes the checkpoints (and the best model's) in the background
	// (checkpoint.Manager.SaveAsync): the training goes on while a host copy of the state at
	// the step is written, with the same atomicity and checksums; Fit waits for the last one
	// before it returns. It costs host memory for one more copy of the state.
	AsyncSave bool `json:"-"`

	// LogEvery writes a training record (mean loss since the last record, learning rate,
	// examples/s) to metrics.jsonl every this many updates; 0 means 10.
	LogEvery int64 `json:"log_every"`

	// Extra holds the program's own hyperparameters (model size, batch size, data files...):
	// they are written to config.json and must match when a run is resumed.
	Extra map[string]any `json:"extra,omitempty"`

	// Output receives the progress bar and the evaluation lines on the main process; nil means
	// os.Stdout. Other processes print nothing.
	Output io.Writer `json:"-"`
	// Display shows the run as it goes on the main process; nil: a progress.Bar on Output
	// (a bar per epoch and per evaluation on a terminal, plain lines elsewhere). Fit gives it
	// the evaluation lines and its notices too (Println).
	Display Display `json:"-"`
	// PlainInterval is how often the default Display prints a plain progress line when Output
	// is not a terminal (a log file, CI): no bar and no escape codes there. 0 means 10 s.
	PlainInterval time.Duration `json:"-"`
	// Quiet prints nothing but errors (metrics.jsonl is still written).
	Quiet bool `json:"-"`
	// Loggers receive every record Fit writes to metrics.jsonl (the default logger), in the
	// same order, on the main process; Fit closes them when it returns. A resumed session
	// gives them the records from the checkpoint on. A RunLogger (NewTensorBoardLogger,
	// NewCSVLogger; ReportTo makes them from --report_to's names) is started in OutputDir
	// first, where it drops what it held after the checkpoint's step.
	Loggers []Logger `json:"-"`
	// Callbacks are called during the run.
	Callbacks Callbacks `json:"-"`
	// Interrupt, when set, lets SIGINT and SIGTERM stop the run cleanly (NotifyInterrupt):
	// Fit finishes the current step, saves a checkpoint, draws the curves and returns a
	// Result with Interrupted set and a nil error. Giving Fit the same OutputDir resumes.
	Interrupt *Interrupt `json:"-"`
	// SaveBest, when set, writes the best model (by BestMetric) into the directory it is given
	// instead of a checkpoint: for example bert.SavePretrained, so that best/ is a Hugging
	// Face folder. Fit gives it a new temporary directory and renames it to best/ when
	// SaveBest returns nil. The training state (optimizer moments) stays in checkpoints/ only.
	SaveBest func(dir string) error `json:"-"`
}

// withDefaults returns c with zero values replaced by their defaults.
func (c Config) withDefaults() Config {
	if c.GradientAccumulation == 0 {
		c.GradientAccumulation = 1
	}
	if c.KeepLast == 0 {
		c.KeepLast = 2
	}
	if c.LogEvery == 0 {
		c.LogEvery = 10
	}
	if c.PlainInterval == 0 {
		c.PlainInterval = 10 * time.Second
	}
	if c.Schedule == "" {
		c.Schedule = scheduleConstant
	}
	c.Schedule = strings.ToLower(strings.TrimSpace(c.Schedule))
	c.BestMode = strings.ToLower(strings.TrimSpace(c.BestMode))
	if c.BestMetric != "" && c.BestMode == "" {
		c.BestMode = "max"
		if strings.Contains(strings.ToLower(c.BestMetric), "loss") {
			c.BestMode = "min"
		}
	}
	return c
}

// prepareOptions is the one place where Config's training mechanics become the
// accelerator's Prepare options, which implement them: ClipGradNorm is
// accelerator.WithClipGradNorm, GradientAccumulation accelerator.WithGradientAccumulation,
// AutoBatch accelerator.WithAutoBatch, and Schedule, LearningRate and the warm-up are the
// graph function (lrSchedule.Graph) given to accelerator.WithLearningRateSchedule. sched is
// called when the step graph is built, once the run's length is known. c is defaulted.
func (c Config) prepareOptions(sched func() lrSchedule) []accelerator.PrepareOption {
	opts := []accelerator.PrepareOption{
		accelerator.WithGradientAccumulation(c.GradientAccumulation),
		accelerator.WithClipGradNorm(c.ClipGradNorm),
		accelerator.WithLearningRateSchedule(func(u *Node) *Node { return sched().Graph()(u) }),
	}
	if c.AutoBatch {
		opts = append(opts, accelerator.WithAutoBatch())
	}
	return opts
}

// validate checks the numbers of a defaulted Config. Names that depend on the task or the
// data (metrics, total steps) are checked by Fit.
func (c Config) validate() error {
	bad := func(field string, format string, args ...any) error {
		return fmt.Errorf("trainer: Config.%s %s", field, fmt.Sprintf(format, args...))
	}
	switch {
	case strings.TrimSpace(c.OutputDir) == "":
		return bad("OutputDir", "is empty: every run writes config.json, metrics.jsonl and checkpoints to a directory")
	case c.Epochs < 0:
		return bad("Epochs", "= %d: must be >= 0", c.Epochs)
	case c.MaxSteps < 0:
		return bad("MaxSteps", "= %d: must be >= 0", c.MaxSteps)
	case c.Epochs == 0 && c.MaxSteps == 0:
		return bad("Epochs", "and Config.MaxSteps are both 0: set how long to train")
	case c.ClipGradNorm < 0 || math.IsNaN(c.ClipGradNorm):
		return bad("ClipGradNorm", "= %g: must be >= 0 (0 disables clipping)", c.ClipGradNorm)
	case c.WarmupRatio < 0 || c.WarmupRatio >= 1 || math.IsNaN(c.WarmupRatio):
		return bad("WarmupRatio", "= %g: must be in [0, 1)", c.WarmupRatio)
	case c.GradientAccumulation < 1:
		return bad("GradientAccumulation", "= %d: must be >= 1", c.GradientAccumulation)
	case c.EvalEvery < 0:
		return bad("EvalEvery", "= %d: must be >= 0", c.EvalEvery)
	case c.SaveEvery < 0:
		return bad("SaveEvery", "= %d: must be >= 0", c.SaveEvery)
	case c.KeepLast < 0:
		return bad("KeepLast", "= %d: must be >= 0", c.KeepLast)
	case c.LogEvery < 0:
		return bad("LogEvery", "= %d: must be >= 0", c.LogEvery)
	case c.Patience < 0:
		return bad("Patience", "= %d: must be >= 0", c.Patience)
	case c.MinDelta < 0:
		return bad("MinDelta", "= %g: must be >= 0", c.MinDelta)
	case c.PlainInterval < 0:
		return bad("PlainInterval", "= %s: must be >= 0", c.PlainInterval)
	case c.BestMode != "" && c.BestMode != "max" && c.BestMode != "min":
		return bad("BestMode", "= %q: must be \"max\" or \"min\"", c.BestMode)
	case c.Patience > 0 && c.BestMetric == "":
		return bad("Patience", "= %d needs Config.BestMetric: early stopping watches that metric", c.Patience)
	case c.Patience > 0 && c.SkipEpochEval && c.EvalEvery == 0:
		return bad("Patience", "= %d but no evaluation ever runs (SkipEpochEval and EvalEvery = 0)", c.Patience)
	}
	return nil
}

// mayChangeOnResume names the JSON fields of Config that may differ when a run is resumed:
// the length of the run (to train longer), as long as the learning-rate schedule does not
// depend on it (checked by compareConfigs), and the directory's own name (it may be moved).
var mayChangeOnResume = map[string]bool{"epochs": true, "max_steps": true, "output_dir": true}
