package table

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

// parquetSource reads the selected columns of a Parquet file row group by row group, a page
// of each column at a time, through github.com/parquet-go/parquet-go.
type parquetSource struct {
	path   string
	f      *os.File
	pf     *parquet.File
	cols   []string
	leaves []int // column index of each selected column
	lists  []listLevels
	// images: per selected column, how its cells are images (the image column of OpenImages)
	images []parquetImage
	groups []parquet.RowGroup

	group     int   // current row group (-1 before the first)
	groupRows int64 // rows in it
	inGroup   int64 // rows of it already read
	row       int   // rows of the file already read
	cursors   []*pageCursor
	paths     []*pageCursor // per selected column: the cursor of an image struct's path field
}

// parquetImage says how a column's cells are images: not at all, as a struct of bytes and
// path (Hugging Face's Image feature; leaves holds the bytes field, pathLeaf the path), or as
// one binary field (bytes, or a path when it is annotated as a string).
type parquetImage struct {
	image    bool
	pathLeaf int // the path field's column index, -1 when the column is one field
	isPath   bool
}

func openParquet(path string, cols []string, spec Spec) (s source, err error) {
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: not a readable Parquet file (truncated or corrupt?): the Parquet reader panicked: %v", path, r)
		}
		if err != nil {
			f.Close()
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("table: %w", err)
	}
	if err := checkParquetEnds(f, st.Size()); err != nil {
		return nil, fmt.Errorf("%s: not a readable Parquet file (truncated or corrupt?): %w", path, err)
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("%s: not a readable Parquet file (truncated or corrupt?): %w", path, err)
	}
	p := &parquetSource{path: path, f: f, pf: pf, cols: cols, groups: pf.RowGroups(), group: -1}
	for i, c := range cols {
		if i < len(cols)-1 && spec.ImageColumn != "" { // the image column (the last is the label)
			img, leaf, err := imageLeaves(pf.Schema(), path, c)
			if err != nil {
				return nil, err
			}
			p.images = append(p.images, img)
			p.lists = append(p.lists, listLevels{})
			p.leaves = append(p.leaves, leaf)
			continue
		}
		p.images = append(p.images, parquetImage{pathLeaf: -1})
		var have []string
		top := false
		for _, fl := range pf.Schema().Fields() {
			have = append(have, fl.Name())
			top = top || fl.Name() == c
		}
		leaf, ok := pf.Schema().Lookup(c)
		if !top {
			return nil, missingColumn(path, c, have)
		}
		if !ok || !leaf.Node.Leaf() { // a LIST group (c.list.element, or an older layout): its one leaf
			var under [][]string
			for _, colPath := range pf.Schema().Columns() {
				if colPath[0] == c {
					under = append(under, colPath)
				}
			}
			if len(under) == 1 {
				leaf, ok = pf.Schema().Lookup(under[0]...)
			}
		}
		if !ok || !leaf.Node.Leaf() || leaf.MaxRepetitionLevel > 1 {
			return nil, fmt.Errorf("%s: column %q is a group or a list of lists: want one value or one list of values per row", path, c)
		}
		var lv listLevels
		if leaf.MaxRepetitionLevel == 1 { // a list of values (multi-label labels, a sentence's words or tags)
			lv = listLevels{list: true, element: leaf.MaxDefinitionLevel}
			if leaf.Node.Optional() {
				lv.element--
			}
		}
		p.lists = append(p.lists, lv)
		k := leaf.Node.Type().Kind()
		isLabel := i == len(cols)-1
		switch {
		case k == parquet.ByteArray:
		case lv.list && (k == parquet.Int32 || k == parquet.Int64 || k == parquet.Boolean): // list items: checked by their use
		case isLabel && (k == parquet.Int32 || k == parquet.Int64 || k == parquet.Boolean):
		case isLabel && (k == parquet.Float || k == parquet.Double): // regression targets
		case isLabel:
			return nil, fmt.Errorf("%s: label column %q holds %s values: want integers, strings, booleans "+
				"or (regression) floats", path, c, k)
		default:
			return nil, fmt.Errorf("%s: text column %q holds %s values, not strings", path, c, k)
		}
		p.leaves = append(p.leaves, leaf.ColumnIndex)
	}
	return p, nil
}

