package text

import (
	"bytes"
	"fmt"
	"github.com/goaccel/goaccel/data"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Labeled is one example of text classification: a text and its class, or, for the task
// shapes whose targets are numbers, its values.
type Labeled struct {
	Text string
	// Label is the class (single-label classification); 0 when Values is set.
	Label int
	// Values are the targets when they are numbers rather than one class: one value for
	// regression, or one 0/1 flag per class for multi-label classification (the classes the
	// text has are 1, as transformers' run_classification.py writes them). Nil for
	// single-label classification. Every example of a batch has as many.
	Values []float32
}

// LabeledFile is a text file whose lines all belong to one class, as in the sentiment dataset's
// pair of files (rt-polarity.pos, rt-polarity.neg).
type LabeledFile struct {
	Path  string
	Label int
}

// ReadLabeledFiles reads files with one text per line, the label of each line being its
// file's, into memory: first all the examples of files[0] in line order, then those of
// files[1], and so on. Surrounding whitespace is trimmed from each text. Each file is opened
// and read exactly once, so named pipes (a shell's <(zcat file.gz)) work. Lines end at LF,
// CRLF or a lone CR (classic Mac OS files), so no line ending turns a file into one example.
//
// Lines are treated as opts says (header, encoding, malformed-line policy); a line that is
// empty, or blank once trimmed, is malformed: an error naming file:line by default, or skipped
// and counted in the returned Skips with SkipMalformed or SkipEmpty. With EncodingAuto, the
// lines of all files are looked at before any is decoded, and the files must agree: all UTF-8
// (ASCII counts as both), or all Windows-1252/Latin-1, which is then decoded in every file. A
// UTF-8 file with non-ASCII text next to a file that is not valid UTF-8 is an error naming
// both files and lines.
//
// A file without any example, or a missing or unreadable file, is an error.
func ReadLabeledFiles(files []LabeledFile, opts LineOptions) (data.Slice[Labeled], Skips, error) {
	var skips Skips
	if len(files) == 0 {
		return nil, skips, fmt.Errorf("text: ReadLabeledFiles: no files given")
	}
	for _, f := range files {
		if err := checkReadable(f.Path); err != nil {
			return nil, skips, err
		}
	}
	// Read every file once, keeping its raw lines: the encoding is decided over all files
	// before any line is decoded.
	read := make([]rawFile, len(files))
	found := make([]*sniffed, len(files))
	for i, f := range files {
		var err error
		if read[i], err = readRawFile(f.Path, opts); err != nil {
			return nil, skips, err
		}
		found[i] = &sniffed{path: f.Path}
		for j, b := range read[i].lines {
			found[i].add(read[i].nums[j], b)
		}
	}
	if opts.Encoding == EncodingAuto {
		var err error
		if opts.Encoding, err = resolveEncoding(found); err != nil {
			return nil, skips, err
		}
	}
	var out data.Slice[Labeled]
	for i, f := range files {
		parse := func(line string) (Labeled, error) {
			text := strings.TrimSpace(line)
			if text == "" {
				return Labeled{}, fmt.Errorf("blank line (only whitespace)")
			}
			return Labeled{Text: text, Label: f.Label}, nil
		}
		before := len(out)
		for j, b := range read[i].lines {
			ex, ok, err := parseLine(f.Path, read[i].nums[j], b, opts, parse, &skips)
			if err != nil {
				return nil, skips, err
			}
			if ok {
				out = append(out, ex)
			}
		}
		if len(out) == before {
			return nil, skips, fmt.Errorf("text: %s has no examples (label %d)", f.Path, f.Label)
		}
	}
	return out, skips, nil
}

// rawFile holds the undecoded lines of a file after its header, with their line numbers.
type rawFile struct {
	lines [][]byte
	nums  []int
}

// readRawFile opens path once and reads all its lines.
func readRawFile(path string, opts LineOptions) (rawFile, error) {
	var rf rawFile
	fh, err := os.Open(path)
	if err != nil {
		return rf, fmt.Errorf("text: %w", err)
	}
	defer fh.Close()
	err = readRawLines(fh, path, opts, func(num int, b []byte) (bool, error) {
		rf.lines, rf.nums = append(rf.lines, bytes.Clone(b)), append(rf.nums, num)
		return true, nil
	})
	return rf, err
}

// LoadPolarity reads the pair-of-files layout of the sentence polarity dataset: one review
// snippet per line, label 1 for every line of pos and 0 for every line of neg; the positive
// examples come first. The encoding is detected (EncodingAuto): the original rt-polarity
// v1.0 files are Latin-1/Windows-1252 and are decoded as such, UTF-8 copies are read as they
// are, and a pair with unequal encodings is an error. Empty lines are errors naming file:line;
// call ReadLabeledFiles with SkipEmpty or SkipMalformed to skip and count them instead.
func LoadPolarity(pos, neg string) (data.Slice[Labeled], error) {
	ds, _, err := ReadLabeledFiles([]LabeledFile{{Path: pos, Label: 1}, {Path: neg, Label: 0}},
		LineOptions{Encoding: EncodingAuto})
	return ds, err
}

// LoadPolarityDir is LoadPolarity on the folder layout in which the dataset is distributed:
// dir holds exactly one <name>.pos and one <name>.neg (rt-polarity.pos and rt-polarity.neg).
func LoadPolarityDir(dir string) (data.Slice[Labeled], error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("text: LoadPolarityDir: %s is not a readable folder", dir)
	}
	pos, _ := filepath.Glob(filepath.Join(dir, "*.pos"))
	neg, _ := filepath.Glob(filepath.Join(dir, "*.neg"))
	if len(pos) != 1 || len(neg) != 1 {
		return nil, fmt.Errorf("text: LoadPolarityDir: %s: want one *.pos and one *.neg file, found %d and %d",
			dir, len(pos), len(neg))
	}
	return LoadPolarity(pos[0], neg[0])
}

// LabeledTSV returns a parse function for OpenLines that reads a Labeled example from a
// tab-separated line: the text in column textCol, the integer label in column labelCol
// (columns count from 0). Lines may have more columns than these; fewer is an error.
func LabeledTSV(textCol, labelCol int) func(line string) (Labeled, error) {
	need := max(textCol, labelCol) + 1
	return func(line string) (Labeled, error) {
		if textCol < 0 || labelCol < 0 {
			return Labeled{}, fmt.Errorf("LabeledTSV: negative column (text %d, label %d)", textCol, labelCol)
		}
		fields, err := ParseTSV(line, 0)
		if err != nil {
			return Labeled{}, err
		}
		if len(fields) < need {
			return Labeled{}, fmt.Errorf("got %d tab-separated fields, want at least %d (text in column %d, label in column %d)",
				len(fields), need, textCol, labelCol)
		}
		label, err := strconv.Atoi(strings.TrimSpace(fields[labelCol]))
		if err != nil {
			return Labeled{}, fmt.Errorf("column %d: label %q is not an integer", labelCol, fields[labelCol])
		}
		return Labeled{Text: fields[textCol], Label: label}, nil
	}
}
