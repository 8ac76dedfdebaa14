package bert

import (
	"fmt"
	"slices"
	"strings"

	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/support/exceptions"
)

// The functions below are the parts of this package's handling of Hugging Face folders and
// layers that the other model packages (models/modernbert, models/deberta) share, so that
// every family reads labels, lists tensors, names variables and words its errors the same
// way.

// ParseLabels reads a config.json's id2label (class ids "0" to "n-1" as keys) and label2id,
// as encoding/json decodes them into map[string]any, into class names by class id, checking
// one against the other. transformers' default names LABEL_0, LABEL_1, ... are no names
// (nil), as in Config.Labels.
func ParseLabels(id2label, label2id map[string]any) ([]string, error) {
	return parseLabels(id2label, label2id)
}

// LabelName is the name of class i: labels[i], or transformers' default LABEL_i when labels
// is empty.
func LabelName(labels []string, i int) string {
	if len(labels) > 0 {
		return labels[i]
	}
	return defaultLabel(i)
}

// ValidateLabels checks class names (Config.Labels: none, or numLabels distinct names).
func ValidateLabels(labels []string, numLabels int) error {
	if len(labels) > 0 && len(labels) != numLabels {
		return fmt.Errorf("id2label names %d classes (%q) but num_labels is %d", len(labels), labels, numLabels)
	}
	for i, l := range labels {
		if j := slices.Index(labels, l); j != i {
			return fmt.Errorf("id2label names classes %d and %d both %q: label2id would be ambiguous", j, i, l)
		}
	}
	return nil
}

// ListNames joins names for an error message, the first eight and a count of the others.
func ListNames(names []string) string { return listNames(names) }

// TensorList collects the tensors of a model in Hugging Face layout, as the families'
// EncoderTensors and the like list them.
type TensorList []TensorSpec

// Add appends the tensor name of shape dims.
func (l *TensorList) Add(name string, dims ...int) { *l = append(*l, TensorSpec{name, dims}) }

// Linear appends a torch.nn.Linear's weight [out, in] and, with bias, its bias [out].
func (l *TensorList) Linear(name string, out, in int, bias bool) {
	l.Add(name+".weight", out, in)
	if bias {
		l.Add(name+".bias", out)
	}
}

// Norm appends a LayerNorm's weight [width] and, with bias, its bias.
func (l *TensorList) Norm(name string, width int, bias bool) {
	l.Add(name+".weight", width)
	if bias {
		l.Add(name+".bias", width)
	}
}

// DottedVarPath is the model.Store variable path (with a leading "/") of a HF tensor name
// whose dots become scope separators: "model.final_norm.weight" -> "/model/final_norm/weight"
// (the naming of models/modernbert and models/deberta).
func DottedVarPath(hfName string) string { return "/" + strings.ReplaceAll(hfName, ".", "/") }

// DottedHFName is the inverse of DottedVarPath, with or without the leading "/".
func DottedHFName(varPath string) string {
	return strings.ReplaceAll(strings.TrimPrefix(varPath, "/"), "/", ".")
}

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
