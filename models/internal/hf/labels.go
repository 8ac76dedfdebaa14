package hf

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ParseLabels reads a config.json's id2label (class ids "0" to "n-1" as keys) and label2id,
// as encoding/json decodes them into map[string]any, into class names by class id, checking
// one against the other. transformers' default names LABEL_0, LABEL_1, ... are no names
// (nil).
func ParseLabels(id2label, label2id map[string]any) ([]string, error) {
	if len(id2label) == 0 {
		return nil, nil
	}
	labels := make([]string, len(id2label))
	for k, v := range id2label {
		id, err := strconv.Atoi(k)
		if err != nil || id < 0 || id >= len(labels) {
			return nil, fmt.Errorf("id2label has the key %q: want the class ids 0 to %d", k, len(labels)-1)
		}
		name, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("id2label[%q] is %v: want a string", k, v)
		}
		labels[id] = name
	}
	for _, name := range slices.Sorted(maps.Keys(label2id)) { // the first bad name in sorted order: one message for one file
		v := label2id[name]
		id, ok := v.(float64)
		if !ok || id != float64(int(id)) || int(id) < 0 || int(id) >= len(labels) || labels[int(id)] != name {
			return nil, fmt.Errorf("label2id[%q] is %v, but id2label names the classes %q", name, v, labels)
		}
	}
	if len(label2id) > 0 && len(label2id) != len(labels) {
		return nil, fmt.Errorf("label2id has %d entries, id2label %d", len(label2id), len(labels))
	}
	for i, l := range labels {
		if l != defaultLabel(i) {
			return labels, nil
		}
	}
	return nil, nil
}

// defaultLabel is transformers' name of class i when a config names none.
func defaultLabel(i int) string { return "LABEL_" + strconv.Itoa(i) }

// LabelName is the name of class i: labels[i], or transformers' default LABEL_i when labels
// is empty.
func LabelName(labels []string, i int) string {
	if len(labels) > 0 {
		return labels[i]
	}
	return defaultLabel(i)
}

// ValidateLabels checks class names (a Config's Labels: none, or numLabels distinct names).
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

// singleLabel is transformers' problem_type of a softmax classifier trained with
// cross-entropy, the default of a sequence classifier.
const singleLabel = "single_label_classification"

// problemTypes are the problem_type values transformers' sequence classifiers know.
var problemTypes = []string{singleLabel, "multi_label_classification", "regression"}

// ValidateProblemType refuses a problem_type transformers does not know (empty is
// single-label classification).
func ValidateProblemType(p string) error {
	if p != "" && !slices.Contains(problemTypes, p) {
		return fmt.Errorf("problem_type %q: want %s (or none: %s)", p, strings.Join(problemTypes, ", "), singleLabel)
	}
	return nil
}

// ProblemTypeOrDefault is p, or single_label_classification when p is empty: what
// config.json says.
func ProblemTypeOrDefault(p string) string {
	if p == "" {
		return singleLabel
	}
	return p
}

// HeadProblemType is the problem_type config.json says for a head: p, or
// single_label_classification when p is empty, for a sequence classifier; p for a token
// classifier, where empty leaves the key out (transformers' token classifiers have none:
// their loss is always cross-entropy per token).
func HeadProblemType(h Head, p string) string {
	if h == TokenClassification {
		return p
	}
	return ProblemTypeOrDefault(p)
}