// checkParquetEnds checks the magic numbers at both ends of a Parquet file and that the length
// of its footer fits in the file, before parquet-go allocates a buffer of that length (a
// corrupt length would otherwise allocate up to 4 GiB).
func checkParquetEnds(f io.ReaderAt, size int64) error {
	const magic = "PAR1"
	if size < 12 {
		return fmt.Errorf("%d bytes, shorter than the 12 of an empty Parquet file", size)
	}
	var head [4]byte
	var tail [8]byte
	if _, err := f.ReadAt(head[:], 0); err != nil {
		return err
	}
	if _, err := f.ReadAt(tail[:], size-8); err != nil {
		return err
	}
	if string(head[:]) != magic || string(tail[4:]) != magic {
		return fmt.Errorf("the file does not start and end with %q", magic)
	}
	if n := int64(binary.LittleEndian.Uint32(tail[:4])); n > size-12 {
		return fmt.Errorf("its footer would be %d bytes long, but the file has %d", n, size)
	}
	return nil
}

// listLevels says whether a column is a list, and the definition level from which a list's
// entry is an element (null when the element is optional and the level is one less than the
// column's maximum): below it, the row's list is null or empty.
type listLevels struct {
	list    bool
	element int
}

// pageCursor hands out the values of one column chunk, one page in memory at a time.
type pageCursor struct {
	pages   parquet.Pages
	page    parquet.Page
	vr      parquet.ValueReader
	buf     []parquet.Value
	n, at   int
	eof     bool // the page's values are all read
	peeked  bool // held is the next value, read ahead
	held    parquet.Value
	heldOK  bool
	heldErr error
}

// value returns the next value of the column chunk; ok is false at its end.
func (c *pageCursor) value() (v parquet.Value, ok bool, err error) {
	if c.peeked {
		c.peeked = false
		return c.held, c.heldOK, c.heldErr
	}
	return c.read()
}

// peek returns the next value without taking it.
func (c *pageCursor) peek() (v parquet.Value, ok bool, err error) {
	if !c.peeked {
		c.held, c.heldOK, c.heldErr = c.read()
		c.peeked = true
	}
	return c.held, c.heldOK, c.heldErr
}

// list reads the entries of one row of a list column: the first value and those that repeat
// it (repetition level above 0). A null or empty list is a list of no items; a null element is
// a null item.
func (c *pageCursor) list(lv listLevels) (value, error) {
	first, ok, err := c.value()
	if err != nil || !ok {
		return value{}, err
	}
	out := value{kind: kindList}
	for v, more := first, true; more; {
		if !(v.IsNull() && v.DefinitionLevel() < lv.element) {
			out.items = append(out.items, parquetValue(v))
		}
		next, ok, err := c.peek()
		if err != nil {
			return value{}, err
		}
		if more = ok && next.RepetitionLevel() > 0; more {
			v, _, _ = c.value()
		}
	}
	texts := make([]string, len(out.items))
	for i, it := range out.items {
		texts[i] = strconv.Quote(it.text)
	}
	out.text = "[" + strings.Join(texts, ", ") + "]"
	return out, nil
}

// read returns the next value of the column chunk from its pages; ok is false at its end.
func (c *pageCursor) read() (v parquet.Value, ok bool, err error) {
	for c.at == c.n {
		if c.vr != nil && !c.eof {
			c.n, err = c.vr.ReadValues(c.buf)
			c.at = 0
			if err == io.EOF {
				c.eof, err = true, nil
			}
			if err != nil {
				return v, false, err
			}
			continue
		}
		c.release()
		c.page, err = c.pages.ReadPage()
		if err == io.EOF {
			return v, false, nil
		} else if err != nil {
			return v, false, err
		}
		c.vr, c.eof = c.page.Values(), false
	}
	c.at++
	return c.buf[c.at-1], true, nil
}

func (c *pageCursor) release() {
	if c.page != nil {
		parquet.Release(c.page)
		c.page, c.vr = nil, nil
	}
}

func (c *pageCursor) close() {
	c.release()
	c.pages.Close()
}

