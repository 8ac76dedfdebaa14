package table

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/text"
)

// TagSpec says how LoadTagged reads token-classification files.
type TagSpec struct {
	// WordsColumn and TagsColumn are the list columns of JSON Lines files (run_ner.py's
	// --text_column_name and --label_column_name; empty: "tokens" and "ner_tags"). CoNLL
	// files have no columns.
	WordsColumn, TagsColumn string
	// Labels is the tag map; nil: the sorted tags of the files, as run_ner.py builds it.
	// Validation files take the training files' map.
	Labels *Labels
	// MaxRowBytes bounds a line (0: DefaultMaxRowBytes).
	MaxRowBytes int
}

// LoadTagged reads the sentences of token-classification files (a comma-separated list of
// paths and globs, see Glob) into memory, with the tag map (spec.Labels, or the sorted tags
// of these files). The format is the extension's: .conll, .txt, .bio and .iob are CoNLL
// (one "word tag" line per word, a blank line between sentences, "-DOCSTART-" lines
// skipped; CoNLL-2003's four fields "word POS chunk tag" are read too, the last one being
// the tag); .jsonl and .json (JSON Lines) and .parquet (list columns, as the Hub's
// conversions of conll2003 have) hold a list of words and a list of tags (strings, or
// integers numbered by spec.Labels) per row. Every tag must be O, B-TYPE or I-TYPE (IOB2;
// an I- after O is accepted, as conlleval and seqeval's default mode read it: it starts an
// entity). A line with another number of fields, a tag outside the scheme, words and tags of
// different lengths, an empty sentence: errors naming the file and the line (Parquet: the row
// group and row).
func LoadTagged(files string, spec TagSpec) (data.Slice[text.Tagged], *Labels, error) {
	paths, err := Glob(files)
	if err != nil {
		return nil, nil, err
	}
	if spec.WordsColumn == "" {
		spec.WordsColumn = "tokens"
	}
	if spec.TagsColumn == "" {
		spec.TagsColumn = "ner_tags"
	}
	if spec.Labels != nil {
		for _, name := range spec.Labels.Names() {
			if err := checkTag(name); err != nil {
				return nil, nil, fmt.Errorf("table: TagSpec.Labels: %w", err)
			}
		}
	}
	var sentences []taggedNames
	for _, path := range paths {
		var got []taggedNames
		switch strings.ToLower(filepath.Ext(path)) {
		case ".conll", ".txt", ".bio", ".iob":
			got, err = readCoNLL(path, spec)
		case ".jsonl", ".json", ".parquet":
			got, err = readTaggedColumns(path, spec)
		default:
			err = fmt.Errorf("table: %s: unknown extension %q for token classification: want .conll, .txt, .bio, .iob "+
				"(CoNLL), or .jsonl, .json, .parquet (a %q and a %q list per row)", path, filepath.Ext(path), spec.WordsColumn, spec.TagsColumn)
		}
		if err != nil {
			return nil, nil, err
		}
		sentences = append(sentences, got...)
	}
	if len(sentences) == 0 {
		return nil, nil, fmt.Errorf("table: %s: no sentences", strings.Join(paths, ", "))
	}
	labels := spec.Labels
	if labels == nil {
		set := map[string]bool{}
		for _, s := range sentences {
			for _, tag := range s.tags {
				set[tag] = true
			}
		}
		labels = sortedLabels(set)
	}
	out := make(data.Slice[text.Tagged], len(sentences))
	for i, s := range sentences {
		ex := text.Tagged{Words: s.words, Tags: make([]int, len(s.tags))}
		for j, tag := range s.tags {
			id, ok := labels.ID(tag)
			if !ok {
				return nil, nil, fmt.Errorf("%s: tag %q of word %q is not in the tag map (%s)", s.at[j], tag, s.words[j], labels)
			}
			ex.Tags[j] = id
		}
		out[i] = ex
	}
	return out, labels, nil
}

// taggedNames is a sentence as read, before its tags are numbered, with where each word is.
type taggedNames struct {
	path        string
	words, tags []string
	at          []string // each word's place, as errors name it: "file:line" (CoNLL) or rowError's
}

