package text

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"github.com/goaccel/goaccel/data"
	"io"
	"iter"
	"os"
	"strings"
	"sync"
)

// A LineFile is a data.Stream: data.NewStreamLoader serves it.
var _ data.Stream[int] = (*LineFile[int])(nil)

// DefaultMaxLineBytes is the longest line OpenLines accepts unless LineOptions.MaxLineBytes
// says otherwise.
const DefaultMaxLineBytes = 16 << 20

// maxSkipExamples is how many skipped lines Skips.First keeps.
const maxSkipExamples = 10

// LineOptions tells OpenLines and ReadLabeledFiles how to read a text file.
// The zero value reads strict UTF-8, skips no header and fails on the first bad line.
type LineOptions struct {
	// SkipHeader is the number of lines to skip at the start of the file (header lines). They
	// still count in line numbers.
	SkipHeader int
	// SkipMalformed skips lines that the parse function rejects, that are not valid in the
	// file's encoding, or that are empty, and counts them (see Skips). By default the first
	// such line ends the pass with an error naming file:line and the problem.
	SkipMalformed bool
	// SkipEmpty skips empty lines (and counts them) but still fails on other malformed lines.
	SkipEmpty bool
	// MaxLineBytes is the longest line accepted; 0 means DefaultMaxLineBytes (16 MiB). Lines
	// are read into a buffer that grows only as far as the longest line.
	MaxLineBytes int
	// Encoding is the file's character encoding (EncodingUTF8 by default).
	Encoding Encoding
}

// Skips counts the lines dropped by SkipMalformed or SkipEmpty, so no line disappears silently.
type Skips struct {
	Count int      // number of lines skipped
	First []string // the first few of them, as "file:line: problem"
}

func (s *Skips) add(loc string, problem string) {
	s.Count++
	if len(s.First) < maxSkipExamples {
		s.First = append(s.First, loc+": "+problem)
	}
}

func (s *Skips) merge(o Skips) {
	s.Count += o.Count
	for _, f := range o.First {
		if len(s.First) < maxSkipExamples {
			s.First = append(s.First, f)
		}
	}
}

// LineFile is a streaming dataset backed by a text file with one example per line. The file
// is read with a buffered reader at every pass, never loaded whole, so files larger than
// memory work. Create it with OpenLines.
type LineFile[T any] struct {
	path  string
	parse func(line string) (T, error)
	opts  LineOptions

	mu    sync.Mutex
	skips Skips
}

// OpenLines returns the lines of the file at path as a Stream, each turned into an example by
// parse (which gets the line without its end-of-line characters, decoded to UTF-8; see ParseTSV
// and LabeledTSV for tab-separated files). parse must be safe for concurrent use if several
// passes run at once.
//
// OpenLines checks that the file exists; with EncodingAuto it also reads it once to choose the
// encoding. Every pass reads the file again, so path must name a file that can be read more
// than once: not a named pipe (ReadLabeledFiles reads each file once and accepts pipes). Lines
// end at LF, CRLF or a lone CR. Errors met while reading (a malformed line, a line longer than
// MaxLineBytes) end the pass and name file:line.
func OpenLines[T any](path string, parse func(line string) (T, error), opts LineOptions) (*LineFile[T], error) {
	if parse == nil {
		return nil, fmt.Errorf("text: OpenLines(%s): nil parse function", path)
	}
	if opts.SkipHeader < 0 || opts.MaxLineBytes < 0 {
		return nil, fmt.Errorf("text: OpenLines(%s): SkipHeader = %d and MaxLineBytes = %d, want both >= 0",
			path, opts.SkipHeader, opts.MaxLineBytes)
	}
	if err := checkReadable(path); err != nil {
		return nil, err
	}
	if opts.Encoding == EncodingAuto {
		s, err := sniffEncoding(path, opts)
		if err != nil {
			return nil, err
		}
		if opts.Encoding, err = resolveEncoding([]*sniffed{s}); err != nil {
			return nil, err
		}
	}
	return &LineFile[T]{path: path, parse: parse, opts: opts}, nil
}

// checkReadable checks that path exists and is not a directory. It does not open the file, so a
// named pipe is opened only once, by the pass that reads it.
func checkReadable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("text: %w", err)
	}
	if st.IsDir() {
		return fmt.Errorf("text: %s is a directory, not a text file", path)
	}
	return nil
}

// All reads the file from the start, yielding one example per line (after the header lines
// and, if asked for, the skipped ones). An error ends the pass.
func (f *LineFile[T]) All() iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		var sk Skips
		defer func() {
			f.mu.Lock()
			f.skips = sk
			f.mu.Unlock()
		}()
		fh, err := os.Open(f.path)
		if err != nil {
			yield(zero, fmt.Errorf("text: %w", err))
			return
		}
		defer fh.Close()
		err = scanLines(fh, f.path, f.opts, f.parse, &sk, func(v T) bool { return yield(v, nil) })
		if err != nil {
			yield(zero, err)
		}
	}
}

