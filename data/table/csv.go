package table

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// csvSource reads a CSV file with a header row.
type csvSource struct {
	path   string
	f      *os.File
	r      *csv.Reader
	header []string
	idx    []int // column of each selected value
	lim    *rowLimiter
	row    int
	ended  int // the line the last record read ends on
	max    int
}

// errRowTooLong ends a CSV pass at a record longer than Spec.MaxRowBytes.
var errRowTooLong = errors.New("row too long")

// rowLimiter fails a read once more than max bytes were read since the end of the last
// complete record (start): a quote left open would otherwise read the rest of the file into
// one field. The csv.Reader reads ahead at most its buffer (4 KiB) past that.
type rowLimiter struct {
	r           io.Reader
	read, start int64
	max         int64
}

func (l *rowLimiter) Read(p []byte) (int, error) {
	if l.read-l.start > l.max {
		return 0, errRowTooLong
	}
	n, err := l.r.Read(p)
	l.read += int64(n)
	return n, err
}

// csvComma is the field delimiter of path.
func csvComma(path string, spec Spec) rune {
	switch {
	case spec.Comma != 0:
		return spec.Comma
	case strings.EqualFold(filepath.Ext(path), ".tsv"):
		return '\t'
	}
	return ','
}

func openCSV(path string, cols []string, spec Spec) (source, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	s, err := newCSV(f, path, cols, spec)
	if err != nil {
		f.Close()
		return nil, err
	}
	s.f = f
	return s, nil
}

// newCSV reads the header from r and selects cols.
func newCSV(r io.Reader, path string, cols []string, spec Spec) (*csvSource, error) {
	s := &csvSource{path: path, max: spec.maxRowBytes()}
	s.lim = &rowLimiter{r: r, max: int64(s.max)}
	s.r = csv.NewReader(s.lim)
	s.r.Comma = csvComma(path, spec)
	s.r.ReuseRecord = true
	header, err := s.r.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: empty file: want a header row naming the columns", path)
	} else if err != nil {
		return nil, s.readError(err, nil)
	}
	s.recordEnd(header)
	s.header = append([]string(nil), header...)
	s.header[0] = strings.TrimPrefix(s.header[0], "\ufeff") // a UTF-8 byte order mark (Excel writes one)
	for _, c := range cols {
		at := -1
		for i, h := range s.header {
			if h != c {
				continue
			}
			if at >= 0 {
				return nil, fmt.Errorf("%s: the header names column %q twice (columns %d and %d)", path, c, at+1, i+1)
			}
			at = i
		}
		if at < 0 {
			return nil, missingColumn(path, c, s.header)
		}
		s.idx = append(s.idx, at)
	}
	return s, nil
}

// readError names the file, line and row of an error of the csv.Reader.
func (s *csvSource) readError(err error, rec []string) error {
	var pe *csv.ParseError
	switch {
	case errors.Is(err, errRowTooLong):
		return fmt.Errorf("%s:%d: row %d is longer than %d bytes (a quote left open?): raise Spec.MaxRowBytes if it is not",
			s.path, s.ended+1, s.row, s.max)
	case errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount):
		return fmt.Errorf("%s:%d: row %d has %d fields, the header has %d (%s): quote fields that hold a %q",
			s.path, pe.StartLine, s.row, len(rec), len(s.header), quoteAll(s.header), s.r.Comma)
	case errors.As(err, &pe):
		what := "the header"
		if s.row > 0 {
			what = fmt.Sprintf("row %d", s.row)
		}
		return fmt.Errorf("%s:%d: %s: line %d, byte %d: %v", s.path, pe.StartLine, what, pe.Line, pe.Column, pe.Err)
	}
	return fmt.Errorf("%s: after row %d: %w", s.path, s.row, err)
}

func (s *csvSource) next(vals []value) (where, error) {
	s.row++
	rec, err := s.r.Read()
	if err == io.EOF {
		return where{}, io.EOF
	} else if err != nil {
		return where{}, s.readError(err, rec)
	}
	s.recordEnd(rec)
	line, _ := s.r.FieldPos(0)
	for i, at := range s.idx {
		vals[i] = value{text: rec[at], kind: kindString}
	}
	return where{line: line, row: s.row}, nil
}

// recordEnd notes where the record just read ends, for the row limit and its error.
func (s *csvSource) recordEnd(rec []string) {
	s.lim.start = s.r.InputOffset()
	last, _ := s.r.FieldPos(len(rec) - 1)
	s.ended = last + strings.Count(rec[len(rec)-1], "\n")
}

func (s *csvSource) close() error {
	if s.f == nil {
		return nil
	}
	return s.f.Close()
}

func quoteAll(names []string) string {
	var b bytes.Buffer
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", n)
	}
	return b.String()
}
