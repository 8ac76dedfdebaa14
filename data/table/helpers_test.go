package table

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/text"
	"github.com/parquet-go/parquet-go"
)

// row is a row of the Parquet files the tests write: two texts, an integer label, a string
// label, and a text that may be null.
type row struct {
	Premise    string  `parquet:"premise" json:"premise"`
	Hypothesis string  `parquet:"hypothesis" json:"hypothesis"`
	Label      int64   `parquet:"label" json:"label"`
	Name       string  `parquet:"label_name" json:"label_name"`
	Note       *string `parquet:"note,optional" json:"note"`
}

// tagRow has a list column and a float column, neither of which can be a label.
type tagRow struct {
	Premise string   `parquet:"premise"`
	Tags    []string `parquet:"tags,list"`
	Score   float64  `parquet:"score"`
}

// writeParquet writes rows to dir/name with rowsPerGroup rows in each row group.
func writeParquet(t testing.TB, dir, name string, rows []row, rowsPerGroup int) string {
	t.Helper()
	return writeRows(t, dir, name, rows, rowsPerGroup)
}

// writeRows writes rows of any struct type to dir/name, rowsPerGroup rows per row group
// (all in one without it).
func writeRows[T any](t testing.TB, dir, name string, rows []T, rowsPerGroup ...int) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	rowsPerGroup = append(rowsPerGroup, max(len(rows), 1))
	w := parquet.NewGenericWriter[T](f, parquet.MaxRowsPerRowGroup(int64(rowsPerGroup[0])))
	for i := 0; i < len(rows); i += rowsPerGroup[0] {
		if _, err := w.Write(rows[i:min(i+rowsPerGroup[0], len(rows))]); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readAll opens files with spec and collects every example.
func readAll(t testing.TB, spec Spec, files ...string) (*Table, data.Slice[text.Labeled]) {
	t.Helper()
	tb, err := Open(spec, files...)
	if err != nil {
		t.Fatal(err)
	}
	all, err := data.Collect[text.Labeled](tb)
	if err != nil {
		t.Fatal(err)
	}
	return tb, all
}

// equalExamples reports whether a and b hold the same examples, Values included.
func equalExamples(a, b []text.Labeled) bool {
	return slices.EqualFunc(a, b, func(x, y text.Labeled) bool { return reflect.DeepEqual(x, y) })
}
