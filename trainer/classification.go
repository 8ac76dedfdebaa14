package trainer

import (
	"fmt"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/metrics"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// SingleLabelClassification returns the Task of single-label classification (Hugging Face's
// problem_type "single_label_classification": one class per example) into numClasses
// classes, for a model whose logits function maps the batch inputs to logits [B, numClasses]:
//
//   - training loss: softmax cross-entropy averaged over the real examples
//     (accelerator.CrossEntropy);
//   - evaluation: the logits and per-example losses, gathered over the whole evaluation set;
//   - metrics (package metrics, each real example counted once): "accuracy",
//     "macro_precision", "macro_recall", "macro_f1", "loss" (the mean cross-entropy), and with
//     2 classes also "precision", "recall" and "f1" of class 1 (the positive class).
func SingleLabelClassification(numClasses int, logits func(s *model.Scope, inputs []*Node) *Node) Task {
	return SingleLabelClassificationOfBatch(numClasses, func(s *model.Scope, b accelerator.GraphBatch) *Node {
		return logits(s, b.Inputs)
	})
}

// SingleLabelClassificationOfBatch is SingleLabelClassification for a model whose logits
// depend on the whole batch, not only its inputs: the logits function receives the
// GraphBatch, mask included, in training and in evaluation, so a layer with batch statistics
// (models/nn.BatchNorm) can keep the padding slots out of them.
func SingleLabelClassificationOfBatch(numClasses int, logits func(s *model.Scope, b accelerator.GraphBatch) *Node) Task {
	checked := func(s *model.Scope, b accelerator.GraphBatch) *Node {
		if numClasses < 2 {
			exceptions.Panicf("trainer: SingleLabelClassification: numClasses = %d, want at least 2", numClasses)
		}
		l := logits(s, b)
		if l.Rank() != 2 || l.Shape().Dimensions[1] != numClasses {
			exceptions.Panicf("trainer: SingleLabelClassification: the logits function returned shape %s, want [batch, %d]",
				l.Shape(), numClasses)
		}
		return l
	}
	names := []string{"accuracy", "macro_precision", "macro_recall", "macro_f1", "loss"}
	if numClasses == 2 {
		names = append(names, "precision", "recall", "f1")
	}
	return Task{
		Loss: func(s *model.Scope, b accelerator.GraphBatch) *Node {
			return accelerator.CrossEntropy(checked(s, b), b.Labels, b.Mask)
		},
		Eval: func(s *model.Scope, b accelerator.GraphBatch) []*Node {
			l := checked(s, b)
			return []*Node{l, accelerator.PerExampleCrossEntropy(l, b.Labels)}
		},
		Metrics: func(g *accelerator.Gathered) (map[string]float64, error) {
			preds, err := g.Argmax(0)
			if err != nil {
				return nil, err
			}
			labels, err := g.IntLabels()
			if err != nil {
				return nil, err
			}
			clf := metrics.NewConfusion(numClasses)
			if err := clf.Add(preds, labels, g.Real); err != nil {
				return nil, fmt.Errorf("trainer: SingleLabelClassification: %w", err)
			}
			out := clf.Values()
			delete(out, "count")
			if out["loss"], err = meanLoss(g, 1); err != nil {
				return nil, fmt.Errorf("trainer: SingleLabelClassification: %w", err)
			}
			return out, nil
		},
		MetricNames: names,
	}
}
