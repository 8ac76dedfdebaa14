package table

import (
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/text"
)

// A Table is a data.Stream: data.NewStreamLoader serves it.
var _ data.Stream[text.Labeled] = (*Table)(nil)

// kind is what a cell holds.
type kind uint8

const (
	kindString kind = iota
	kindInt
	kindBool
	kindNull
	kindFloat // a number with a fraction or an exponent (JSON), a float or double (Parquet)
	kindList  // a JSON array: items holds its elements
	kindOther // an object, a nested list: not a text, not a label
	kindImage // a Parquet struct of bytes and path (Hugging Face's Image feature)
)

// value is one cell of a selected column: its text (strings as they are, integers in decimal,
// booleans as false/true; for kindOther, the value as the file writes it) and its kind.
type value struct {
	text  string
	kind  kind
	items []value // kindList's elements
	// kindImage: the struct's fields, nil when null (bytes) or empty when null (path,
	// hasPath false).
	bytes   []byte
	path    string
	hasPath bool
}

// where is a row's place in its file, for error messages.
type where struct {
	line     int // CSV, JSON Lines: the line the row starts on (0: Parquet)
	row      int // the data row, from 1
	rowGroup int // Parquet: the row group, from 0
}

func (w where) String() string {
	if w.line > 0 {
		return fmt.Sprintf("%d: row %d", w.line, w.row)
	}
	return fmt.Sprintf(" row group %d, row %d", w.rowGroup, w.row)
}

// rowError is a problem with a cell; source readers and Table.All both make them.
func rowError(path string, w where, column, format string, args ...any) error {
	return fmt.Errorf("%s:%s, column %s: %s", path, w, strconv.Quote(column), fmt.Sprintf(format, args...))
}

// source reads one file's rows: the values of the selected columns, in order. It is a pass.
type source interface {
	// next fills vals with the next row's values (len(vals) is the number of selected
	// columns) and returns where the row is; io.EOF after the last row.
	next(vals []value) (where, error)
	close() error
}

// openSource opens path in its format with the columns cols selected; a column that the file
// lacks is an error listing the ones it has.
func openSource(path string, cols []string, spec Spec) (source, error) {
	f, err := FormatOf(path)
	if err != nil {
		return nil, err
	}
	switch f {
	case CSV:
		return openCSV(path, cols, spec)
	case JSONLines:
		return openJSONLines(path, cols, spec)
	default:
		return openParquet(path, cols, spec)
	}
}

// missingColumn is the error for a column that a file lacks.
func missingColumn(path, col string, have []string) error {
	return fmt.Errorf("%s: no column %q (the file has %d: %s)", path, col, len(have), quoteAll(have))
}

// Table is a text-classification dataset read from one or more files: a data.Stream of
// text.Labeled whose passes read the files in order, a row at a time. Make it with Open.
type Table struct {
	spec    Spec
	files   []string
	labels  *Labels
	problem Problem
}

// Open returns files (at least one; formats by extension, see FormatOf; they may differ) as
// one dataset of the columns spec names. It checks that every file has the columns, and, when
// spec.Labels is nil, reads the label column of every file once to build the label map (see
// the package doc); a pass over a Parquet file then reads that column only.
func Open(spec Spec, files ...string) (*Table, error) {
	if err := spec.validate(false); err != nil {
		return nil, err
	}
	return open(spec, files)
}

