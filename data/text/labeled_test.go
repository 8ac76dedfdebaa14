package text

import (
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/testutil"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLoadPolarity(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, pos, neg string
		wantErr        string
		wantTexts      []string // all texts, positives first
	}{
		{name: "ascii", pos: "good one \nfine\n", neg: "bad\n", wantTexts: []string{"good one", "fine", "bad"}},
		{name: "both latin1", pos: "caf\xe9 ok\n", neg: "na\xefve\n", wantTexts: []string{"café ok", "naïve"}},
		{name: "utf8 and ascii", pos: "café\n", neg: "plain\n", wantTexts: []string{"café", "plain"}},
		{name: "latin1 and ascii", pos: "plain\n", neg: "caf\xe9\n", wantTexts: []string{"plain", "café"}},
		{name: "unequal encodings", pos: "ok\ncafé\n", neg: "x\ny\ncaf\xe9\n",
			wantErr: "files have unequal encodings: %POS%:2 is UTF-8, but %NEG%:3 is not valid UTF-8 (byte 0xe9"},
		{name: "empty line", pos: "a\n\nb\n", neg: "c\n", wantErr: "%POS%:2: empty line"},
		{name: "blank line", pos: "a\n", neg: "c\n   \n", wantErr: "%NEG%:2: blank line"},
		{name: "empty file", pos: "a\n", neg: "", wantErr: "%NEG% has no examples (label 0)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pos := writeFile(t, dir, c.name+".pos", c.pos)
			neg := writeFile(t, dir, c.name+".neg", c.neg)
			ds, err := LoadPolarity(pos, neg)
			if c.wantErr != "" {
				want := strings.NewReplacer("%POS%", pos, "%NEG%", neg).Replace(c.wantErr)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("error %v, want one containing %q", err, want)
				}
				t.Logf("error as expected: %v", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ds.Len() != len(c.wantTexts) {
				t.Fatalf("%d examples, want %d", ds.Len(), len(c.wantTexts))
			}
			nPos := strings.Count(c.pos, "\n")
			for i, ex := range ds {
				wantLabel := 0
				if i < nPos {
					wantLabel = 1
				}
				if ex.Text != c.wantTexts[i] || ex.Label != wantLabel {
					t.Errorf("example %d = %+v, want {%s %d}", i, ex, c.wantTexts[i], wantLabel)
				}
			}
		})
	}
	if _, err := LoadPolarity(filepath.Join(dir, "nope.pos"), filepath.Join(dir, "ascii.neg")); err == nil ||
		!strings.Contains(err.Error(), "nope.pos") {
		t.Errorf("missing file: %v", err)
	}
}

func TestReadLabeledFilesSkips(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.txt", "one\n\ntwo\n")
	b := writeFile(t, dir, "b.txt", "  \nthree\n")
	ds, sk, err := ReadLabeledFiles([]LabeledFile{{a, 3}, {b, 5}}, LineOptions{SkipMalformed: true})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Len() != 3 || !reflect.DeepEqual(ds[2], Labeled{Text: "three", Label: 5}) {
		t.Errorf("got %v", ds)
	}
	if sk.Count != 2 || !strings.HasPrefix(sk.First[0], a+":2: empty line") || !strings.HasPrefix(sk.First[1], b+":1: blank line") {
		t.Errorf("skips %+v", sk)
	}
	if _, _, err := ReadLabeledFiles(nil, LineOptions{}); err == nil {
		t.Errorf("no files: no error")
	}
}

func TestLoadPolarityRealData(t *testing.T) {
	dir := testutil.PolarityDir(t)
	ds, err := LoadPolarity(filepath.Join(dir, "rt-polarity.pos"), filepath.Join(dir, "rt-polarity.neg"))
	if err != nil {
		t.Fatal(err)
	}
	if ds.Len() != 10662 {
		t.Fatalf("%d examples, want 10662 (5331 + 5331)", ds.Len())
	}
	pos := 0
	for _, ex := range ds {
		pos += ex.Label
		if ex.Text == "" || strings.ContainsRune(ex.Text, '\uFFFD') {
			t.Fatalf("bad text %q", ex.Text)
		}
	}
	if pos != 5331 {
		t.Errorf("%d positive examples, want 5331", pos)
	}
	train, test, err := data.Split[Labeled](ds, 0.1, 42)
	if err != nil || train.Len() != 9595 || test.Len() != 1067 {
		t.Errorf("split %d/%d, %v", train.Len(), test.Len(), err)
	}
}

// TestLineEndings: a lone CR ends a line as LF and CRLF do (files from classic Mac OS), so a
// CR-only file is not read as a single example.
func TestLineEndings(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, content string }{
		{"lf", "a b\nc\nd\n"},
		{"crlf", "a b\r\nc\r\nd\r\n"},
		{"cr", "a b\rc\rd\r"},
		{"cr no final", "a b\rc\rd"},
		{"mixed", "a b\r\nc\rd\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pos := writeFile(t, dir, c.name+".pos", c.content)
			neg := writeFile(t, dir, c.name+".neg", "e\r")
			ds, err := LoadPolarity(pos, neg)
			if err != nil {
				t.Fatal(err)
			}
			var texts []string
			for _, ex := range ds {
				texts = append(texts, ex.Text)
			}
			if got := strings.Join(texts, "|"); got != "a b|c|d|e" {
				t.Errorf("texts %q, want a b|c|d|e", got)
			}
		})
	}
	// Line numbers in errors count CR-ended lines too.
	pos := writeFile(t, dir, "err.pos", "a\r\rb\r")
	neg := writeFile(t, dir, "err.neg", "c\n")
	if _, err := LoadPolarity(pos, neg); err == nil || !strings.Contains(err.Error(), pos+":2: empty line") {
		t.Errorf("error %v, want one naming %s:2", err, pos)
	}
}

// TestLoadPolarityDir reads the folder layout: one *.pos and one *.neg; a missing folder, or
// one with no pair or two, is an error naming the folder.
func TestLoadPolarityDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "x.pos", "good\nfine\n")
	writeFile(t, dir, "x.neg", "bad\n")
	ds, err := LoadPolarityDir(dir)
	if err != nil || len(ds) != 3 || !reflect.DeepEqual(ds[0], Labeled{Text: "good", Label: 1}) || !reflect.DeepEqual(ds[2], Labeled{Text: "bad", Label: 0}) {
		t.Fatalf("LoadPolarityDir = %v, %v", ds, err)
	}
	writeFile(t, dir, "y.pos", "more\n")
	for _, d := range []string{dir, t.TempDir(), filepath.Join(dir, "missing")} {
		if _, err := LoadPolarityDir(d); err == nil || !strings.Contains(err.Error(), d) {
			t.Errorf("LoadPolarityDir(%s): %v, want an error naming the folder", d, err)
		}
	}
}
