package trainer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/goaccel/goaccel/accelerator"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// Task says what to learn and how to judge it: the training loss of a batch, the
// per-example outputs of evaluation, and the metrics computed from the gathered outputs.
// SingleLabelClassification builds one for the usual case.
type Task struct {
	// Loss returns the scalar training loss of a global batch, a mean over its real examples
	// (accelerator.CrossEntropy or accelerator.MaskedMean honour b.Mask). Fit calls
	// Accelerator.Backward on it. Required.
	Loss func(s *model.Scope, b accelerator.GraphBatch) *Node
	// Eval returns per-example outputs (batch on axis 0), gathered over the evaluation set by
	// Job.Evaluate with padding dropped. Required when Fit gets an evaluation source; it is
	// also run once on the first training batch before training, to build the model's
	// variables and check a resumed checkpoint against them.
	Eval accelerator.EvalFn
	// Metrics computes named metrics (e.g. "accuracy") from the gathered outputs. Required
	// with Eval.
	Metrics func(g *accelerator.Gathered) (map[string]float64, error)
	// MetricNames lists the names Metrics returns, so that Config.BestMetric is checked
	// before training starts.
	MetricNames []string
	// LossWeight, when set, says that Loss is a mean over other units than the batch's real
	// examples (the real tokens of token classification) and returns their number in the
	// batch, a scalar: Fit then calls Accelerator.BackwardWeighted, so that the update is
	// the mean over all the units of the global batch (and of the accumulated batches) on
	// every topology. Nil: a mean over the real examples (Accelerator.Backward).
	LossWeight func(s *model.Scope, b accelerator.GraphBatch) *Node
}

// check validates the task against the config and the presence of evaluation data.
func (t Task) check(cfg Config, hasEval bool) error {
	if t.Loss == nil {
		return fmt.Errorf("trainer: Task.Loss is nil: Fit needs the training loss of a batch")
	}
	if hasEval && (t.Eval == nil || t.Metrics == nil) {
		return fmt.Errorf("trainer: an evaluation source was given but Task.Eval or Task.Metrics is nil")
	}
	if cfg.BestMetric == "" {
		return nil
	}
	if !hasEval {
		return fmt.Errorf("trainer: Config.BestMetric = %q but Fit got no evaluation source: the metric would never be computed",
			cfg.BestMetric)
	}
	if cfg.SkipEpochEval && cfg.EvalEvery == 0 {
		return fmt.Errorf("trainer: Config.BestMetric = %q but no evaluation ever runs (SkipEpochEval and EvalEvery = 0)",
			cfg.BestMetric)
	}
	if !slices.Contains(t.MetricNames, cfg.BestMetric) {
		if len(t.MetricNames) == 0 {
			return fmt.Errorf("trainer: Config.BestMetric = %q, but Task.MetricNames is empty: list the names the "+
				"task's Metrics function returns", cfg.BestMetric)
		}
		return fmt.Errorf("trainer: Config.BestMetric = %q is not a metric of this task; its evaluation produces: %s",
			cfg.BestMetric, strings.Join(t.MetricNames, ", "))
	}
	return nil
}
