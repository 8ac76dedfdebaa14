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

// TokenClassification returns the Task of token classification (named entities: transformers'
// *ForTokenClassification) into the IOB2 tags (id2label: "O", "B-PER", "I-PER"...), for a
// model whose logits function maps the batch inputs to per-token logits [B, L, len(tags)],
// with labels [B, L] of tag ids where -100 (metrics.IgnoreIndex) marks the positions that do
// not count: special tokens, padding, and the word pieces after a word's first (as
// transformers' run_ner.py aligns them):
//
//   - training loss: softmax cross-entropy averaged over the counted tokens of the global
//     batch (Task.LossWeight is their number, so the update is the same on every topology
//     and with accumulation; DDP's per-process mean differs from it when the processes
//     hold different numbers of tokens);
//   - evaluation: the predicted tag of each token and each sentence's summed loss and
//     counted tokens, gathered;
//   - metrics (metrics.Entities over the gathered sentences, seqeval's default mode, in
//     which an I- after O starts an entity): entity-level "precision", "recall", "f1"
//     (micro), "macro_f1", token "accuracy", and "loss" (per counted token).
func TokenClassification(tags []string, logits func(s *model.Scope, inputs []*Node) *Node) Task {
	const task = "TokenClassification"
	numTags := len(tags)
	parts := func(s *model.Scope, b accelerator.GraphBatch) (perToken, counted *Node, l *Node) {
		if numTags < 1 {
			exceptions.Panicf("trainer: %s: no tags", task)
		}
		l = logits(s, b.Inputs)
		if b.Labels == nil || b.Labels.Rank() != 2 {
			exceptions.Panicf("trainer: %s: labels of shape %v, want tag ids [batch, tokens] (-100: not counted)", task, shapeOf(b.Labels))
		}
		bsz, tokens := b.Labels.Shape().Dimensions[0], b.Labels.Shape().Dimensions[1]
		if l.Rank() != 3 || l.Shape().Dimensions[0] != bsz || l.Shape().Dimensions[1] != tokens || l.Shape().Dimensions[2] != numTags {
			exceptions.Panicf("trainer: %s: the logits function returned shape %s, want [%d, %d, %d]", task, l.Shape(), bsz, tokens, numTags)
		}
		if dt := l.DType(); dt == dtypes.BFloat16 || dt == dtypes.Float16 {
			l = ConvertDType(l, dtypes.Float32)
		}
		labels := ConvertDType(b.Labels, dtypes.Int32)
		countedB := NotEqual(labels, Scalar(l.Graph(), dtypes.Int32, metrics.IgnoreIndex))
		if b.Mask != nil {
			countedB = LogicalAnd(countedB, BroadcastToDims(ExpandAxes(b.Mask, -1), bsz, tokens))
		}
		safe := Where(countedB, labels, ZerosLike(labels)) // -100 would be outside OneHot's range
		ce := Neg(ReduceSum(Mul(OneHot(safe, numTags, l.DType()), LogSoftmax(l, -1)), -1))
		counted = ConvertDType(countedB, l.DType())
		return Mul(ce, counted), counted, l
	}
	return Task{
		Loss: func(s *model.Scope, b accelerator.GraphBatch) *Node {
			perToken, counted, _ := parts(s, b)
			n := ReduceAllSum(counted)
			return Div(ReduceAllSum(perToken), Max(n, OnesLike(n)))
		},
		LossWeight: func(s *model.Scope, b accelerator.GraphBatch) *Node {
			labels := ConvertDType(b.Labels, dtypes.Int32)
			counted := NotEqual(labels, Scalar(labels.Graph(), dtypes.Int32, metrics.IgnoreIndex))
			if b.Mask != nil {
				dims := labels.Shape().Dimensions
				counted = LogicalAnd(counted, BroadcastToDims(ExpandAxes(b.Mask, -1), dims...))
			}
			return ReduceAllSum(ConvertDType(counted, dtypes.Float32))
		},
		Eval: func(s *model.Scope, b accelerator.GraphBatch) []*Node {
			perToken, counted, l := parts(s, b)
			return []*Node{ConvertDType(ArgMax(l, -1), dtypes.Int32), ReduceSum(perToken, -1), ReduceSum(counted, -1)}
		},
		Metrics: func(g *accelerator.Gathered) (map[string]float64, error) {
			preds, err := g.Floats(0)
			if err != nil {
				return nil, err
			}
			labels, err := g.IntLabels()
			if err != nil {
				return nil, err
			}
			n := g.Len()
			if n == 0 || len(preds) != len(labels) || len(labels)%n != 0 {
				return nil, fmt.Errorf("trainer: %s: %d predictions and %d labels gathered for %d sentences", task, len(preds), len(labels), n)
			}
			width := len(labels) / n
			predRows, labelRows := make([][]int, n), make([][]int, n)
			for i := range n {
				predRows[i], labelRows[i] = make([]int, width), labels[i*width:(i+1)*width]
				for j := range width {
					predRows[i][j] = int(preds[i*width+j])
				}
			}
			e := metrics.NewEntities(tags, metrics.Conlleval)
			if err := e.AddIDs(predRows, labelRows, g.Real); err != nil {
				return nil, fmt.Errorf("trainer: %s: %w", task, err)
			}
			out := e.Values()
			delete(out, "count")
			delete(out, "tokens")
			sums, err := g.Floats(1)
			if err != nil {
				return nil, err
			}
			counts, err := g.Floats(2)
			if err != nil {
				return nil, err
			}
			var total, tokens float64
			for i := range n {
				if g.Real[i] {
					total, tokens = total+sums[i], tokens+counts[i]
				}
			}
			if tokens == 0 {
				return nil, fmt.Errorf("trainer: %s: the evaluation set has no counted token (every label -100)", task)
			}
			out["loss"] = total / tokens
			return out, nil
		},
		MetricNames: []string{"precision", "recall", "f1", "accuracy", "macro_precision", "macro_recall", "macro_f1", "loss"},
	}
}

// shapeOf is n's shape for a message, "none" for nil.
func shapeOf(n *Node) any {
	if n == nil {
		return "none"
	}
	return n.Shape()
}
