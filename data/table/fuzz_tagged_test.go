package table

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkTagged reads path with LoadTagged: no panic; an error names the file; every sentence
// has as many tags as words, each a class of the map.
func checkTagged(t *testing.T, path string) {
	t.Helper()
	sentences, labels, err := LoadTagged(path, TagSpec{MaxRowBytes: 1 << 12})
	if err != nil {
		if !strings.Contains(err.Error(), path) {
			t.Fatalf("error does not name the file %s: %v", path, err)
		}
		return
	}
	for i := range sentences.Len() {
		s, err := sentences.Get(i)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Words) == 0 || len(s.Words) != len(s.Tags) {
			t.Fatalf("sentence %d: %d words, %d tags", i, len(s.Words), len(s.Tags))
		}
		for _, tag := range s.Tags {
			if tag < 0 || tag >= labels.Len() {
				t.Fatalf("sentence %d: tag %d outside the map of %d", i, tag, labels.Len())
			}
		}
	}
}

// FuzzCoNLL reads arbitrary bytes as a CoNLL file (no panic, errors name the file, sentences
// well formed). Seeds: CoNLL-2003's layout, two-field lines, and broken lines.
func FuzzCoNLL(f *testing.F) {
	f.Add([]byte("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\nGerman JJ B-NP B-MISC\n\nPeter NNP B-NP B-PER\n"))
	f.Add([]byte("a O\nb B-PER\nc I-PER\n\n\nd I-LOC\n"))
	f.Add([]byte("a O\nb NN O\n"))
	f.Add([]byte("\ufeffa\tO\r\nb\tE-PER\r\n"))
	f.Add([]byte("\n-DOCSTART- O\n\n"))
	f.Fuzz(func(t *testing.T, content []byte) {
		checkTagged(t, writeFile(t, t.TempDir(), "fuzz.conll", string(content)))
	})
}

// FuzzParquet reads arbitrary bytes as a Parquet file, for classification (Open) and for
// token classification (LoadTagged): no panic, a panic of parquet-go is an error naming the
// file, examples well formed. Seeds: files that parquet-go writes, of both kinds.
func FuzzParquet(f *testing.F) {
	dir := f.TempDir()
	type small struct {
		Text  string `parquet:"premise"`
		Label int32  `parquet:"label"`
	}
	var rows []small
	for i := range 6 {
		rows = append(rows, small{Text: fmt.Sprintf("premise %d", i), Label: int32(i % 2)})
	}
	for _, path := range []string{writeRows(f, dir, "small.parquet", rows, 4),
		writeRows(f, dir, "tagged.parquet", []sentenceRow{{[]string{"EU", "rejects"}, []string{"B-ORG", "O"}}, {[]string{"Peter"}, []string{"B-PER"}}})} {
		raw, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	if raw, err := os.ReadFile(filepath.Join("testdata", "parquet-go-panic.parquet")); err == nil {
		f.Add(raw) // TestParquetPanicIsAnError's
	}
	f.Add([]byte("PAR1PAR1"))
	f.Add([]byte("PAR1\x00\x00\x00\x00\x04\x00\x00\x00PAR1"))
	f.Fuzz(func(t *testing.T, content []byte) {
		path := filepath.Join(t.TempDir(), "fuzz.parquet")
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		checkPass(t, path, Spec{TextColumns: []string{"premise"}, LabelColumn: "label", MaxRowBytes: 1 << 12})
		checkTagged(t, path)
	})
}

// TestParquetPanicIsAnError pins a file (a corrupted token-classification Parquet file that a
// mutation search found) on which parquet-go panics (a slice out of range while decoding a
// page): LoadTagged returns an error naming the file, the row group and the column instead.
func TestParquetPanicIsAnError(t *testing.T) {
	path := filepath.Join("testdata", "parquet-go-panic.parquet")
	_, _, err := LoadTagged(path, TagSpec{})
	for _, want := range []string{path, "row group 0", `column "tokens"`, "the Parquet reader panicked"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadTagged(%s): %v; want an error with %q", path, err, want)
		}
	}
}