// checkTag refuses a tag outside IOB2: O, B-TYPE or I-TYPE.
func checkTag(tag string) error {
	if tag == "O" {
		return nil
	}
	if (strings.HasPrefix(tag, "B-") || strings.HasPrefix(tag, "I-")) && len(tag) > 2 {
		return nil
	}
	return fmt.Errorf("tag %q is not O, B-TYPE or I-TYPE (IOB2)", tag)
}

// readCoNLL reads a CoNLL file's sentences.
func readCoNLL(path string, spec TagSpec) ([]taggedNames, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	max := spec.MaxRowBytes
	if max <= 0 {
		max = DefaultMaxRowBytes
	}
	sc.Buffer(make([]byte, 0, 64<<10), max+2)
	var out []taggedNames
	cur := taggedNames{path: path}
	flush := func() {
		if len(cur.words) > 0 {
			out = append(out, cur)
		}
		cur = taggedNames{path: path}
	}
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "\ufeff"))
		if s == "" {
			flush()
			continue
		}
		fields := strings.Fields(s)
		if fields[0] == "-DOCSTART-" {
			flush()
			continue
		}
		var tag string
		switch len(fields) {
		case 2:
			tag = fields[1]
		case 4: // CoNLL-2003: word, part of speech, chunk, entity
			tag = fields[3]
		default:
			return nil, fmt.Errorf("%s:%d: %d fields: want \"word tag\" (2), or CoNLL-2003's \"word POS chunk tag\" (4)", path, line, len(fields))
		}
		if err := checkTag(tag); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		cur.words, cur.tags, cur.at = append(cur.words, fields[0]), append(cur.tags, tag), append(cur.at, fmt.Sprintf("%s:%d", path, line))
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("%s:%d: line longer than %d bytes", path, line+1, max)
	} else if err != nil {
		return nil, fmt.Errorf("%s: after line %d: %w", path, line, err)
	}
	flush()
	return out, nil
}

// readTaggedColumns reads the sentences of a JSON Lines or Parquet file: a list of words and
// a list of tags per row.
func readTaggedColumns(path string, spec TagSpec) ([]taggedNames, error) {
	cols := []string{spec.WordsColumn, spec.TagsColumn}
	src, err := openSource(path, cols, Spec{MaxRowBytes: spec.MaxRowBytes})
	if err != nil {
		return nil, err
	}
	defer src.close()
	var out []taggedNames
	vals := make([]value, 2)
	for {
		w, err := src.next(vals)
		if err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		words, tags := vals[0], vals[1]
		for i, v := range vals {
			if v.kind != kindList {
				return nil, rowError(path, w, cols[i], "%s is not a list", v.text)
			}
		}
		if len(words.items) == 0 {
			return nil, rowError(path, w, cols[0], "an empty sentence")
		}
		if len(words.items) != len(tags.items) {
			return nil, rowError(path, w, cols[1], "%d tags for %d words (%s)", len(tags.items), len(words.items), cols[0])
		}
		s := taggedNames{path: path, words: make([]string, len(words.items)), tags: make([]string, len(tags.items)),
			at: slices.Repeat([]string{fmt.Sprintf("%s:%s, column %q", path, w, cols[1])}, len(words.items))}
		for i, v := range words.items {
			if v.kind != kindString || strings.TrimSpace(v.text) == "" {
				return nil, rowError(path, w, cols[0], "word %d is %s: want a non-empty string", i+1, v.text)
			}
			s.words[i] = v.text
		}
		for i, v := range tags.items {
			switch v.kind {
			case kindString:
				if err := checkTag(v.text); err != nil {
					return nil, rowError(path, w, cols[1], "word %d: %v", i+1, err)
				}
			case kindInt:
				if spec.Labels == nil {
					return nil, rowError(path, w, cols[1], "tag %s is an integer: give the tag names (TagSpec.Labels, "+
						"the data set's ClassLabel names in id order), or write the tags as strings", v.text)
				}
				id, _ := canonicalInt(v.text)
				if id < 0 || int(id) >= spec.Labels.Len() {
					return nil, rowError(path, w, cols[1], "tag id %s is outside the %d tags (%s)", v.text, spec.Labels.Len(), spec.Labels)
				}
				v.text = spec.Labels.Names()[id]
			default:
				return nil, rowError(path, w, cols[1], "tag %s is not a string or an integer", v.text)
			}
			s.tags[i] = v.text
		}
		out = append(out, s)
	}
}