// Skipped reports the lines skipped by the most recent pass (complete or not).
func (f *LineFile[T]) Skipped() Skips {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Skips{Count: f.skips.Count, First: append([]string(nil), f.skips.First...)}
}

func newLineScanner(r io.Reader, opts LineOptions) *bufio.Scanner {
	maxLine := opts.MaxLineBytes
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	sc := bufio.NewScanner(r)
	// +2 leaves room for the "\r\n" that ends the longest accepted line.
	sc.Buffer(make([]byte, 0, min(64<<10, maxLine+2)), maxLine+2)
	sc.Split(splitLines)
	return sc
}

// splitLines is a bufio.SplitFunc that ends a line at LF, CRLF or a lone CR (the line end of
// files written on classic Mac OS), so that no line ending makes a whole file one line. The
// line end is not part of the token.
func splitLines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		switch {
		case data[i] == '\n':
			return i + 1, data[:i], nil
		case i+1 < len(data) && data[i+1] == '\n':
			return i + 2, data[:i], nil
		case i+1 < len(data) || atEOF:
			return i + 1, data[:i], nil
		default:
			return 0, nil, nil // a CR at the end of the data read so far: is an LF next?
		}
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}

func scanError(name string, lastLine int, opts LineOptions, err error) error {
	if errors.Is(err, bufio.ErrTooLong) {
		maxLine := opts.MaxLineBytes
		if maxLine <= 0 {
			maxLine = DefaultMaxLineBytes
		}
		return fmt.Errorf("%s:%d: line longer than %d bytes (raise LineOptions.MaxLineBytes)", name, lastLine+1, maxLine)
	}
	return fmt.Errorf("%s: reading after line %d: %w", name, lastLine, err)
}

var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// readRawLines reads r once, line by line, and hands each line after the header to fn with its
// line number (from 1), undecoded; b is valid only during the call. fn returns false to stop.
func readRawLines(r io.Reader, name string, opts LineOptions, fn func(num int, b []byte) (bool, error)) error {
	sc := newLineScanner(r, opts)
	num := 0
	for sc.Scan() {
		num++
		if num <= opts.SkipHeader {
			continue
		}
		if more, err := fn(num, sc.Bytes()); err != nil || !more {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return scanError(name, num, opts, err)
	}
	return nil
}

// parseLine decodes and parses line num of file name and applies the malformed-line policy:
// ok is false for a skipped line (counted in sk), err is set for a line that ends the pass.
func parseLine[T any](name string, num int, b []byte, opts LineOptions, parse func(string) (T, error),
	sk *Skips) (v T, ok bool, err error) {
	if num == 1 && opts.Encoding != EncodingWindows1252 {
		b = bytes.TrimPrefix(b, utf8BOM)
	}
	loc := func() string { return fmt.Sprintf("%s:%d", name, num) }
	if len(b) == 0 {
		if opts.SkipEmpty || opts.SkipMalformed {
			sk.add(loc(), "empty line")
			return v, false, nil
		}
		return v, false, fmt.Errorf("%s: empty line (set LineOptions.SkipEmpty to skip and count empty lines)", loc())
	}
	text, err := decodeLine(b, opts.Encoding)
	if err == nil {
		v, err = parse(text)
	}
	if err != nil {
		if opts.SkipMalformed {
			sk.add(loc(), err.Error())
			return v, false, nil
		}
		return v, false, fmt.Errorf("%s: %w", loc(), err)
	}
	return v, true, nil
}

// scanLines is the loop behind LineFile.All: it reads r line by line, decodes and parses each
// line, applies the malformed-line policy and hands the examples to emit until it returns false.
func scanLines[T any](r io.Reader, name string, opts LineOptions, parse func(string) (T, error),
	sk *Skips, emit func(T) bool) error {
	return readRawLines(r, name, opts, func(num int, b []byte) (bool, error) {
		v, ok, err := parseLine(name, num, b, opts, parse, sk)
		if err != nil || !ok {
			return err == nil, err
		}
		return emit(v), nil
	})
}

// ParseTSV splits a line of a tab-separated file into its fields. TSV has no quoting: every
// tab separates two fields. With numFields > 0 the line must have exactly that many fields;
// with numFields <= 0 any count is accepted. The fields joined with tabs give back the line.
func ParseTSV(line string, numFields int) ([]string, error) {
	if numFields > 0 {
		if got := strings.Count(line, "\t") + 1; got != numFields {
			return nil, fmt.Errorf("got %d tab-separated fields, want %d", got, numFields)
		}
	}
	return strings.Split(line, "\t"), nil
}