func (p *parquetSource) closeCursors() {
	for _, c := range append(p.cursors, p.paths...) {
		if c != nil {
			c.close()
		}
	}
	p.cursors, p.paths = nil, nil
}

func (p *parquetSource) next(vals []value) (w where, err error) {
	col := -1 // the column being read, for errors
	defer func() {
		if r := recover(); r != nil {
			at := fmt.Sprintf("row group %d", p.group)
			if col >= 0 {
				at += fmt.Sprintf(", column %q", p.cols[col])
			}
			err = fmt.Errorf("%s: %s: corrupt data: the Parquet reader panicked: %v", p.path, at, r)
		}
	}()
	for p.group < 0 || p.inGroup == p.groupRows {
		if p.group >= 0 {
			if err := p.checkEnd(); err != nil {
				return w, err
			}
		}
		p.closeCursors()
		if p.group+1 == len(p.groups) {
			return w, io.EOF
		}
		p.group++
		g := p.groups[p.group]
		p.groupRows, p.inGroup = g.NumRows(), 0
		chunks := g.ColumnChunks()
		for i, leaf := range p.leaves {
			p.cursors = append(p.cursors, &pageCursor{pages: chunks[leaf].Pages(), buf: make([]parquet.Value, 256)})
			var pc *pageCursor
			if pl := p.images[i].pathLeaf; pl >= 0 {
				pc = &pageCursor{pages: chunks[pl].Pages(), buf: make([]parquet.Value, 256)}
			}
			p.paths = append(p.paths, pc)
		}
	}
	p.inGroup++
	p.row++
	w = where{row: p.row, rowGroup: p.group}
	for i, c := range p.cursors {
		col = i
		if p.lists[i].list {
			if _, ok, err := c.peek(); err == nil && !ok {
				return w, fmt.Errorf("%s:%s, column %q: the column ends before the row group's %d rows (corrupt file?)",
					p.path, w, p.cols[i], p.groupRows)
			}
			if vals[i], err = c.list(p.lists[i]); err != nil {
				return w, fmt.Errorf("%s:%s, column %q: reading the column (corrupt file?): %w", p.path, w, p.cols[i], err)
			}
			continue
		}
		v, err := p.cell(c, i, w)
		if err != nil {
			return w, err
		}
		if !p.images[i].image {
			vals[i] = parquetValue(v)
			continue
		}
		var pv parquet.Value
		if p.paths[i] != nil {
			if pv, err = p.cell(p.paths[i], i, w); err != nil {
				return w, err
			}
		}
		vals[i] = p.imageValue(i, v, pv)
	}
	return w, nil
}

// cell reads the next value of cursor c of selected column i, in row w.
func (p *parquetSource) cell(c *pageCursor, i int, w where) (parquet.Value, error) {
	v, ok, err := c.value()
	if err != nil {
		return v, fmt.Errorf("%s:%s, column %q: reading the column (corrupt file?): %w", p.path, w, p.cols[i], err)
	}
	if !ok {
		return v, fmt.Errorf("%s:%s, column %q: the column ends before the row group's %d rows (corrupt file?)",
			p.path, w, p.cols[i], p.groupRows)
	}
	return v, nil
}

// imageValue is the image cell of selected column i: its bytes value b and, for a struct,
// its path value pv. A struct that is null itself (definition level 0) is a null cell.
func (p *parquetSource) imageValue(i int, b, pv parquet.Value) value {
	img := p.images[i]
	switch {
	case img.pathLeaf >= 0 && b.IsNull() && b.DefinitionLevel() == 0:
		return value{text: "null", kind: kindNull}
	case img.pathLeaf < 0 && b.IsNull():
		return value{text: "null", kind: kindNull}
	case img.isPath:
		return value{kind: kindImage, text: "an image path", path: string(b.ByteArray()), hasPath: true}
	}
	v := value{kind: kindImage, text: "an image"}
	if !b.IsNull() {
		v.bytes = append([]byte{}, b.ByteArray()...) // the page's buffer is reused
	}
	if img.pathLeaf >= 0 && !pv.IsNull() {
		v.path, v.hasPath = string(pv.ByteArray()), true
	}
	return v
}

