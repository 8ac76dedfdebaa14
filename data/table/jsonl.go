package table

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
)

// jsonLinesSource reads a file of one JSON object per line. Blank lines are skipped (they
// still count in line numbers).
type jsonLinesSource struct {
	path string
	f    *os.File
	sc   *bufio.Scanner
	cols []string
	line int
	row  int
	max  int
	obj  map[string]json.RawMessage
}

func openJSONLines(path string, cols []string, spec Spec) (source, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	s, err := newJSONLines(f, path, cols, spec)
	if err != nil {
		f.Close()
		return nil, err
	}
	s.f = f
	return s, nil
}

// newJSONLines reads the first object of r, which must have the columns cols, and returns the
// source positioned before it.
func newJSONLines(r io.Reader, path string, cols []string, spec Spec) (*jsonLinesSource, error) {
	s := &jsonLinesSource{path: path, cols: cols, max: spec.maxRowBytes()}
	s.sc = bufio.NewScanner(r)
	s.sc.Buffer(make([]byte, 0, min(64<<10, s.max+2)), s.max+2) // +2: the "\r\n" of the longest line
	first, err := s.object()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: no rows (want one JSON object per line)", path)
	} else if err != nil {
		return nil, err
	}
	for _, c := range cols {
		if _, ok := first[c]; !ok {
			return nil, missingColumn(path, c, sortedKeys(first))
		}
	}
	s.obj = first // the first row, handed out by the first next
	return s, nil
}

// object reads the next non-blank line as a JSON object.
func (s *jsonLinesSource) object() (map[string]json.RawMessage, error) {
	for s.sc.Scan() {
		s.line++
		b := s.sc.Bytes()
		if s.line == 1 {
			b = bytes.TrimPrefix(b, []byte("\ufeff"))
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		s.row++
		if s.row == 1 && b[0] == '[' {
			return nil, fmt.Errorf("%s:%d: a JSON array: want JSON Lines, one object per line (jq -c '.[]' converts)", s.path, s.line)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
			if err == nil {
				err = errors.New("null")
			}
			return nil, fmt.Errorf("%s:%d: row %d is not a JSON object: %v", s.path, s.line, s.row, err)
		}
		return obj, nil
	}
	if err := s.sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("%s:%d: line longer than %d bytes (raise Spec.MaxRowBytes)", s.path, s.line+1, s.max)
	} else if err != nil {
		return nil, fmt.Errorf("%s: after line %d: %w", s.path, s.line, err)
	}
	return nil, io.EOF
}

func (s *jsonLinesSource) next(vals []value) (where, error) {
	obj := s.obj
	s.obj = nil
	if obj == nil {
		var err error
		if obj, err = s.object(); err != nil {
			return where{}, err
		}
	}
	w := where{line: s.line, row: s.row}
	for i, c := range s.cols {
		raw, ok := obj[c]
		if !ok {
			return w, rowError(s.path, w, c, "the row lacks this column (it has: %s)", quoteAll(sortedKeys(obj)))
		}
		vals[i] = jsonValue(raw)
	}
	return w, nil
}

// jsonValue reads one value of an object: a string, an integer, a boolean, null, or another.
func jsonValue(raw json.RawMessage) value {
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return value{text: s, kind: kindString}
		}
	case 'n':
		return value{text: "null", kind: kindNull}
	case 't', 'f':
		return value{text: string(raw), kind: kindBool}
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if v, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			return value{text: strconv.FormatInt(v, 10), kind: kindInt}
		}
		if _, err := strconv.ParseFloat(string(raw), 64); err == nil {
			return value{text: string(raw), kind: kindFloat}
		}
	case '[':
		var elems []json.RawMessage
		if json.Unmarshal(raw, &elems) == nil {
			list := value{text: string(raw), kind: kindList, items: make([]value, len(elems))}
			for i, e := range elems {
				if list.items[i] = jsonValue(e); list.items[i].kind == kindList {
					return value{text: string(raw), kind: kindOther} // a nested list
				}
			}
			return list
		}
	}
	return value{text: string(raw), kind: kindOther}
}

func sortedKeys(obj map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (s *jsonLinesSource) close() error {
	if s.f == nil {
		return nil
	}
	return s.f.Close()
}
