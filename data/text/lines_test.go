package text

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readAll[T any](f *LineFile[T]) ([]T, error) {
	var out []T
	for v, err := range f.All() {
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

func parseInt(line string) (int, error) { return strconv.Atoi(line) }

func TestOpenLines(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name    string
		content string
		opts    LineOptions
		want    []int
		wantErr string // substring; "" for success
		skipped int
	}{
		{name: "plain", content: "1\n2\n3\n", want: []int{1, 2, 3}},
		{name: "no final newline", content: "1\n2", want: []int{1, 2}},
		{name: "crlf", content: "1\r\n2\r\n", want: []int{1, 2}},
		{name: "bom", content: "\ufeff1\n2\n", want: []int{1, 2}},
		{name: "header", content: "count\n1\n2\n", opts: LineOptions{SkipHeader: 1}, want: []int{1, 2}},
		{name: "malformed", content: "1\nx\n3\n", wantErr: "malformed.txt:2: strconv.Atoi"},
		{name: "malformed after header", content: "h\n1\nx\n", opts: LineOptions{SkipHeader: 1},
			wantErr: "malformed after header.txt:3:"},
		{name: "skip malformed", content: "1\nx\n3\n\ny\n", opts: LineOptions{SkipMalformed: true},
			want: []int{1, 3}, skipped: 3},
		{name: "empty line", content: "1\n\n3\n", wantErr: "empty line.txt:2: empty line"},
		{name: "trailing empty line", content: "1\n2\n\n", wantErr: "trailing empty line.txt:3: empty line"},
		{name: "skip empty", content: "1\n\n3\n", opts: LineOptions{SkipEmpty: true}, want: []int{1, 3}, skipped: 1},
		{name: "skip empty only", content: "1\n\nx\n", opts: LineOptions{SkipEmpty: true},
			wantErr: "skip empty only.txt:3:"},
		{name: "long line", content: "1\n" + strings.Repeat("9", 100) + "\n", opts: LineOptions{MaxLineBytes: 50},
			wantErr: "long line.txt:2: line longer than 50 bytes"},
		{name: "invalid utf8", content: "1\n2\xe9\n", wantErr: "invalid utf8.txt:2: invalid UTF-8 at byte 2 (0xe9)"},
		{name: "empty file", content: "", want: nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, dir, c.name+".txt", c.content)
			f, err := OpenLines(p, parseInt, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := readAll(f)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, c.wantErr)
				}
				t.Logf("error as expected: %v", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
			sk := f.Skipped()
			if sk.Count != c.skipped || len(sk.First) != c.skipped {
				t.Errorf("skipped %+v, want %d", sk, c.skipped)
			}
			for _, s := range sk.First {
				if !strings.HasPrefix(s, p+":") {
					t.Errorf("skip report %q does not name the file", s)
				}
			}
		})
	}
}

