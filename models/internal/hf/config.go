package hf

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// PyFloat is a float64 that JSON writes as Python reads a float, with a decimal point or an
// exponent: 2 is written 2.0. transformers 5's configurations are strict dataclasses, which
// refuse an int where a float is declared.
type PyFloat float64

// MarshalJSON writes f with a decimal point or an exponent.
func (f PyFloat) MarshalJSON() ([]byte, error) {
	out, err := json.Marshal(float64(f))
	if err == nil && !strings.ContainsAny(string(out), ".eE") {
		out = append(out, ".0"...)
	}
	return out, err
}

// LoadConfig reads the config.json file at path and parses it with the family's parse
// (its ParseConfig, which names path in its errors); family prefixes the error of a file that
// cannot be read.
func LoadConfig[C any](family, path string, parse func(contents []byte, name string) (C, error)) (C, error) {
	contents, err := os.ReadFile(path)
	if err != nil {
		var zero C
		return zero, fmt.Errorf("%s: reading model config: %w", family, err)
	}
	return parse(contents, path)
}

// TaskKeys are the config.json keys of the task a classifier is for, which every family reads
// the same way: embed them in the struct a ParseConfig decodes the file's keys into.
type TaskKeys struct {
	// ModelType is model_type, the family.
	ModelType string `json:"model_type"`
	// Architectures are the classes that wrote the checkpoint (HeadOf reads the head).
	Architectures []string `json:"architectures"`
	// NumLabels is num_labels, nil when the file has none.
	NumLabels *int `json:"num_labels"`
	// ProblemType is problem_type, nil when the file has none.
	ProblemType *string `json:"problem_type"`
	// ID2Label is id2label as encoding/json decodes it (see ParseLabels).
	ID2Label map[string]any `json:"id2label"`
	// Label2ID is label2id as encoding/json decodes it.
	Label2ID map[string]any `json:"label2id"`
}

// Task is what config.json says of a classifier's task.
type Task struct {
	// NumLabels is the number of classes.
	NumLabels int
	// Labels names the classes by class id (id2label), nil when it names none.
	Labels []string
	// ProblemType is problem_type (see ValidateProblemType), empty when the file has none.
	ProblemType string
	// Head is the head architectures names (SequenceClassification when it names none).
	Head Head
}

// Task reads the task from the keys: numLabels is num_labels as the family decoded it (its
// default when the file has none), which falls back to the size of id2label when the file
// has no num_labels; id2label's names are dropped when num_labels gives another count, as
// transformers drops them.
func (k TaskKeys) Task(numLabels int) (Task, error) {
	labels, err := ParseLabels(k.ID2Label, k.Label2ID)
	if err != nil {
		return Task{}, err
	}
	t := Task{NumLabels: numLabels, Labels: labels}
	if k.NumLabels == nil && len(k.ID2Label) > 0 {
		t.NumLabels = len(k.ID2Label)
	}
	if t.NumLabels != len(t.Labels) { // an explicit num_labels wins, as in transformers, and the names go
		t.Labels = nil
	}
	if k.ProblemType != nil {
		t.ProblemType = *k.ProblemType
	}
	t.Head, _ = HeadOf(k.Architectures)
	return t, nil
}

// TaskJSON is what config.json says of the task besides num_labels: embed it in the struct a
// family's JSON writes.
type TaskJSON struct {
	// ID2Label names every class, transformers' LABEL_i where Labels names none.
	ID2Label map[string]string `json:"id2label"`
	// Label2ID is ID2Label's inverse.
	Label2ID map[string]int `json:"label2id"`
	// ProblemType is HeadProblemType's (left out when empty).
	ProblemType string `json:"problem_type,omitempty"`
}

// JSON returns the task's id2label, label2id and problem_type (HeadProblemType) as
// config.json writes them.
func (t Task) JSON() TaskJSON {
	out := TaskJSON{ID2Label: map[string]string{}, Label2ID: map[string]int{}, ProblemType: HeadProblemType(t.Head, t.ProblemType)}
	for i := range t.NumLabels {
		out.ID2Label[strconv.Itoa(i)] = LabelName(t.Labels, i)
		out.Label2ID[LabelName(t.Labels, i)] = i
	}
	return out
}