// open is Open and OpenImages after their spec checks.
func open(spec Spec, files []string) (*Table, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("table: no files given")
	}
	for _, path := range files {
		src, err := openSource(path, spec.columns(), spec)
		if err != nil {
			return nil, err
		}
		if err := src.close(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	t := &Table{spec: spec, files: files, labels: spec.Labels, problem: spec.Problem}
	if t.problem == "" || (t.labels == nil && t.problem != Regression) {
		var err error
		if t.problem, t.labels, err = scanLabels(spec, files); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// scanLabels reads the label column of files, chooses the problem (spec.Problem, else from
// the labels: see problemOf) and builds the sorted label map of a classification (spec.Labels
// when given; nil for regression).
func scanLabels(spec Spec, files []string) (Problem, *Labels, error) {
	set := map[string]bool{}
	vals := make([]value, 1)
	var seen detection
	for _, path := range files {
		err := func() error {
			src, err := openSource(path, []string{spec.LabelColumn}, spec)
			if err != nil {
				return err
			}
			defer src.close()
			for {
				w, err := src.next(vals)
				if err == io.EOF {
					return nil
				} else if err != nil {
					return err
				}
				names, err := seen.add(spec, path, w, vals[0])
				if err != nil {
					return err
				}
				for _, name := range names {
					if !set[name] && len(set) == MaxLabels {
						return rowError(path, w, spec.LabelColumn, "more than %d distinct labels: is it the label column?", MaxLabels)
					}
					set[name] = true
				}
			}
		}()
		if err != nil {
			return "", nil, err
		}
	}
	if seen.rows == 0 {
		return "", nil, fmt.Errorf("table: %s: no rows, so no labels", strings.Join(files, ", "))
	}
	problem := seen.problem(spec)
	switch {
	case problem == Regression:
		return problem, nil, nil
	case spec.Labels != nil:
		return problem, spec.Labels, nil
	}
	return problem, sortedLabels(set), nil
}

// labelText checks that v can be a label and returns its text.
func labelText(path string, w where, col string, v value) (string, error) {
	switch v.kind {
	case kindNull:
		return "", rowError(path, w, col, "the label is null")
	case kindOther, kindFloat, kindList, kindImage:
		return "", rowError(path, w, col, "label %s is not an integer, a string or a boolean", v.text)
	}
	if v.text == "" {
		return "", rowError(path, w, col, "empty label")
	}
	return v.text, nil
}

// Labels is the label map: spec.Labels, or the one Open built from the files.
func (t *Table) Labels() *Labels { return t.labels }

// Files are the table's files, in the order a pass reads them.
func (t *Table) Files() []string { return append([]string(nil), t.files...) }

// All reads the files in order, one row at a time, and yields each row as an example: the
// texts of the text columns joined with the delimiter, the label's id in the map. The first
// bad row ends the pass with an error naming the file, the row and the column.
func (t *Table) All() iter.Seq2[text.Labeled, error] {
	return func(yield func(text.Labeled, error) bool) {
		for _, path := range t.files {
			more, err := t.readFile(path, yield)
			if err != nil {
				yield(text.Labeled{}, err)
				return
			}
			if !more {
				return
			}
		}
	}
}

// readFile yields the examples of one file; more is false when yield asked to stop.
func (t *Table) readFile(path string, yield func(text.Labeled, error) bool) (more bool, err error) {
	cols := t.spec.columns()
	src, err := openSource(path, cols, t.spec)
	if err != nil {
		return false, err
	}
	defer src.close()
	vals := make([]value, len(cols))
	nText := len(t.spec.TextColumns)
	var sb strings.Builder
	for {
		w, err := src.next(vals)
		if err == io.EOF {
			return true, nil
		} else if err != nil {
			return false, err
		}
		sb.Reset()
		for i, c := range t.spec.TextColumns {
			v := vals[i]
			if err := checkText(path, w, c, v); err != nil {
				return false, err
			}
			if i > 0 {
				sb.WriteString(t.spec.delimiter())
			}
			sb.WriteString(v.text)
		}
		ex := text.Labeled{Text: sb.String()}
		if ex.Label, ex.Values, err = t.target(path, w, vals[nText]); err != nil {
			return false, err
		}
		if !yield(ex, nil) {
			return false, nil
		}
	}
}

// checkText refuses a text cell that is null, not a string, blank or not UTF-8.
func checkText(path string, w where, col string, v value) error {
	switch {
	case v.kind == kindNull:
		return rowError(path, w, col, "the text is null")
	case v.kind != kindString:
		return rowError(path, w, col, "%s is not a text (a string)", v.text)
	case strings.TrimSpace(v.text) == "":
		return rowError(path, w, col, "empty text")
	case !utf8.ValidString(v.text):
		return rowError(path, w, col, "the text is not valid UTF-8")
	}
	return nil
}

// openFile opens path for reading, naming it in the error.
func openFile(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("table: %w", err)
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("table: %s is a directory, not a data file", path)
	}
	return f, nil
}

// Load reads the files of a comma-separated list of paths and glob patterns (see Glob) into
// memory, to shuffle or split them, and returns them with their Table, which says the label
// map (spec.Labels, or the one built from these files) and the problem (Open). It is what a
// program's --train_file and --validation_file flags call.
func Load(files string, spec Spec) (data.Slice[text.Labeled], *Table, error) {
	paths, err := Glob(files)
	if err != nil {
		return nil, nil, err
	}
	t, err := Open(spec, paths...)
	if err != nil {
		return nil, nil, err
	}
	all, err := data.Collect[text.Labeled](t)
	return all, t, err
}

// ReadTexts reads the texts of the files of a comma-separated list of paths and globs (see
// Glob): spec's text columns joined by its delimiter, one per row, in file and row order.
// The label column is not read (the files may lack it): it is what a program's --test_file
// of texts to predict calls. Errors name the file, the row and the column, as Open's.
func ReadTexts(files string, spec Spec) ([]string, error) {
	paths, err := Glob(files)
	if err != nil {
		return nil, err
	}
	if len(spec.TextColumns) == 0 || slices.Contains(spec.TextColumns, "") {
		return nil, fmt.Errorf("table: ReadTexts: text columns %q: want at least one, none empty", spec.TextColumns)
	}
	var out []string
	for _, path := range paths {
		src, err := openSource(path, spec.TextColumns, spec)
		if err != nil {
			return nil, err
		}
		vals := make([]value, len(spec.TextColumns))
		for {
			w, err := src.next(vals)
			if err == io.EOF {
				break
			} else if err != nil {
				src.close()
				return nil, err
			}
			parts := make([]string, len(vals))
			for i, v := range vals {
				if err := checkText(path, w, spec.TextColumns[i], v); err != nil {
					src.close()
					return nil, err
				}
				parts[i] = v.text
			}
			out = append(out, strings.Join(parts, spec.delimiter()))
		}
		if err := src.close(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return out, nil
}
