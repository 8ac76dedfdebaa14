package table

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"github.com/goaccel/goaccel/data/text"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkPass reads every row of one file through the source of its format and the same file
// through Open and All: no panic; an error names the file; an example has a non-blank text and
// a label of the map. It returns the number of examples and the error that ended the pass.
func checkPass(t *testing.T, path string, spec Spec) (int, error) {
	t.Helper()
	tb, err := Open(spec, path)
	if err != nil {
		if !strings.Contains(err.Error(), path) {
			t.Fatalf("Open error does not name the file %s: %v", path, err)
		}
		return 0, err
	}
	n := 0
	for ex, err := range tb.All() {
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("pass error does not name the file %s: %v", path, err)
			}
			return n, err
		}
		if strings.TrimSpace(ex.Text) == "" || !utf8.ValidString(ex.Text) || !wellLabeled(ex, tb) {
			t.Fatalf("bad example %+v (%s, labels %v)", ex, tb.Problem(), tb.Labels())
		}
		n++
	}
	return n, nil
}

// FuzzCSV reads arbitrary bytes as a CSV file (no panic, errors name the file, examples are
// well formed), and checks the reader against encoding/csv's writer: records written from the
// fuzzed fields read back as the same texts and labels, or as an error naming the row and
// column of the first empty text or label.
func FuzzCSV(f *testing.F) {
	f.Add([]byte("text,label\nhello,pos\n\"a, \"\"b\"\"\",neg\n"), "x", "y\nz", byte(','))
	f.Add([]byte("\ufefftext\tlabel\r\nx\t1\r\ny\t2\t3\r\n"), " ", "1", byte('\t'))
	f.Add([]byte("text;label\n\"open;1\n"), "a\"b", "", byte(';'))
	f.Add([]byte(""), "", "\r", byte(0))
	f.Fuzz(func(t *testing.T, content []byte, text1, label1 string, comma byte) {
		dir := t.TempDir()
		spec := Spec{TextColumns: []string{"text"}, LabelColumn: "label", MaxRowBytes: 1 << 12}
		if comma == ',' || comma == '\t' || comma == ';' || comma == '|' {
			spec.Comma = rune(comma)
		}
		path := filepath.Join(dir, "fuzz.csv")
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		checkPass(t, path, spec)

		// Round trip: a header, a fixed row, the fuzzed row.
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		if spec.Comma != 0 {
			w.Comma = spec.Comma
		}
		_ = w.WriteAll([][]string{{"text", "label"}, {"fixed", "a"}, {text1, label1}})
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		n, err := checkPass(t, path, spec)
		if buf.Len() > 1<<12 {
			return // longer than MaxRowBytes
		}
		if strings.TrimSpace(text1) == "" || label1 == "" || !utf8.ValidString(text1) {
			if err == nil || !strings.Contains(err.Error(), "row 2, column") {
				t.Fatalf("text %q, label %q: error %v, want one naming row 2 and the column", text1, label1, err)
			}
		} else if err != nil || n != 2 {
			t.Fatalf("good row (text %q, label %q): %d examples, error %v", text1, label1, n, err)
		}
	})
}

