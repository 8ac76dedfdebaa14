// Package remat is the model families' activation checkpointing (their
// Config.GradientCheckpointing): each encoder layer recomputed in the backward pass from its
// input, dropout's random bits with it. See Begin.
package remat

import (
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/ml/model"
)

// Activation checkpointing uses GoMLX's own facility:
// Node.Checkpoint marks a layer's input as kept for the backward pass and everything computed
// from it as to be recomputed there; Node.StopCheckpoint after the last layer keeps the
// pooler and the head out of the recompute. graph.Gradient then clones each layer's forward
// ops when their gradient is due, after a scheduling dependency on the arriving gradient, so
// XLA can neither run the copy early nor merge it with the forward ops (see docs/remat.md).
//
// The Store's random state is tied to each layer's checkpoint, so that dropout's random bits
// are recomputed too instead of kept.

// Begin marks x, the input of an encoder layer, as a checkpoint when on, and ties the
// Store's random state to it when the layers draw dropout (dropout).
func Begin(store *model.Store, dropout bool, x *Node, on bool) *Node {
	if !on {
		return x
	}
	x = x.Checkpoint()
	if state := rngState(store, dropout); state != nil {
		// The state is a checkpoint too (the recompute of this layer's draws stops there, not
		// at the first layer), plus 0·x[0, …, 0]: the same state while x is finite, but
		// computed from x's checkpoint. A bare Checkpoint of the state would not do: XLA folds
		// the integer 0 × gradient of the recompute's scheduling dependency and merges the
		// copied draws with the forward ones (docs/remat.md).
		first := Reshape(Slice(x, AxisRange(0, 1), AxisRange(0, 1), AxisRange(0, 1)))
		checkpointed := state.NodeValue(x.Graph()).Checkpoint()
		zero := ConvertDType(MulScalar(ConvertDType(first, dtypes.Float32), 0), checkpointed.DType())
		state.SetNodeValue(Add(checkpointed, zero))
	}
	return x
}

// End ends the checkpointed blocks at the encoder's last hidden state x when on, and
// releases the random state from them (dropout as for Begin).
func End(store *model.Store, dropout bool, x *Node, on bool) *Node {
	if !on {
		return x
	}
	if state := rngState(store, dropout); state != nil {
		state.SetNodeValue(state.NodeValue(x.Graph()).StopCheckpoint())
	}
	return x.StopCheckpoint()
}

// rngState is the Store's random state variable when the layers draw dropout from it, else nil.
func rngState(store *model.Store, dropout bool) *model.Variable {
	if !dropout {
		return nil
	}
	return RandomState(store)
}

// RandomState is the Store's random state variable (model.RNGStateVariableName) when it has a
// value, else nil.
func RandomState(store *model.Store) *model.Variable {
	if v := store.GetVariable(model.JoinPath("/", model.RNGStateVariableName)); v != nil && v.HasValue() {
		return v
	}
	return nil
}
