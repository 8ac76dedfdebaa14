package table

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data"
)

const imgDir = "testdata/images"

var (
	pngMagic  = []byte("\x89PNG\r\n\x1a\n")
	jpegMagic = []byte{0xff, 0xd8}
)

// readImages opens files with spec and collects every row.
func readImages(t *testing.T, spec Spec, files ...string) (*Images, []ImageRow) {
	t.Helper()
	tb, err := OpenImages(spec, files...)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := data.Collect[ImageRow](tb)
	if err != nil {
		t.Fatal(err)
	}
	return tb, rows
}

// TestImageColumnParquet: the Image feature as datasets' to_parquet writes it (a struct of
// bytes and path): bytes when the cell has them, else the path resolved against the table's
// folder; the label rules of text tables (ClassLabel ids, lists, floats).
func TestImageColumnParquet(t *testing.T) {
	for _, name := range []string{"images.parquet", "images_groups.parquet"} {
		file := filepath.Join(imgDir, name)
		tb, rows := readImages(t, Spec{ImageColumn: "image", LabelColumn: "label"}, file)
		if len(rows) != 4 || tb.Problem() != SingleLabel || !reflect.DeepEqual(tb.Labels().Names(), []string{"0", "1", "2"}) {
			t.Fatalf("%s: %d rows, problem %s, labels %v", name, len(rows), tb.Problem(), tb.Labels())
		}
		if !bytes.HasPrefix(rows[0].Bytes, pngMagic) || rows[0].Path != "" || rows[0].Label != 2 {
			t.Errorf("%s row 1: %d bytes %q path %q label %d", name, len(rows[0].Bytes), rows[0].Bytes[:min(8, len(rows[0].Bytes))], rows[0].Path, rows[0].Label)
		}
		if rows[1].Bytes != nil || rows[1].Path != filepath.Join(imgDir, "img/red.png") || rows[1].Label != 0 {
			t.Errorf("%s row 2: %d bytes, path %q label %d", name, len(rows[1].Bytes), rows[1].Path, rows[1].Label)
		}
		if !bytes.HasPrefix(rows[2].Bytes, jpegMagic) || rows[2].Path != "green.jpg" || rows[2].Label != 1 {
			t.Errorf("%s row 3: %d bytes, path %q label %d", name, len(rows[2].Bytes), rows[2].Path, rows[2].Label)
		}
		wantSource := file + ": row group 0, row 3"
		if name == "images_groups.parquet" {
			if rows[3].Source != file+": row group 1, row 4" {
				t.Errorf("row 4's source %q", rows[3].Source)
			}
		}
		if rows[2].Source != wantSource || rows[2].File != 0 || rows[2].Row != 2 {
			t.Errorf("%s row 3: source %q file %d row %d", name, rows[2].Source, rows[2].File, rows[2].Row)
		}
		// A row's bytes read again by its place, as an indexed dataset does.
		for _, r := range rows {
			b, err := tb.Bytes(r.File, r.Row)
			if r.Bytes == nil {
				if err == nil || !strings.Contains(err.Error(), r.Source+`, column "image": the image's bytes are null`) {
					t.Errorf("%s: Bytes(%d, %d) of a path: %v", name, r.File, r.Row, err)
				}
				continue
			}
			if err != nil || !bytes.Equal(b, r.Bytes) {
				t.Errorf("%s: Bytes(%d, %d) = %d bytes, %v; want the %d of the pass", name, r.File, r.Row, len(b), err, len(r.Bytes))
			}
		}
		if _, err := tb.Bytes(0, 4); err == nil || !strings.Contains(err.Error(), "no row 5") {
			t.Errorf("Bytes past the end: %v", err)
		}
	}
	// Multi-label and regression from the same files.
	tb, rows := readImages(t, Spec{ImageColumn: "image", LabelColumn: "tags"}, filepath.Join(imgDir, "images.parquet"))
	if tb.Problem() != MultiLabel || !reflect.DeepEqual(tb.Labels().Names(), []string{"day", "night", "red"}) ||
		!reflect.DeepEqual(rows[1].Values, []float32{1, 0, 1}) {
		t.Errorf("tags: problem %s labels %v values %v", tb.Problem(), tb.Labels(), rows[1].Values)
	}
	tb, rows = readImages(t, Spec{ImageColumn: "image", LabelColumn: "score"}, filepath.Join(imgDir, "images.parquet"))
	if tb.Problem() != Regression || !reflect.DeepEqual(rows[2].Values, []float32{-2}) {
		t.Errorf("score: problem %s values %v", tb.Problem(), rows[2].Values)
	}
}

