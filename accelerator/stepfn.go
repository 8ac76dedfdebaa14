package accelerator

import (
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// GraphBatch is what a step function sees: the whole global batch as graph nodes. Each input has
// the batch on axis 0; under the hood that axis is sharded over the devices, each device
// holding the per-device batch that the loader assigned to it.
type GraphBatch struct {
	// Inputs are the collated model inputs, in the loader's order.
	Inputs []*Node
	// Labels are the labels ([B]), or nil when the loader has none.
	Labels *Node
	// Mask is a [B] bool node: true for real examples, false for padding. Pass it to GoMLX
	// losses as an extra label (loss.SparseCategoricalCrossEntropyLogits([]*Node{b.Labels,
	// b.Mask}, ...)) so padding never counts.
	Mask *Node
}

// StepFn builds one training step: it computes the loss of the global batch, calls
// Accelerator.Backward on it, and returns it. Job.TrainStep turns it into a TrainStep, which
// traces and compiles it once per input shape, so it must build the same computation every
// time it is called. Values captured by a closure are baked into the compiled graph: a new
// value needs a new TrainStep.
type StepFn func(s *model.Scope, b GraphBatch) *Node

// EvalFn builds one evaluation step: it returns per-example outputs, each with the batch on
// axis 0 (for example the logits [B, C], or per-example losses [B]).
type EvalFn func(s *model.Scope, b GraphBatch) []*Node
