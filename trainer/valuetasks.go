package trainer

import (
	"fmt"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/metrics"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// valueLogits wraps a task's logits function with the checks every value task makes: the
// logits are [B, k] and the labels [B, k] floats (text.Labeled.Values collated).
func valueLogits(task string, k int, logits func(s *model.Scope, inputs []*Node) *Node) func(*model.Scope, accelerator.GraphBatch) (*Node, *Node) {
	return func(s *model.Scope, b accelerator.GraphBatch) (*Node, *Node) {
		if k < 1 {
			exceptions.Panicf("trainer: %s: %d outputs, want at least 1", task, k)
		}
		l := logits(s, b.Inputs)
		if l.Rank() != 2 || l.Shape().Dimensions[1] != k {
			exceptions.Panicf("trainer: %s: the logits function returned shape %s, want [batch, %d]", task, l.Shape(), k)
		}
		if b.Labels == nil {
			exceptions.Panicf("trainer: %s: the batch has no labels", task)
		}
		y := b.Labels
		if !y.DType().IsFloat() || y.Rank() != 2 || y.Shape().Dimensions[1] != k {
			exceptions.Panicf("trainer: %s: labels of shape %s, want float [batch, %d] (text.Labeled.Values with %d values "+
				"each; a class in Label is single-label classification)", task, y.Shape(), k, k)
		}
		if dt := l.DType(); dt == dtypes.BFloat16 || dt == dtypes.Float16 {
			l = ConvertDType(l, dtypes.Float32) // the loss and its mean in float32, as CrossEntropy
		}
		return l, ConvertDType(y, l.DType())
	}
}

// perExampleBCE is the binary cross-entropy of sigmoid(logits) against 0/1 targets, averaged
// over the k labels of each example ([B, k] -> [B]), in the stable form
// max(x, 0) - x*y + log(1 + exp(-|x|)) of PyTorch's BCEWithLogitsLoss.
func perExampleBCE(logits, targets *Node) *Node {
	x := logits
	elem := Add(Sub(Max(x, ZerosLike(x)), Mul(x, targets)), Log1P(Exp(Neg(Abs(x)))))
	return ReduceMean(elem, -1)
}

// perExampleSquaredError is (prediction - target)^2 of each example, summed over its k
// values ([B, k] -> [B]; k is 1 for regression).
func perExampleSquaredError(predictions, targets *Node) *Node {
	d := Sub(predictions, targets)
	return ReduceSum(Mul(d, d), -1)
}

// MultiLabelClassification returns the Task of multi-label classification (Hugging Face's
// problem_type "multi_label_classification": each example has any set of numLabels classes,
// given as 0/1 flags in text.Labeled.Values), for a model whose logits function maps the
// batch inputs to logits [B, numLabels]:
//
//   - training loss: binary cross-entropy of sigmoid(logits) against the flags, averaged over
//     the labels and the real examples (PyTorch's BCEWithLogitsLoss, as transformers'
//     heads compute it);
//   - evaluation: the logits and per-example losses, gathered over the evaluation set;
//   - metrics (metrics.MultiLabel, a class predicted where sigmoid(logit) > 0.5, each real
//     example counted once): "subset_accuracy" (every flag right), "micro_f1",
//     "micro_precision", "micro_recall", "macro_f1", "macro_precision", "macro_recall", and
//     "loss".
func MultiLabelClassification(numLabels int, logits func(s *model.Scope, inputs []*Node) *Node) Task {
	const task = "MultiLabelClassification"
	checked := valueLogits(task, numLabels, logits)
	return Task{
		Loss: func(s *model.Scope, b accelerator.GraphBatch) *Node {
			l, y := checked(s, b)
			return accelerator.MaskedMean(perExampleBCE(l, y), b.Mask)
		},
		Eval: func(s *model.Scope, b accelerator.GraphBatch) []*Node {
			l, y := checked(s, b)
			return []*Node{l, perExampleBCE(l, y)}
		},
		Metrics: func(g *accelerator.Gathered) (map[string]float64, error) {
			flat, err := g.Floats(0)
			if err != nil {
				return nil, err
			}
			flags, err := g.IntLabels()
			if err != nil {
				return nil, err
			}
			n := g.Len()
			if len(flat) != n*numLabels || len(flags) != n*numLabels {
				return nil, fmt.Errorf("trainer: %s: %d logits and %d flags gathered for %d examples of %d labels",
					task, len(flat), len(flags), n, numLabels)
			}
			rows, labels := make([][]float64, n), make([][]int, n)
			for i := range n {
				rows[i] = flat[i*numLabels : (i+1)*numLabels]
				for k, f := range flags[i*numLabels : (i+1)*numLabels] {
					if f != 0 { // the flags as metrics.MultiLabel takes them: the classes' ids
						labels[i] = append(labels[i], k)
					}
				}
			}
			m := metrics.NewMultiLabel(numLabels)
			if err := m.Add(rows, labels, g.Real); err != nil {
				return nil, fmt.Errorf("trainer: %s: %w", task, err)
			}
			out := m.Values()
			delete(out, "count")
			if out["loss"], err = meanLoss(g, 1); err != nil {
				return nil, fmt.Errorf("trainer: %s: %w", task, err)
			}
			return out, nil
		},
		MetricNames: []string{"subset_accuracy", "micro_f1", "micro_precision", "micro_recall", "macro_f1",
			"macro_precision", "macro_recall", "loss"},
	}
}

// Regression returns the Task of regression (Hugging Face's problem_type "regression",
// num_labels 1: one number per example, text.Labeled.Values' one value), for a model whose
// logits function maps the batch inputs to [B, 1]:
//
//   - training loss: the squared error, averaged over the real examples (PyTorch's MSELoss);
//   - evaluation: the predictions and per-example squared errors, gathered;
//   - metrics (metrics.Regression, over the real examples): "mse", "mae", "pearson",
//     "spearman", and "loss" (the mean squared error). A correlation that cannot be computed
//     (fewer than 2 examples, constant predictions or targets) fails the evaluation.
func Regression(logits func(s *model.Scope, inputs []*Node) *Node) Task {
	const task = "Regression"
	checked := valueLogits(task, 1, logits)
	return Task{
		Loss: func(s *model.Scope, b accelerator.GraphBatch) *Node {
			l, y := checked(s, b)
			return accelerator.MaskedMean(perExampleSquaredError(l, y), b.Mask)
		},
		Eval: func(s *model.Scope, b accelerator.GraphBatch) []*Node {
			l, y := checked(s, b)
			return []*Node{l, perExampleSquaredError(l, y)}
		},
		Metrics: func(g *accelerator.Gathered) (map[string]float64, error) {
			preds, err := g.Floats(0)
			if err != nil {
				return nil, err
			}
			targets, err := g.FloatLabels()
			if err != nil {
				return nil, err
			}
			var r metrics.Regression
			if err := r.Add(preds, targets, g.Real); err != nil {
				return nil, fmt.Errorf("trainer: %s: %w", task, err)
			}
			out := map[string]float64{"mse": r.MSE(), "mae": r.MAE(), "loss": r.MSE()}
			if out["pearson"], err = r.Pearson(); err != nil {
				return nil, fmt.Errorf("trainer: %s: %w", task, err)
			}
			if out["spearman"], err = r.Spearman(); err != nil {
				return nil, fmt.Errorf("trainer: %s: %w", task, err)
			}
			return out, nil
		},
		MetricNames: []string{"mse", "mae", "pearson", "spearman", "loss"},
	}
}

// meanLoss is the mean of gathered output k (per-example losses) over the real examples.
func meanLoss(g *accelerator.Gathered, k int) (float64, error) {
	losses, err := g.Floats(k)
	if err != nil {
		return 0, err
	}
	var loss metrics.Mean
	if err := loss.AddMasked(losses, g.Real); err != nil {
		return 0, err
	}
	return loss.Value(), nil
}
