package table

import (
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/goaccel/goaccel/data"
	"github.com/parquet-go/parquet-go"
)

// An Images table is a data.Stream: data.NewStreamLoader serves it, data.Collect loads it.
var _ data.Stream[ImageRow] = (*Images)(nil)

// ImageRow is one row of an image table: the image cell (the encoded file's bytes, or the
// path of the file) and the label, read by the rules of text tables (see the package doc).
type ImageRow struct {
	// Bytes is the encoded image file the cell holds (PNG, JPEG...), nil when the cell gives
	// only a path. It is not decoded here (package data/image decodes it).
	Bytes []byte
	// Path is the image's file when Bytes is nil: the cell's path, joined to the table file's
	// folder when relative (checked to exist when the row is read). With Bytes it is the name
	// the cell gives, as written (empty when null), for messages only.
	Path string
	// Label is the class id (single-label); Values the multi-label flags or the regression
	// value, as text.Labeled's.
	Label  int
	Values []float32
	// File is the index of the row's file in Files; Row the row in that file, from 0
	// (Images.Bytes reads the row's bytes again by them).
	File, Row int
	// Source says where the row is, as errors name it: "train.parquet: row group 0, row 3"
	// (rows from 1), "train.jsonl:7: row 6".
	Source string
}

// Images is a dataset of images read from one or more tables: a data.Stream of ImageRow whose
// passes read the files in order, a row at a time. Make it with OpenImages.
//
// The image column holds, per row, one of:
//   - Hugging Face datasets' Image feature as to_parquet writes it: a struct of "bytes"
//     (binary, the encoded file) and "path" (string), either of which may be null; the bytes
//     when there are any (datasets' decode_example reads them first), else the file at path;
//   - in JSON Lines, what datasets' to_json writes for an Image feature, {"bytes": null,
//     "path": "img/1.png"}, or a bare path string, as load_dataset("json") reads it into an
//     Image feature. (to_json cannot write image bytes: pandas refuses binary values; a JSON
//     cell with bytes is an error rather than a guess at their encoding.)
//   - a string column (CSV, JSON Lines, Parquet) of paths, or a Parquet binary column of
//     encoded files.
//
// A relative path is taken from the table file's folder, as imagefolder's metadata.jsonl
// names its files (datasets itself opens it from the working folder). A cell whose bytes and
// path are both null, a null cell, a path to no file, or another kind of value is an error
// naming the file, the row and the column.
type Images struct {
	tab *Table
	mu  sync.Mutex
	pf  map[int]*parquetFile // the Parquet files opened for Bytes
}

// parquetFile is a Parquet file opened for reading rows by their index.
type parquetFile struct {
	f      *os.File
	pf     *parquet.File
	leaf   int     // the image's bytes column
	starts []int64 // first row of each row group
}

// OpenImages returns files (at least one; formats by extension, see FormatOf) as one dataset
// of the image column spec.ImageColumn and the label column spec.LabelColumn (spec.TextColumns
// empty). As Open, it checks that every file has the columns and builds the label map and the
// problem from the label column unless spec gives them.
func OpenImages(spec Spec, files ...string) (*Images, error) {
	if err := spec.validate(true); err != nil {
		return nil, err
	}
	t, err := open(spec, files)
	if err != nil {
		return nil, err
	}
	return &Images{tab: t, pf: map[int]*parquetFile{}}, nil
}

// Labels is the label map: spec.Labels, or the one OpenImages built (nil for regression).
func (t *Images) Labels() *Labels { return t.tab.labels }

// Problem is the table's problem: spec.Problem, or the one OpenImages chose from the labels.
func (t *Images) Problem() Problem { return t.tab.problem }

// Files are the table's files, in the order a pass reads them.
func (t *Images) Files() []string { return t.tab.Files() }

// All reads the files in order, one row at a time. The first bad row ends the pass with an
// error naming the file, the row and the column.
func (t *Images) All() iter.Seq2[ImageRow, error] {
	return func(yield func(ImageRow, error) bool) {
		for i, path := range t.tab.files {
			more, err := t.readFile(i, path, yield)
			if err != nil {
				yield(ImageRow{}, err)
				return
			}
			if !more {
				return
			}
		}
	}
}

func (t *Images) readFile(file int, path string, yield func(ImageRow, error) bool) (more bool, err error) {
	spec := t.tab.spec
	src, err := openSource(path, spec.columns(), spec)
	if err != nil {
		return false, err
	}
	defer src.close()
	vals := make([]value, 2)
	for row := 0; ; row++ {
		w, err := src.next(vals)
		if err == io.EOF {
			return true, nil
		} else if err != nil {
			return false, err
		}
		r := ImageRow{File: file, Row: row, Source: path + ":" + w.String()}
		if r.Bytes, r.Path, err = imageCell(path, w, spec.ImageColumn, vals[0]); err != nil {
			return false, err
		}
		if r.Label, r.Values, err = t.tab.target(path, w, vals[1]); err != nil {
			return false, err
		}
		if !yield(r, nil) {
			return false, nil
		}
	}
}