// TestImageColumnJSONLines: what datasets' to_json writes ({"bytes": null, "path": ...}) and
// bare path strings, relative to the file; validation takes the training map.
func TestImageColumnJSONLines(t *testing.T) {
	file := filepath.Join(imgDir, "images.jsonl")
	train, _ := readImages(t, Spec{ImageColumn: "image", LabelColumn: "label"}, filepath.Join(imgDir, "images.parquet"))
	tb, rows := readImages(t, Spec{ImageColumn: "image", LabelColumn: "label", Labels: train.Labels()}, file)
	want := []string{"img/red.png", "img/gray.png", "img/cmyk.jpg"}
	if len(rows) != 3 || tb.Labels() != train.Labels() {
		t.Fatalf("%d rows", len(rows))
	}
	for i, r := range rows {
		if r.Bytes != nil || r.Path != filepath.Join(imgDir, want[i]) {
			t.Errorf("row %d: %d bytes, path %q", i+1, len(r.Bytes), r.Path)
		}
	}
	if rows[2].Label != 2 || rows[2].Source != file+":3: row 3" {
		t.Errorf("row 3: label %d source %q", rows[2].Label, rows[2].Source)
	}
	if _, err := tb.Bytes(0, 0); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("Bytes of a JSON Lines row: %v", err)
	}
}

// TestImageColumnBadInput: each broken cell is an error naming the file, the row and the column.
func TestImageColumnBadInput(t *testing.T) {
	p := func(n string) string { return filepath.Join(imgDir, n) }
	for _, c := range []struct {
		file, want string
		spec       Spec
	}{
		{p("bad_null.parquet"), `bad_null.parquet: row group 0, row 2, column "image": the image's bytes and path are both null`, Spec{}},
		{p("bad_struct_null.parquet"), `bad_struct_null.parquet: row group 0, row 1, column "image": the image is null`, Spec{}},
		{p("bad_missing.jsonl"), `bad_missing.jsonl:2: row 2, column "image": ` + p("img/missing.png") + `: no such file`, Spec{}},
		{p("bad_bytes.jsonl"), `bad_bytes.jsonl:1: row 1, column "image": image bytes in JSON`, Spec{}},
		{p("images.parquet"), `no column "picture"`, Spec{ImageColumn: "picture"}},
		{p("images.parquet"), `column "label" holds INT64 values, not images`, Spec{ImageColumn: "label", LabelColumn: "score"}},
		{p("images.jsonl"), `row 1, column "label": 0 is not an image`, Spec{ImageColumn: "label", LabelColumn: "score"}},
	} {
		spec := c.spec
		if spec.ImageColumn == "" {
			spec.ImageColumn = "image"
		}
		if spec.LabelColumn == "" {
			spec.LabelColumn = "label"
		}
		tb, err := OpenImages(spec, c.file)
		if err == nil {
			_, err = data.Collect[ImageRow](tb)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.file, err, c.want)
		}
	}
	// A text table is not an image table, nor the other way round.
	if _, err := OpenImages(Spec{TextColumns: []string{"t"}, LabelColumn: "label"}, p("images.parquet")); err == nil || !strings.Contains(err.Error(), "Spec.ImageColumn") {
		t.Errorf("OpenImages without an image column: %v", err)
	}
	if _, err := Open(Spec{ImageColumn: "image", LabelColumn: "label"}, p("images.parquet")); err == nil || !strings.Contains(err.Error(), "OpenImages") {
		t.Errorf("Open with an image column: %v", err)
	}
}
