package table

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkImages reads path as an image table (column "image", label "label"): no panic; an
// error names the file; every row has bytes or an existing path, and a Parquet row's bytes
// read again by its index are the pass's.
func checkImages(t *testing.T, path string) {
	t.Helper()
	tb, err := OpenImages(Spec{ImageColumn: "image", LabelColumn: "label", MaxRowBytes: 1 << 12}, path)
	if err == nil {
		defer tb.Close()
		for r, e := range tb.All() {
			if err = e; err != nil {
				break
			}
			if r.Bytes == nil {
				if _, serr := os.Stat(r.Path); serr != nil {
					t.Fatalf("%s: row %d's path %q: %v", path, r.Row+1, r.Path, serr)
				}
				continue
			}
			b, berr := tb.Bytes(r.File, r.Row)
			if berr != nil && !strings.Contains(berr.Error(), path) {
				t.Fatalf("Bytes error does not name the file %s: %v", path, berr)
			}
			if berr == nil && string(b) != string(r.Bytes) {
				t.Fatalf("%s: row %d: Bytes gives %d bytes, the pass %d", path, r.Row+1, len(b), len(r.Bytes))
			}
		}
	}
	if err != nil && !strings.Contains(err.Error(), path) {
		t.Fatalf("error does not name the file %s: %v", path, err)
	}
}

// FuzzImageParquet reads arbitrary bytes as a Parquet table with an image column (no panic,
// errors name the file, rows well formed). Seeds: the fixtures make_image_tables.py wrote.
func FuzzImageParquet(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(imgDir, "*.parquet"))
	for _, p := range files {
		raw, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "fuzz.parquet")
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		checkImages(t, path)
	})
}

// FuzzImageJSONLines reads arbitrary bytes as a JSON Lines table with an image column, next
// to an img/red.png. Seeds: the fixtures.
func FuzzImageJSONLines(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(imgDir, "*.jsonl"))
	for _, p := range files {
		raw, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte(`{"image": {"path": null}, "label": 1}` + "\n" + `{"image": ["img/red.png"], "label": 1}`))
	f.Fuzz(func(t *testing.T, content []byte) {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "img"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "img", "red.png"), []byte("png"), 0o644); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "fuzz.jsonl")
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		checkImages(t, path)
	})
}