// imageCell reads cell v of image column col of table file path: the bytes, or the path
// (resolved against the file's folder and checked to exist).
func imageCell(path string, w where, col string, v value) ([]byte, string, error) {
	switch v.kind {
	case kindNull:
		return nil, "", rowError(path, w, col, "the image is null")
	case kindString:
		v = value{kind: kindImage, path: v.text, hasPath: true}
	case kindOther:
		var cell struct {
			Bytes json.RawMessage `json:"bytes"`
			Path  *string         `json:"path"`
		}
		if json.Unmarshal([]byte(v.text), &cell) != nil || v.text[0] != '{' {
			return nil, "", rowError(path, w, col, "%s is not an image: want a path or {\"bytes\": null, \"path\": ...}", v.text)
		}
		if len(cell.Bytes) > 0 && string(cell.Bytes) != "null" {
			return nil, "", rowError(path, w, col, "image bytes in JSON are not read (datasets' to_json cannot write "+
				"them, so their encoding is unknown): give a path, or a Parquet file")
		}
		v = value{kind: kindImage}
		if cell.Path != nil {
			v.path, v.hasPath = *cell.Path, true
		}
	case kindImage:
	default:
		return nil, "", rowError(path, w, col, "%s is not an image: want a path, or datasets' Image feature (bytes and path)", v.text)
	}
	switch {
	case v.bytes != nil:
		return v.bytes, v.path, nil
	case !v.hasPath:
		return nil, "", rowError(path, w, col, "the image's bytes and path are both null")
	case v.path == "":
		return nil, "", rowError(path, w, col, "the image's bytes are null and its path is empty")
	}
	p := v.path
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(path), filepath.FromSlash(p))
	}
	if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
		return nil, "", rowError(path, w, col, "%s: no such file (path %s, taken from the table's folder)", p, strconv.Quote(v.path))
	}
	return nil, p, nil
}

// Bytes reads the image bytes of row row of file file (ImageRow.File and Row) again, from a
// Parquet file, without reading the rows before it: what an indexed dataset over a table of
// encoded images calls for each example, so that the images need not be held in memory. It is
// safe for concurrent use. Rows of other formats hold paths, not bytes: an error.
func (t *Images) Bytes(file, row int) (b []byte, err error) {
	if file < 0 || file >= len(t.tab.files) {
		return nil, fmt.Errorf("table: Images.Bytes: file %d of %d", file, len(t.tab.files))
	}
	path := t.tab.files[file]
	if f, _ := FormatOf(path); f != Parquet {
		return nil, fmt.Errorf("table: %s: only Parquet rows are read by their index (this file's images are paths)", path)
	}
	pf, err := t.parquet(file)
	if err != nil {
		return nil, err
	}
	g := 0
	for g+1 < len(pf.starts) && pf.starts[g+1] <= int64(row) {
		g++
	}
	w := where{row: row + 1, rowGroup: g}
	groups := pf.pf.RowGroups()
	if row < 0 || g >= len(groups) || int64(row)-pf.starts[g] >= groups[g].NumRows() {
		return nil, fmt.Errorf("table: %s: no row %d", path, row+1)
	}
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, rowError(path, w, t.tab.spec.ImageColumn, "corrupt data: the Parquet reader panicked: %v", r)
		}
	}()
	pages := groups[g].ColumnChunks()[pf.leaf].Pages()
	defer pages.Close()
	if err := pages.SeekToRow(int64(row) - pf.starts[g]); err != nil {
		return nil, rowError(path, w, t.tab.spec.ImageColumn, "seeking the row (corrupt file?): %v", err)
	}
	c := &pageCursor{pages: pages, buf: make([]parquet.Value, 1)}
	defer c.release()
	v, ok, err := c.value()
	switch {
	case err != nil:
		return nil, rowError(path, w, t.tab.spec.ImageColumn, "reading the column (corrupt file?): %v", err)
	case !ok:
		return nil, rowError(path, w, t.tab.spec.ImageColumn, "the column ends before the row (corrupt file?)")
	case v.IsNull():
		return nil, rowError(path, w, t.tab.spec.ImageColumn, "the image's bytes are null")
	}
	return append([]byte{}, v.ByteArray()...), nil
}

// parquet opens file's Parquet file for Bytes, once.
func (t *Images) parquet(file int) (*parquetFile, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if pf := t.pf[file]; pf != nil {
		return pf, nil
	}
	path := t.tab.files[file]
	src, err := openParquet(path, t.tab.spec.columns(), t.tab.spec)
	if err != nil {
		return nil, err
	}
	ps := src.(*parquetSource)
	if ps.images[0].isPath {
		src.close()
		return nil, fmt.Errorf("table: %s: column %q holds paths, not image bytes", path, t.tab.spec.ImageColumn)
	}
	pf := &parquetFile{f: ps.f, pf: ps.pf, leaf: ps.leaves[0]}
	var n int64
	for _, g := range ps.groups {
		pf.starts = append(pf.starts, n)
		n += g.NumRows()
	}
	t.pf[file] = pf
	return pf, nil
}

// Close closes the files that Bytes opened. The table can still be read.
func (t *Images) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var first error
	for k, pf := range t.pf {
		if err := pf.f.Close(); err != nil && first == nil {
			first = err
		}
		delete(t.pf, k)
	}
	return first
}
