package table

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// DefaultMaxRowBytes is the longest CSV record or JSON Lines line that a pass accepts unless
// Spec.MaxRowBytes says otherwise.
const DefaultMaxRowBytes = 16 << 20

// MaxLabels is the most distinct labels a label map may have: more means that the label column
// holds text or identifiers, and the map would grow with the file.
const MaxLabels = 10_000

// Spec says which columns of a table make an example: the input (text columns for Open, an
// image column for OpenImages) and the label.
type Spec struct {
	// TextColumns are the columns whose texts, joined with TextDelimiter, make the example's
	// text (several for sentence pairs). At least one for Open; none for OpenImages.
	TextColumns []string
	// ImageColumn is the column of images for OpenImages (see Images for the cells it reads:
	// Hugging Face's Image feature, or a path). Empty for Open.
	ImageColumn string
	// LabelColumn is the column of the class label. Required.
	LabelColumn string
	// TextDelimiter joins the texts of several TextColumns; empty means a space, the default
	// of run_classification.py's --text_column_delimiter.
	TextDelimiter string
	// Comma is the field delimiter of CSV files; 0 means a tab for .tsv files and a comma for
	// the others.
	Comma rune
	// Labels is the label map; nil means the one built from the files' labels (see the
	// package doc). Validation files take the training files' map (Table.Labels).
	Labels *Labels
	// Problem is what the label column holds (Hugging Face's problem_type): one class
	// (SingleLabel), a set of classes (MultiLabel) or a number (Regression). Empty: chosen
	// from the training files' labels as run_classification.py chooses (see the package
	// doc); Table.Problem says which.
	Problem Problem
	// LabelDelimiter splits a string label into the names of its classes ("news|sport"):
	// multi-label classification. Empty: lists (JSON Lines arrays) are the multi-label form.
	LabelDelimiter string
	// MaxRowBytes bounds a CSV record or JSON Lines line (0: DefaultMaxRowBytes), so that a
	// quote left open does not read the rest of the file into memory.
	MaxRowBytes int
}

func (s Spec) delimiter() string {
	if s.TextDelimiter == "" {
		return " "
	}
	return s.TextDelimiter
}

func (s Spec) maxRowBytes() int {
	if s.MaxRowBytes <= 0 {
		return DefaultMaxRowBytes
	}
	return s.MaxRowBytes
}

// columns are the columns read, in the order a source returns their values: the input
// columns (the text columns, or the image column), then the label column.
func (s Spec) columns() []string {
	if s.ImageColumn != "" {
		return []string{s.ImageColumn, s.LabelColumn}
	}
	return append(slices.Clone(s.TextColumns), s.LabelColumn)
}

// validate checks spec for Open (images false) or OpenImages (images true).
func (s Spec) validate(images bool) error {
	switch {
	case images && s.ImageColumn == "":
		return fmt.Errorf("table: OpenImages: no image column named (Spec.ImageColumn)")
	case images && len(s.TextColumns) > 0:
		return fmt.Errorf("table: OpenImages: Spec.TextColumns %q are set: an image table's input is its Spec.ImageColumn %q only", s.TextColumns, s.ImageColumn)
	case !images && s.ImageColumn != "":
		return fmt.Errorf("table: Open reads text columns, but Spec.ImageColumn is %q: use OpenImages for a table of images", s.ImageColumn)
	case !images && len(s.TextColumns) == 0:
		return fmt.Errorf("table: no text column named (Spec.TextColumns)")
	}
	for _, c := range s.TextColumns {
		if c == "" {
			return fmt.Errorf("table: an empty text column name in %q", s.TextColumns)
		}
	}
	if s.LabelColumn == "" {
		return fmt.Errorf("table: no label column named (Spec.LabelColumn)")
	}
	switch s.Problem {
	case "", SingleLabel, MultiLabel, Regression:
	default:
		return fmt.Errorf("table: Spec.Problem %q: want %q, %q or %q (or empty: from the labels)", s.Problem,
			SingleLabel, MultiLabel, Regression)
	}
	if s.LabelDelimiter != "" && s.Problem != "" && s.Problem != MultiLabel {
		return fmt.Errorf("table: Spec.LabelDelimiter %q splits labels into several classes, but Spec.Problem is %q",
			s.LabelDelimiter, s.Problem)
	}
	if s.Problem == Regression && s.Labels != nil {
		return fmt.Errorf("table: Spec.Labels is a label map, but Spec.Problem is %q (no classes)", Regression)
	}
	return nil
}

// Format is a file format that Open reads.
type Format int

const (
	// CSV is comma- (or Spec.Comma-) separated values with a header row: .csv, and .tsv with tabs.
	CSV Format = iota + 1
	// JSONLines is one JSON object per line: .jsonl, .json.
	JSONLines
	// Parquet is Apache Parquet: .parquet.
	Parquet
)

// String names the format.
func (f Format) String() string {
	switch f {
	case CSV:
		return "CSV"
	case JSONLines:
		return "JSON Lines"
	case Parquet:
		return "Parquet"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// FormatOf picks a file's format from its extension (case-insensitive): .csv and .tsv are
// CSV, .json and .jsonl JSON Lines, .parquet Parquet. Any other is an error listing these.
func FormatOf(path string) (Format, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv", ".tsv":
		return CSV, nil
	case ".json", ".jsonl":
		return JSONLines, nil
	case ".parquet":
		return Parquet, nil
	}
	return 0, fmt.Errorf("table: %s: unknown extension %q: want .csv, .tsv, .json, .jsonl or .parquet",
		path, filepath.Ext(path))
}

// Glob expands a comma-separated list of paths and glob patterns (filepath.Match syntax, such
// as data/train-*.parquet for a data set's shards) into files, each pattern's matches in
// sorted order. A pattern that matches nothing, or an empty list, is an error naming it.
func Glob(list string) ([]string, error) {
	var files []string
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("table: %q: an empty path in the list", list)
		}
		if !strings.ContainsAny(p, "*?[") {
			files = append(files, p)
			continue
		}
		m, err := filepath.Glob(p)
		if err != nil {
			return nil, fmt.Errorf("table: pattern %q: %w", p, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("table: pattern %q matches no file", p)
		}
		files = append(files, m...) // sorted by filepath.Glob
	}
	return files, nil
}