// imageLeaves finds the leaves of image column c: a struct of a binary "bytes" and a string
// "path" field (Hugging Face's Image feature), or one binary or string field.
func imageLeaves(schema *parquet.Schema, path, c string) (parquetImage, int, error) {
	var have []string
	var node parquet.Node
	for _, fl := range schema.Fields() {
		have = append(have, fl.Name())
		if fl.Name() == c {
			node = fl
		}
	}
	if node == nil {
		return parquetImage{}, 0, missingColumn(path, c, have)
	}
	if node.Leaf() {
		leaf, _ := schema.Lookup(c)
		if node.Repeated() || node.Type().Kind() != parquet.ByteArray {
			return parquetImage{}, 0, fmt.Errorf("%s: column %q holds %s values, not images (want Hugging Face's Image "+
				"feature, a struct of bytes and path, or a binary or string column)", path, c, kindName(node))
		}
		return parquetImage{image: true, pathLeaf: -1, isPath: isString(node)}, leaf.ColumnIndex, nil
	}
	b, okB := schema.Lookup(c, "bytes")
	pt, okP := schema.Lookup(c, "path")
	if node.Repeated() || len(node.Fields()) != 2 || !okB || !okP || !b.Node.Leaf() || !pt.Node.Leaf() ||
		b.MaxRepetitionLevel > 0 || pt.MaxRepetitionLevel > 0 ||
		b.Node.Type().Kind() != parquet.ByteArray || pt.Node.Type().Kind() != parquet.ByteArray {
		return parquetImage{}, 0, fmt.Errorf("%s: column %q is a group but not an image (want Hugging Face's Image "+
			"feature: a struct of a binary \"bytes\" and a string \"path\")", path, c)
	}
	return parquetImage{image: true, pathLeaf: pt.ColumnIndex}, b.ColumnIndex, nil
}

// kindName names the values of a leaf node, as parquet-go's Kind names them.
func kindName(n parquet.Node) string {
	if n.Repeated() {
		return "repeated " + n.Type().Kind().String()
	}
	return n.Type().Kind().String()
}

// isString says whether a leaf is annotated as UTF-8 text.
func isString(n parquet.Node) bool {
	if lt := n.Type().LogicalType(); lt != nil {
		if _, ok := lt.Value.(*format.StringType); ok {
			return true
		}
	}
	ct := n.Type().ConvertedType()
	return ct != nil && *ct == deprecated.UTF8
}

// checkEnd checks that no column of the row group just read has more values than its rows.
func (p *parquetSource) checkEnd() error {
	for i, c := range p.cursors {
		_, more, err := c.value()
		if err != nil {
			return fmt.Errorf("%s: row group %d, column %q: reading the column (corrupt file?): %w", p.path, p.group, p.cols[i], err)
		}
		if more {
			return fmt.Errorf("%s: row group %d, column %q: more values than the row group's %d rows (corrupt file?)",
				p.path, p.group, p.cols[i], p.groupRows)
		}
	}
	return nil
}

// parquetValue converts a value of a column of the kinds openParquet accepts.
func parquetValue(v parquet.Value) value {
	switch {
	case v.IsNull():
		return value{text: "null", kind: kindNull}
	case v.Kind() == parquet.ByteArray:
		return value{text: string(v.ByteArray()), kind: kindString}
	case v.Kind() == parquet.Int32:
		return value{text: strconv.FormatInt(int64(v.Int32()), 10), kind: kindInt}
	case v.Kind() == parquet.Int64:
		return value{text: strconv.FormatInt(v.Int64(), 10), kind: kindInt}
	case v.Kind() == parquet.Boolean:
		return value{text: strconv.FormatBool(v.Boolean()), kind: kindBool}
	case v.Kind() == parquet.Float:
		return value{text: strconv.FormatFloat(float64(v.Float()), 'g', -1, 32), kind: kindFloat}
	case v.Kind() == parquet.Double:
		return value{text: strconv.FormatFloat(v.Double(), 'g', -1, 64), kind: kindFloat}
	}
	return value{text: v.String(), kind: kindOther}
}

func (p *parquetSource) close() error {
	p.closeCursors()
	return p.f.Close()
}
