package bert

import (
	"github.com/goaccel/goaccel/models/internal/hf"
)

// The names below are models/internal/hf's, which every family shares (config.json's task
// keys, heads, problem types); this package's API keeps them, as a BERT classifier's Config
// has a Head and Labels.

// Head is the task a classifier's head is built for (Config.Head): what Logits returns and
// which tensors the head has. Its zero value is SequenceClassification. A Config's
// architectures names it (BertForSequenceClassification, BertForTokenClassification, ...);
// LoadOptions.Head chooses it when a folder is loaded.
type Head = hf.Head

const (
	// SequenceClassification is transformers' *ForSequenceClassification: one vector of
	// logits per sequence, [batch, num_labels], from the family's pooled head.
	SequenceClassification = hf.SequenceClassification
	// TokenClassification is transformers' *ForTokenClassification: one vector of logits per
	// token, [batch, seq_len, num_labels], from a linear classifier on each token's last
	// hidden state.
	TokenClassification = hf.TokenClassification
)

// TensorSpec names one tensor of the model in Hugging Face layout: its name
// ("bert.encoder.layer.0.output.dense.weight") and PyTorch shape ([out, in] for dense
// weights).
type TensorSpec = hf.TensorSpec

// AdapterDir is the subfolder of a SavePretrained folder that holds a LoRA classifier's
// adapter, as PEFT's files.
const AdapterDir = hf.AdapterDir

// PyFloat is a float64 that JSON writes as Python reads a float (2 is written 2.0), as
// transformers 5's strict configuration dataclasses want.
//
// Deprecated: the families of this module share it from an internal package; it stays for
// existing users. Nothing replaces it: it is a float64 whose MarshalJSON adds ".0".
type PyFloat = hf.PyFloat

// ParseLabels reads a config.json's id2label and label2id, as encoding/json decodes them,
// into class names by class id (see Config.Labels).
//
// Deprecated: auto.Inspect reads a folder's class names (Info.Labels), and a loaded model
// gives them (auto.Model.Labels).
func ParseLabels(id2label, label2id map[string]any) ([]string, error) {
	return hf.ParseLabels(id2label, label2id)
}

// ValidateLabels checks class names (Config.Labels: none, or numLabels distinct names).
//
// Deprecated: auto.Load checks Options.Labels, and Config.Validate a Config's.
func ValidateLabels(labels []string, numLabels int) error {
	return hf.ValidateLabels(labels, numLabels)
}

// ValidateProblemType refuses a problem_type transformers does not know (empty is
// single-label classification).
//
// Deprecated: auto.Load checks Options.ProblemType.
func ValidateProblemType(p string) error { return hf.ValidateProblemType(p) }

// ProblemTypeOrDefault is p, or single_label_classification when p is empty: what
// config.json says.
//
// Deprecated: auto.Model.ProblemType gives a loaded model's with the default applied.
func ProblemTypeOrDefault(p string) string { return hf.ProblemTypeOrDefault(p) }

// LabelName is the name of class i: labels[i], or transformers' default LABEL_i when labels
// is empty (as config.json's id2label writes Config.Labels).
func LabelName(labels []string, i int) string { return hf.LabelName(labels, i) }