// FuzzJSONLines reads arbitrary bytes as a JSON Lines file (no panic, errors name the file,
// examples are well formed), and checks the reader against encoding/json: an object encoded
// from the fuzzed text and label reads back as them.
func FuzzJSONLines(f *testing.F) {
	f.Add([]byte(`{"text": "a", "label": 1}`+"\n\n"+`{"text": "b", "label": "x"}`), "a", "1", true)
	f.Add([]byte(`[{"text": "a"}]`), "é", "0", false)
	f.Add([]byte("\ufeff{\"text\":\"\\u00e9\",\"label\":-2}\r\n{\"text\":null}"), "", "", true)
	f.Add([]byte(`{"text": "a", "label": 1.5}`), " \t", "2", false)
	f.Fuzz(func(t *testing.T, content []byte, text1, label1 string, intLabel bool) {
		dir := t.TempDir()
		spec := Spec{TextColumns: []string{"text"}, LabelColumn: "label", MaxRowBytes: 1 << 12}
		path := filepath.Join(dir, "fuzz.jsonl")
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		checkPass(t, path, spec)

		var label any = label1
		if intLabel {
			label = len(label1)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		_ = enc.Encode(map[string]any{"text": "fixed", "label": label})
		_ = enc.Encode(map[string]any{"text": text1, "label": label, "extra": []int{1}})
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		tb, err := Open(spec, path)
		var got []string
		if err == nil {
			for ex, err2 := range tb.All() {
				if err = err2; err != nil {
					break
				}
				got = append(got, ex.Text)
			}
		}
		if buf.Len() > 1<<12 {
			return // longer than MaxRowBytes
		}
		// The fixed first row carries the same label: an empty one is row 1's error.
		if !intLabel && label1 == "" {
			if err == nil || !strings.Contains(err.Error(), `row 1, column "label"`) {
				t.Fatalf("label %q: error %v, want one naming row 1 and the label column", label1, err)
			}
			return
		}
		if strings.TrimSpace(text1) == "" {
			if err == nil || !strings.Contains(err.Error(), "row 2, column") {
				t.Fatalf("text %q, label %v: error %v, want one naming row 2 and the column", text1, label, err)
			}
			return
		}
		if err != nil || len(got) != 2 || tb.Labels().Len() != 1 || (utf8.ValidString(text1) && got[1] != text1) {
			t.Fatalf("good row (text %q, label %v): read %q, error %v", text1, label, got, err)
		}
	})
}

// TestCorruptParquet flips each byte of a small Parquet file in turn: every result is the
// examples or an error naming the file, never a panic; flips in the pages are errors naming
// the row group and the column.
func TestCorruptParquet(t *testing.T) {
	dir := t.TempDir()
	type small struct {
		Text  string `parquet:"premise"`
		Label int32  `parquet:"label"`
	}
	var rows []small
	for i := range 20 {
		rows = append(rows, small{Text: fmt.Sprintf("premise number %d", i), Label: int32(i % 2)})
	}
	good := writeRows(t, dir, "good.parquet", rows, 8)
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{TextColumns: []string{"premise"}, LabelColumn: "label"}
	path := filepath.Join(dir, "corrupt.parquet")
	outcomes := map[string]int{}
	for i := range raw {
		bad := bytes.Clone(raw)
		bad[i] ^= 0xff
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		n, err := checkPass(t, path, spec)
		switch {
		case err == nil:
			outcomes[fmt.Sprintf("read (%d rows)", n)]++
		case strings.Contains(err.Error(), "panicked"):
			outcomes["error from a recovered panic"]++
		case strings.Contains(err.Error(), "row group"):
			outcomes["error naming the row group"]++
		default:
			outcomes["error at open"]++
		}
	}
	t.Logf("%d single-byte corruptions of a %d-byte file: %v", len(raw), len(raw), outcomes)
	if outcomes["error naming the row group"] == 0 || outcomes["error at open"] == 0 {
		t.Errorf("outcomes %v: want errors both at open and in the row groups", outcomes)
	}
	for _, cut := range []int{0, 4, len(raw) / 3, len(raw) - 8, len(raw) - 1} {
		if err := os.WriteFile(path, raw[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := checkPass(t, path, spec); err == nil {
			t.Errorf("a file cut to %d of %d bytes was read", cut, len(raw))
		}
	}
}

// wellLabeled reports whether ex's target fits the table's problem: a class of the map, one
// flag per class with at least one set, or one finite value.
func wellLabeled(ex text.Labeled, tb *Table) bool {
	switch tb.Problem() {
	case Regression:
		return tb.Labels() == nil && len(ex.Values) == 1 && !math.IsNaN(float64(ex.Values[0])) && !math.IsInf(float64(ex.Values[0]), 0)
	case MultiLabel:
		return len(ex.Values) == tb.Labels().Len() && slices.Contains(ex.Values, 1) && ex.Label == 0
	}
	return ex.Values == nil && ex.Label >= 0 && ex.Label < tb.Labels().Len()
}