func TestOpenLinesLongLinesAccepted(t *testing.T) {
	// A 3 MB line is read whole with the default limit.
	long := strings.Repeat("7", 3<<20)
	p := writeFile(t, t.TempDir(), "long.txt", "1\n"+long+"\n2\n")
	f, err := OpenLines(p, func(s string) (int, error) { return len(s), nil }, LineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := readAll(f)
	if err != nil || len(got) != 3 || got[1] != len(long) {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestOpenLinesBadInput(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenLines(filepath.Join(dir, "missing.txt"), parseInt, LineOptions{}); err == nil ||
		!strings.Contains(err.Error(), "missing.txt") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := OpenLines(dir, parseInt, LineOptions{}); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("directory: %v", err)
	}
	p := writeFile(t, dir, "ok.txt", "1\n")
	if _, err := OpenLines[int](p, nil, LineOptions{}); err == nil {
		t.Errorf("nil parse: no error")
	}
	if _, err := OpenLines(p, parseInt, LineOptions{SkipHeader: -1}); err == nil {
		t.Errorf("negative SkipHeader: no error")
	}
	if os.Getuid() != 0 { // root reads anything
		unreadable := writeFile(t, dir, "secret.txt", "1\n")
		_ = os.Chmod(unreadable, 0)
		if _, err := OpenLines(unreadable, parseInt, LineOptions{}); err == nil {
			t.Errorf("unreadable file: no error")
		}
	}
	// A file removed after OpenLines: the pass reports it.
	gone := writeFile(t, dir, "gone.txt", "1\n")
	f, err := OpenLines(gone, parseInt, LineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(gone)
	if _, err := readAll(f); err == nil || !strings.Contains(err.Error(), "gone.txt") {
		t.Errorf("removed file: %v", err)
	}
}

func TestEncodings(t *testing.T) {
	dir := t.TempDir()
	latin := writeFile(t, dir, "latin.txt", "caf\xe9\n\x93quoted\x94 \x80 \xff\nplain\n")
	ident := func(s string) (string, error) { return s, nil }

	// Strict UTF-8 (default): the Latin-1 line is malformed, named by file:line.
	f, _ := OpenLines(latin, ident, LineOptions{})
	if _, err := readAll(f); err == nil || !strings.Contains(err.Error(), "latin.txt:1: invalid UTF-8") {
		t.Errorf("strict UTF-8: %v", err)
	}
	want := []string{"café", "“quoted” € ÿ", "plain"}
	for _, enc := range []Encoding{EncodingWindows1252, EncodingAuto} {
		f, err := OpenLines(latin, ident, LineOptions{Encoding: enc})
		if err != nil {
			t.Fatal(err)
		}
		got, err := readAll(f)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("encoding %d: got %q, %v; want %q", enc, got, err, want)
		}
	}
	utf := writeFile(t, dir, "utf8.txt", "café\nnaïve\n")
	f, err := OpenLines(utf, ident, LineOptions{Encoding: EncodingAuto})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readAll(f); err != nil || fmt.Sprint(got) != "[café naïve]" {
		t.Errorf("auto on UTF-8: %q, %v", got, err)
	}
	mixed := writeFile(t, dir, "mixed.txt", "café\ncaf\xe9\n")
	if _, err := OpenLines(mixed, ident, LineOptions{Encoding: EncodingAuto}); err == nil ||
		!strings.Contains(err.Error(), "mixed.txt mixes encodings: line 1 is UTF-8 but line 2 is not") {
		t.Errorf("mixed file: %v", err)
	}
	// Every byte decodes in Windows-1252, and each of 0x80..0xff gives one rune.
	var all []byte
	for c := 0x80; c <= 0xff; c++ {
		all = append(all, byte(c))
	}
	s, err := decodeLine(all, EncodingWindows1252)
	if err != nil || len([]rune(s)) != 128 {
		t.Errorf("decoding 0x80..0xff: %d runes, %v", len([]rune(s)), err)
	}
}

func TestParseTSV(t *testing.T) {
	cases := []struct {
		line    string
		n       int
		want    []string
		wantErr bool
	}{
		{"a\tb", 2, []string{"a", "b"}, false},
		{"a\tb\tc", 2, nil, true},
		{"a", 2, nil, true},
		{"\t", 2, []string{"", ""}, false},
		{"a\tb\tc", 0, []string{"a", "b", "c"}, false},
		{"", 1, []string{""}, false},
	}
	for _, c := range cases {
		got, err := ParseTSV(c.line, c.n)
		if (err != nil) != c.wantErr || (!c.wantErr && fmt.Sprint(got) != fmt.Sprint(c.want)) {
			t.Errorf("ParseTSV(%q, %d) = %q, %v", c.line, c.n, got, err)
		}
	}
}

func TestLabeledTSV(t *testing.T) {
	p := writeFile(t, t.TempDir(), "train.tsv", "sentence\tlabel\ngood film\t1\nbad film\t0\nno label\n")
	f, err := OpenLines(p, LabeledTSV(0, 1), LineOptions{SkipHeader: 1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := readAll(f)
	if err == nil || !strings.Contains(err.Error(), "train.tsv:4: got 1 tab-separated fields, want at least 2") {
		t.Errorf("short line: %v", err)
	}
	if fmt.Sprint(got) != "[{good film 1 []} {bad film 0 []}]" {
		t.Errorf("got %v", got)
	}
	bad := writeFile(t, t.TempDir(), "bad.tsv", "x\tone\n")
	f, _ = OpenLines(bad, LabeledTSV(0, 1), LineOptions{})
	if _, err := readAll(f); err == nil || !strings.Contains(err.Error(), `bad.tsv:1: column 1: label "one" is not an integer`) {
		t.Errorf("bad label: %v", err)
	}
}
