package bert

import (
	"fmt"
	"slices"
)

// The functions below are the parts of this package's handling of Hugging Face folders that
// the other model packages (models/modernbert) share, so that every family reads labels and
// words its errors the same way.

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
