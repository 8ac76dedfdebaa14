package accelerator

import (
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// CrossEntropy is the classification loss most step functions want: softmax cross-entropy
// of logits [B, C] against integer labels [B], averaged over the real examples of the batch
// (mask [B] bool; nil counts every row). Padding rows contribute nothing, so the value is the
// mean over the real examples of the whole global batch, whatever the device count.
//
//	l := accelerator.CrossEntropy(logits, b.Labels, b.Mask)
func CrossEntropy(logits, labels, mask *Node) *Node {
	if logits.Rank() != 2 || labels.Rank() != 1 || labels.Shape().Dimensions[0] != logits.Shape().Dimensions[0] {
		exceptions.Panicf("accelerator: CrossEntropy: want logits [B, C] and labels [B], got %s and %s", logits.Shape(), labels.Shape())
	}
	return MaskedMean(PerExampleCrossEntropy(logits, labels), mask)
}

// PerExampleCrossEntropy is the softmax cross-entropy of each example: logits [B, C] and integer
// labels [B] give [B] losses (no reduction), for evaluation functions that gather per-example
// losses.
func PerExampleCrossEntropy(logits, labels *Node) *Node {
	if logits.Rank() != 2 || labels.Rank() != 1 || labels.Shape().Dimensions[0] != logits.Shape().Dimensions[0] {
		exceptions.Panicf("accelerator: PerExampleCrossEntropy: want logits [B, C] and labels [B], got %s and %s", logits.Shape(), labels.Shape())
	}
	numClasses := logits.Shape().Dimensions[1]
	requireLabelRange(labels, numClasses)
	if dt := logits.DType(); dt == dtypes.BFloat16 || dt == dtypes.Float16 {
		// Mixed precision: the log-softmax's exponentials and sum, and the loss, in float32
		// (16-bit floats lose the small probabilities and the mean).
		logits = ConvertDType(logits, dtypes.Float32)
	}
	return Neg(ReduceSum(Mul(OneHot(labels, numClasses, logits.DType()), LogSoftmax(logits, -1)), -1))
}

// MaskedMean averages per-example values [B] over the rows where mask is true (all rows when
// mask is nil). An all-false mask gives 0 rather than NaN.
func MaskedMean(values, mask *Node) *Node {
	if mask == nil {
		return ReduceAllMean(values)
	}
	weights := ConvertDType(mask, values.DType())
	total := ReduceAllSum(Mul(values, weights))
	count := Max(ReduceAllSum(weights), OnesLike(ReduceAllSum(weights)))
	return Div(total, count)
}
