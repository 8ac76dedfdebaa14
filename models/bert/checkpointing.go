package bert

import (
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
)

// Activation checkpointing (Config.GradientCheckpointing) uses GoMLX's own facility:
// Node.Checkpoint marks a layer's input as kept for the backward pass and everything computed
// from it as to be recomputed there; Node.StopCheckpoint after the last layer keeps the
// pooler and the head out of the recompute. graph.Gradient then clones each layer's forward
// ops when their gradient is due, after a scheduling dependency on the arriving gradient, so
// XLA can neither run the copy early nor merge it with the forward ops (see docs/memory.md).

// checkpointInput marks x, the input of an encoder layer, as a checkpoint when on.
func checkpointInput(x *Node, on bool) *Node {
	if !on {
		return x
	}
	return x.Checkpoint()
}

// checkpointOutput ends the checkpointed blocks at the encoder's last hidden state when on.
func checkpointOutput(x *Node, on bool) *Node {
	if !on {
		return x
	}
	return x.StopCheckpoint()
}
