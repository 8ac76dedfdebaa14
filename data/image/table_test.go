package image_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/image"
	"github.com/goaccel/goaccel/data/table"
)

var (
	_ data.Dataset[image.Example] = (*image.Table)(nil)
	_ data.Dataset[image.Example] = (*image.CIFAR)(nil)
)

// tables is data/table's folder of image-table fixtures (make_image_tables.py).
const tables = "../table/testdata/images"

// decodeBytes decodes an image file's bytes as the Table must.
func decodeFile(t *testing.T, path string) *image.RGB {
	t.Helper()
	m, err := image.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestTableDecodesImageColumns: a Parquet Image feature (bytes, paths) and JSON Lines paths
// read as the same Examples Folder gives, decoded in Get; the label map and problem are the
// table's.
func TestTableDecodesImageColumns(t *testing.T) {
	pq := filepath.Join(tables, "images.parquet")
	tb, err := image.OpenTable(table.Spec{ImageColumn: "image", LabelColumn: "label"}, image.TableOptions{}, pq)
	if err != nil {
		t.Fatal(err)
	}
	if tb.Len() != 4 || !slices.Equal(tb.Classes, []string{"0", "1", "2"}) || tb.Problem != table.SingleLabel {
		t.Fatalf("len %d classes %v problem %s", tb.Len(), tb.Classes, tb.Problem)
	}
	rows, err := data.Collect[table.ImageRow](mustImages(t, pq))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		ex, err := tb.Get(i)
		if err != nil {
			t.Fatal(err)
		}
		want := r.Bytes
		if want == nil {
			if want, err = os.ReadFile(r.Path); err != nil {
				t.Fatal(err)
			}
		}
		m, err := image.Decoder{}.Decode("x", want)
		if err != nil {
			t.Fatal(err)
		}
		if ex.Image.Width != m.Width || ex.Image.Height != m.Height || !bytes.Equal(ex.Image.Pix, m.Pix) || ex.Label != r.Label || ex.Source != r.Source {
			t.Errorf("row %d: %dx%d label %d source %q; want %dx%d label %d source %q", i+1, ex.Image.Width, ex.Image.Height,
				ex.Label, ex.Source, m.Width, m.Height, r.Label, r.Source)
		}
	}
	// The red PNG named by path, and the JSON Lines file's paths.
	red := decodeFile(t, filepath.Join(tables, "img/red.png"))
	if ex, _ := tb.Get(1); !bytes.Equal(ex.Image.Pix, red.Pix) {
		t.Errorf("row 2 is not img/red.png")
	}
	js, err := image.OpenTable(table.Spec{ImageColumn: "image", LabelColumn: "tags"}, image.TableOptions{}, filepath.Join(tables, "images.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := js.Get(2)
	if err != nil || !bytes.Equal(ex.Image.Pix, decodeFile(t, filepath.Join(tables, "img/cmyk.jpg")).Pix) ||
		js.Problem != table.MultiLabel || !slices.Equal(ex.Values, []float32{1, 0, 0}) {
		t.Errorf("jsonl row 3: %v values %v problem %s", err, ex.Values, js.Problem)
	}
	if _, err := tb.Get(4); err == nil {
		t.Error("Get(4) of 4 rows")
	}
}

func mustImages(t *testing.T, files ...string) *table.Images {
	t.Helper()
	tb, err := table.OpenImages(table.Spec{ImageColumn: "image", LabelColumn: "label"}, files...)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// TestTableBadImages: undecodable bytes are an error naming the table file and the row, or
// with SkipBad a Skip error; a cell with no image fails at open.
func TestTableBadImages(t *testing.T) {
	bad := filepath.Join(tables, "bad_bytes.parquet")
	spec := table.Spec{ImageColumn: "image", LabelColumn: "label"}
	for _, skip := range []bool{false, true} {
		tb, err := image.OpenTable(spec, image.TableOptions{SkipBad: skip}, bad)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tb.Get(1)
		if err == nil || !strings.Contains(err.Error(), bad+`: row group 0, row 2, column "image"`) || !strings.Contains(err.Error(), "not an image") {
			t.Errorf("skip %v: %v", skip, err)
		}
		if errors.Is(err, data.ErrSkipped) != skip {
			t.Errorf("skip %v: error %v is a skip: %v", skip, err, errors.Is(err, data.ErrSkipped))
		}
		if _, err := tb.Get(0); err != nil {
			t.Error(err)
		}
	}
	if _, err := image.OpenTable(spec, image.TableOptions{}, filepath.Join(tables, "bad_null.parquet")); err == nil || !strings.Contains(err.Error(), "both null") {
		t.Errorf("both null: %v", err)
	}
	if _, err := image.OpenTable(spec, image.TableOptions{}, filepath.Join(tables, "bad_missing.jsonl")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
	// A label outside the map given (the training files' map of a validation file).
	two, err := table.NewLabels([]string{"0", "1"})
	if err != nil {
		t.Fatal(err)
	}
	spec.Labels = two
	pq := filepath.Join(tables, "images.parquet")
	if _, err := image.OpenTable(spec, image.TableOptions{}, pq); err == nil ||
		!strings.Contains(err.Error(), pq+`: row group 0, row 1, column "label": label "2" is not in the label map`) {
		t.Errorf("label outside the map: %v", err)
	}
}
