package hf

import (
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Activations lists the activation names (config.json's hidden_act, hidden_activation,
// pooler_hidden_act...) that Activate computes, with transformers' meaning: "gelu" is the
// exact (erf) GELU, "gelu_new" and "gelu_pytorch_tanh" its tanh approximation, "silu" and
// "swish" x·sigmoid(x).
func Activations() []string {
	return []string{"gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "silu", "swish", "tanh"}
}

// Activate applies the activation named (one of Activations) to x; another name panics
// (a Config's Validate refuses it first).
func Activate(name string, x *Node) *Node {
	switch name {
	case "gelu":
		return activation.Gelu(x)
	case "gelu_new", "gelu_pytorch_tanh":
		return activation.GeluApproximate(x)
	case "relu":
		return activation.Relu(x)
	case "silu", "swish":
		return activation.Swish(x)
	case "tanh":
		return Tanh(x)
	}
	exceptions.Panicf("activation %q is not supported (the Config's Validate refuses it; was the Config changed after?)", name)
	return nil
}
