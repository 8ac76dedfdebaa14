package table

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data/text"
)

// TestProblemFromTheLabels: as run_classification.py chooses from a data set's label
// feature, a float label column is regression, a list column (or a delimiter) multi-label,
// anything else single-label; the examples carry the value, the 0/1 flags over the sorted
// label map, or the class.
func TestProblemFromTheLabels(t *testing.T) {
	dir := t.TempDir()
	spec := Spec{TextColumns: []string{"text"}, LabelColumn: "label"}
	cases := []struct {
		name    string
		spec    Spec
		file    string
		problem Problem
		labels  []string
		want    []text.Labeled
	}{
		{"CSV floats", spec, writeFile(t, dir, "r.csv", "text,label\na,0.5\nb,3\nc,-2e-1\n"), Regression, nil,
			[]text.Labeled{{Text: "a", Values: []float32{0.5}}, {Text: "b", Values: []float32{3}}, {Text: "c", Values: []float32{-0.2}}}},
		{"CSV 1.0 is a float", spec, writeFile(t, dir, "r1.csv", "text,label\na,1.0\nb,0\n"), Regression, nil,
			[]text.Labeled{{Text: "a", Values: []float32{1}}, {Text: "b", Values: []float32{0}}}},
		{"CSV integers", spec, writeFile(t, dir, "i.csv", "text,label\na,1\nb,0\n"), SingleLabel, []string{"0", "1"},
			[]text.Labeled{{Text: "a", Label: 1}, {Text: "b", Label: 0}}},
		{"JSON Lines floats", spec, writeFile(t, dir, "r.jsonl", `{"text": "a", "label": 4}`+"\n"+`{"text": "b", "label": 0.25}`),
			Regression, nil, []text.Labeled{{Text: "a", Values: []float32{4}}, {Text: "b", Values: []float32{0.25}}}},
		{"JSON Lines lists", spec, writeFile(t, dir, "m.jsonl", `{"text": "a", "label": ["sport", "news"]}`+"\n"+
			`{"text": "b", "label": ["arts"]}`), MultiLabel, []string{"arts", "news", "sport"},
			[]text.Labeled{{Text: "a", Values: []float32{0, 1, 1}}, {Text: "b", Values: []float32{1, 0, 0}}}},
		{"JSON Lines integer lists", spec, writeFile(t, dir, "mi.jsonl", `{"text": "a", "label": [2, 0]}`+"\n"+
			`{"text": "b", "label": [1]}`), MultiLabel, []string{"0", "1", "2"},
			[]text.Labeled{{Text: "a", Values: []float32{1, 0, 1}}, {Text: "b", Values: []float32{0, 1, 0}}}},
		{"CSV delimited", Spec{TextColumns: []string{"text"}, LabelColumn: "label", LabelDelimiter: "|"},
			writeFile(t, dir, "m.csv", "text,label\na,toxic|insult\nb, insult \n"), MultiLabel, []string{"insult", "toxic"},
			[]text.Labeled{{Text: "a", Values: []float32{1, 1}}, {Text: "b", Values: []float32{1, 0}}}},
		{"CSV integers as regression", Spec{TextColumns: []string{"text"}, LabelColumn: "label", Problem: Regression},
			writeFile(t, dir, "ir.csv", "text,label\na,1\nb,5\n"), Regression, nil,
			[]text.Labeled{{Text: "a", Values: []float32{1}}, {Text: "b", Values: []float32{5}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb, got := readAll(t, c.spec, c.file)
			if tb.Problem() != c.problem {
				t.Errorf("problem %q, want %q", tb.Problem(), c.problem)
			}
			if c.labels == nil && tb.Labels() != nil || c.labels != nil && !slices.Equal(tb.Labels().Names(), c.labels) {
				t.Errorf("label map %v, want %q", tb.Labels(), c.labels)
			}
			if !equalExamples(got, c.want) {
				t.Errorf("examples %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestParquetMultiLabel: a Parquet list column is multi-label, read over row groups; an
// empty list is named by row group and row.
func TestParquetMultiLabel(t *testing.T) {
	dir := t.TempDir()
	path := writeRows(t, dir, "tags.parquet", []tagRow{{"p", []string{"b", "a"}, 0}, {"q", []string{"c"}, 0}, {"r", []string{"a"}, 0}}, 2)
	tb, got := readAll(t, Spec{TextColumns: []string{"premise"}, LabelColumn: "tags"}, path)
	want := []text.Labeled{{Text: "p", Values: []float32{1, 1, 0}}, {Text: "q", Values: []float32{0, 0, 1}}, {Text: "r", Values: []float32{1, 0, 0}}}
	if tb.Problem() != MultiLabel || !slices.Equal(tb.Labels().Names(), []string{"a", "b", "c"}) || !equalExamples(got, want) {
		t.Errorf("%s, %v, %+v; want multi-label a, b, c, %+v", tb.Problem(), tb.Labels(), got, want)
	}
	empty := writeRows(t, dir, "empty.parquet", []tagRow{{"p", []string{"a"}, 0}, {"q", nil, 0}})
	if _, _, err := Load(empty, Spec{TextColumns: []string{"premise"}, LabelColumn: "tags"}); err == nil ||
		!strings.Contains(err.Error(), `empty.parquet: row group 0, row 2, column "tags": an empty label list`) {
		t.Errorf("an empty list: %v", err)
	}
	if _, _, err := Load(path, Spec{TextColumns: []string{"tags"}, LabelColumn: "premise"}); err == nil ||
		!strings.Contains(err.Error(), `column "tags": ["b", "a"] is not a text`) {
		t.Errorf("a list as the text: %v", err)
	}
}

// TestParquetRegression: a Parquet double column is regression, read as float32 values.
func TestParquetRegression(t *testing.T) {
	path := writeRows(t, t.TempDir(), "scores.parquet", []tagRow{{"p", []string{"a"}, 0.5}, {"q", []string{"b"}, -1.25}})
	tb, got := readAll(t, Spec{TextColumns: []string{"premise"}, LabelColumn: "score"}, path)
	want := []text.Labeled{{Text: "p", Values: []float32{0.5}}, {Text: "q", Values: []float32{-1.25}}}
	if tb.Problem() != Regression || !equalExamples(got, want) {
		t.Errorf("%s, examples %+v; want regression, %+v", tb.Problem(), got, want)
	}
}

// TestValidationTakesTheTrainingMap: validation files read with the training files' map and
// problem; a class the map lacks is an error naming file, row and column.
func TestValidationTakesTheTrainingMap(t *testing.T) {
	dir := t.TempDir()
	train, _ := readAll(t, Spec{TextColumns: []string{"text"}, LabelColumn: "label"},
		writeFile(t, dir, "train.jsonl", `{"text": "a", "label": ["x", "y"]}`))
	spec := Spec{TextColumns: []string{"text"}, LabelColumn: "label", Labels: train.Labels(), Problem: train.Problem()}
	valid, got := readAll(t, spec, writeFile(t, dir, "valid.jsonl", `{"text": "b", "label": ["y"]}`))
	if valid.Problem() != MultiLabel || !reflect.DeepEqual(got[0].Values, []float32{0, 1}) {
		t.Errorf("validation: %s, %+v; want multi-label with flags [0 1]", valid.Problem(), got)
	}
	_, _, err := Load(writeFile(t, dir, "other.jsonl", `{"text": "b", "label": ["z"]}`), spec)
	if err == nil || !strings.Contains(err.Error(), `other.jsonl:1: row 1, column "label": class "z" is not in the label map`) {
		t.Errorf("a class outside the map: %v", err)
	}
}

// TestValueLabelsBadInput: each bad multi-label or regression label is an error naming the
// file, the row and the column.
func TestValueLabelsBadInput(t *testing.T) {
	dir := t.TempDir()
	spec := Spec{TextColumns: []string{"text"}, LabelColumn: "label"}
	cases := []struct {
		name string
		spec Spec
		file string
		want string
	}{
		{"empty list", spec, writeFile(t, dir, "e.jsonl", `{"text": "a", "label": ["x"]}`+"\n"+`{"text": "b", "label": []}`),
			`e.jsonl:2: row 2, column "label": an empty label list`},
		{"class twice", spec, writeFile(t, dir, "d.jsonl", `{"text": "a", "label": ["x", "x"]}`),
			`d.jsonl:1: row 1, column "label": class "x" is named twice`},
		{"list and string", spec, writeFile(t, dir, "ls.jsonl", `{"text": "a", "label": ["x"]}`+"\n"+`{"text": "b", "label": "x"}`),
			`ls.jsonl:2: row 2, column "label": label "x" is not a list`},
		{"empty class between delimiters", Spec{TextColumns: []string{"text"}, LabelColumn: "label", LabelDelimiter: ","},
			writeFile(t, dir, "ed.jsonl", `{"text": "a", "label": "x,,y"}`), `ed.jsonl:1: row 1, column "label": label "x,,y" has an empty class name`},
		{"NaN target", Spec{TextColumns: []string{"text"}, LabelColumn: "label", Problem: Regression},
			writeFile(t, dir, "n.csv", "text,label\na,0.5\nb,NaN\n"), `n.csv:3: row 2, column "label": regression target NaN is not a finite float32`},
		{"text target", Spec{TextColumns: []string{"text"}, LabelColumn: "label", Problem: Regression},
			writeFile(t, dir, "t.csv", "text,label\na,0.5\nb,good\n"), `t.csv:3: row 2, column "label": regression target "good" is not a number`},
		{"null target", spec, writeFile(t, dir, "nl.jsonl", `{"text": "a", "label": 0.5}`+"\n"+`{"text": "b", "label": null}`),
			`nl.jsonl:2: row 2, column "label": the label is null`},
		{"nested list", spec, writeFile(t, dir, "nest.jsonl", `{"text": "a", "label": [["x"]]}`),
			`nest.jsonl:1: row 1, column "label": label [["x"]] is not an integer, a string or a boolean`},
		{"delimiter with regression", Spec{TextColumns: []string{"text"}, LabelColumn: "label", LabelDelimiter: ",", Problem: Regression},
			writeFile(t, dir, "dr.csv", "text,label\na,1\n"), `Spec.LabelDelimiter "," splits labels into several classes, but Spec.Problem is "regression"`},
		{"unknown problem", Spec{TextColumns: []string{"text"}, LabelColumn: "label", Problem: "ranking"},
			writeFile(t, dir, "up.csv", "text,label\na,1\n"), `Spec.Problem "ranking": want`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Load(c.file, c.spec)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant one containing %q", err, c.want)
			}
		})
	}
}

// TestReadTexts: the texts of files without a label column, joined, in order; a bad cell is
// named.
func TestReadTexts(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.csv", "premise,hypothesis\nx,y\nz,w\n")
	b := writeFile(t, dir, "b.jsonl", `{"premise": "p", "hypothesis": "q", "label": 3}`)
	got, err := ReadTexts(a+","+b, Spec{TextColumns: []string{"premise", "hypothesis"}, TextDelimiter: " | "})
	if err != nil || !slices.Equal(got, []string{"x | y", "z | w", "p | q"}) {
		t.Errorf("ReadTexts = %q, %v", got, err)
	}
	bad := writeFile(t, dir, "bad.csv", "sentence\nok\n \n")
	if _, err := ReadTexts(bad, Spec{TextColumns: []string{"sentence"}}); err == nil ||
		!strings.Contains(err.Error(), `bad.csv:3: row 2, column "sentence": empty text`) {
		t.Errorf("a blank text: %v", err)
	}
	if _, err := ReadTexts(a, Spec{TextColumns: []string{"sentence"}}); err == nil || !strings.Contains(err.Error(), `no column "sentence"`) {
		t.Errorf("a missing column: %v", err)
	}
}
