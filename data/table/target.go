package table

import (
	"math"
	"strconv"
	"strings"
)

// Problem is what a label column holds, named as Hugging Face's problem_type.
type Problem string

// The problems a Table reads.
const (
	// SingleLabel: one class per example (text.Labeled.Label).
	SingleLabel Problem = "single_label_classification"
	// MultiLabel: a set of classes per example, as 0/1 flags over the label map
	// (text.Labeled.Values, one per class).
	MultiLabel Problem = "multi_label_classification"
	// Regression: a number per example (text.Labeled.Values, one value).
	Regression Problem = "regression"
)

// Problem is the table's problem: Spec.Problem, or the one Open chose from the labels.
func (t *Table) Problem() Problem { return t.problem }

// detection is what Open's pass over the label column saw, to choose the problem.
type detection struct {
	rows                int
	lists, floats       int // JSON arrays; floats (JSON numbers with a fraction, Parquet floats)
	numeric, fractional int // labels that parse as numbers; of those, written as floats ("1.0", "2e-3")
}

// add records label v of a row and returns the class names it brings to the label map (none
// for regression), checking what can be checked before the problem is known.
func (d *detection) add(spec Spec, path string, w where, v value) ([]string, error) {
	d.rows++
	col := spec.LabelColumn
	switch {
	case v.kind == kindList:
		d.lists++
		return listNames(path, w, col, v)
	case spec.LabelDelimiter != "" || spec.Problem == MultiLabel:
		return splitNames(spec, path, w, v)
	case v.kind == kindFloat:
		d.floats++
	}
	if _, err := strconv.ParseFloat(strings.TrimSpace(v.text), 64); err == nil && (v.kind == kindString || v.kind == kindInt || v.kind == kindFloat) {
		d.numeric++
		if v.kind == kindFloat || strings.ContainsAny(v.text, ".eE") { // "1.0" is a float to pandas and to datasets
			d.fractional++
		}
	}
	if spec.Problem == Regression || (spec.Problem == "" && v.kind == kindFloat) {
		return nil, nil
	}
	name, err := labelText(path, w, col, v)
	if err != nil {
		return nil, err
	}
	return []string{name}, nil
}

// problem chooses the problem as run_classification.py does from a data set's label
// feature: Spec.Problem when set; a delimiter or lists: multi-label; floats (a float
// column, or every label a number and some written as floats: "0.5", "1.0", "2e-3", which
// pandas and datasets read as float64): regression; else single-label.
func (d *detection) problem(spec Spec) Problem {
	switch {
	case spec.Problem != "":
		return spec.Problem
	case spec.LabelDelimiter != "" || d.lists > 0:
		return MultiLabel
	case d.floats > 0 || (d.numeric == d.rows && d.fractional > 0):
		return Regression
	}
	return SingleLabel
}

// listNames are the class names of a list label (a JSON array of strings, integers or
// booleans), at least one, each once.
func listNames(path string, w where, col string, v value) ([]string, error) {
	if len(v.items) == 0 {
		return nil, rowError(path, w, col, "an empty label list: a multi-label example needs at least one class")
	}
	names := make([]string, len(v.items))
	for i, item := range v.items {
		name, err := labelText(path, w, col, item)
		if err != nil {
			return nil, err
		}
		names[i] = name
	}
	return names, checkDistinct(path, w, col, names)
}

// splitNames are the class names of a string label joined by Spec.LabelDelimiter (a list
// label when the file has lists).
func splitNames(spec Spec, path string, w where, v value) ([]string, error) {
	col := spec.LabelColumn
	if v.kind == kindList {
		return listNames(path, w, col, v)
	}
	text, err := labelText(path, w, col, v)
	if err != nil {
		return nil, err
	}
	if spec.LabelDelimiter == "" {
		return nil, rowError(path, w, col, "label %q is not a list: for multi-label classification give a list "+
			"(JSON Lines) or the delimiter that joins the classes (Spec.LabelDelimiter)", text)
	}
	names := strings.Split(text, spec.LabelDelimiter)
	for i, n := range names {
		if names[i] = strings.TrimSpace(n); names[i] == "" {
			return nil, rowError(path, w, col, "label %q has an empty class name (split on %q)", text, spec.LabelDelimiter)
		}
	}
	return names, checkDistinct(path, w, col, names)
}

// checkDistinct refuses a class named twice in one label.
func checkDistinct(path string, w where, col string, names []string) error {
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if seen[n] {
			return rowError(path, w, col, "class %q is named twice in the label", n)
		}
		seen[n] = true
	}
	return nil
}

// target reads cell v as the row's label: the class id (single-label), or the values (the
// multi-label flags over the label map, or the regression value).
func (t *Table) target(path string, w where, v value) (label int, values []float32, err error) {
	col := t.spec.LabelColumn
	switch t.problem {
	case Regression:
		if v.kind == kindNull {
			return 0, nil, rowError(path, w, col, "the regression target is null")
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v.text), 64)
		if err != nil || v.kind == kindBool || v.kind == kindList || v.kind == kindOther || v.kind == kindImage {
			return 0, nil, rowError(path, w, col, "regression target %s is not a number", strconv.Quote(v.text))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxFloat32 {
			return 0, nil, rowError(path, w, col, "regression target %s is not a finite float32", v.text)
		}
		return 0, []float32{float32(f)}, nil
	case MultiLabel:
		names, err := splitNames(t.spec, path, w, v)
		if err != nil {
			return 0, nil, err
		}
		values = make([]float32, t.labels.Len())
		for _, n := range names {
			id, ok := t.labels.ID(n)
			if !ok {
				return 0, nil, rowError(path, w, col, "class %q is not in the label map (%s)", n, t.labels)
			}
			values[id] = 1
		}
		return 0, values, nil
	}
	name, err := labelText(path, w, col, v)
	if err != nil {
		return 0, nil, err
	}
	id, ok := t.labels.ID(name)
	if !ok {
		return 0, nil, rowError(path, w, col, "label %q is not in the label map (%s)", name, t.labels)
	}
	return id, nil, nil
}
