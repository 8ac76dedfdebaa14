package image

import (
	"fmt"
	"os"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/table"
)

// TableOptions say how OpenTable decodes a table's images.
type TableOptions struct {
	// Decoder decodes the images (its MaxPixels limit).
	Decoder Decoder
	// SkipBad leaves out an image that does not decode, as FolderOptions.SkipBad.
	SkipBad bool
}

// Table is a Parquet, JSON Lines or CSV table with an image column (see table.Images: Hugging
// Face's Image feature, or paths) as a data.Dataset[Example]. Opening it reads the table once
// and keeps, per row, the label and where the image is, not the image: the file a path names,
// or, for bytes held in a Parquet file, the row's place, read again by Get
// (table.Images.Bytes). Get decodes one image, on the loader's workers. Errors name the
// table file and the row.
type Table struct {
	// Classes are the label names (nil for regression); Example.Label indexes them.
	Classes []string
	// Labels is the table's label map (table.Images.Labels): pass it in the Spec of the
	// validation files.
	Labels *table.Labels
	// Problem is what the label column holds (single-label, multi-label, regression).
	Problem table.Problem
	images  *table.Images
	rows    []tableRow
	opts    TableOptions
	column  string
}

// tableRow is what Table keeps of a row.
type tableRow struct {
	path      string // the image file; "" when the bytes are in the table
	file, row int
	label     int
	values    []float32
	source    string
}

// OpenTable opens files as one table of images: spec names the image column
// (spec.ImageColumn) and the label column, with the label rules of package table.
func OpenTable(spec table.Spec, opts TableOptions, files ...string) (*Table, error) {
	im, err := table.OpenImages(spec, files...)
	if err != nil {
		return nil, err
	}
	t := &Table{Labels: im.Labels(), Problem: im.Problem(), images: im, opts: opts, column: spec.ImageColumn}
	if t.Labels != nil {
		t.Classes = t.Labels.Names()
	}
	for r, err := range im.All() {
		if err != nil {
			return nil, err
		}
		tr := tableRow{file: r.File, row: r.Row, label: r.Label, values: r.Values, source: r.Source}
		if r.Bytes == nil {
			tr.path = r.Path
		}
		t.rows = append(t.rows, tr)
	}
	if len(t.rows) == 0 {
		return nil, fmt.Errorf("image: %v: no rows", files)
	}
	return t, nil
}

// Len is the number of rows.
func (t *Table) Len() int { return len(t.rows) }

// Get reads and decodes the image of row i; Example.Source is the row's place
// ("train.parquet: row group 0, row 3").
func (t *Table) Get(i int) (Example, error) {
	if i < 0 || i >= len(t.rows) {
		return Example{}, fmt.Errorf("image: table index %d out of range [0, %d)", i, len(t.rows))
	}
	r := t.rows[i]
	var b []byte
	var err error
	name := r.path
	if r.path != "" {
		b, err = os.ReadFile(r.path)
		if err != nil {
			err = fmt.Errorf("%s: %w", r.source, err)
		}
	} else {
		b, err = t.images.Bytes(r.file, r.row)
		name = fmt.Sprintf("%s, column %q", r.source, t.column)
	}
	if err != nil {
		return Example{}, err
	}
	m, err := t.opts.Decoder.Decode(name, b)
	if err != nil {
		if r.path != "" {
			err = fmt.Errorf("%s: %w", r.source, err)
		}
		return Example{}, badImage(err, t.opts.SkipBad)
	}
	return Example{Image: m, Label: r.label, Values: r.values, Source: r.source}, nil
}

var (
	_ data.Dataset[Example] = (*Folder)(nil)
	_ data.Dataset[Example] = (*CIFAR)(nil)
	_ data.Dataset[Example] = (*Table)(nil)
)
