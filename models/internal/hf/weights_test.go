package hf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzWeightMap: whatever model.safetensors.index.json holds, WeightFiles returns files
// inside the folder or an error naming the index; it never panics.
func FuzzWeightMap(f *testing.F) {
	f.Add([]byte(`{"metadata": {}, "weight_map": {"a.weight": "model-00001-of-00002.safetensors", "b.weight": "model-00002-of-00002.safetensors"}}`))
	f.Add([]byte(`{"weight_map": {"a": "../x.safetensors"}}`))
	f.Add([]byte(`{"weight_map": {"a": "/etc/passwd"}}`))
	f.Add([]byte(`{"weight_map": {}}`))
	f.Add([]byte(`{"weight_map": {"a": ""}}`))
	f.Add([]byte(`{"weight_map": null}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"weight_map": {"a": 3}}`))
	f.Fuzz(func(t *testing.T, index []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "model.safetensors.index.json")
		if err := os.WriteFile(path, index, 0o644); err != nil {
			t.Fatal(err)
		}
		_, files, err := WeightFiles(dir)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %v does not name %s", err, path)
			}
			return
		}
		if len(files) == 0 {
			t.Errorf("no files and no error")
		}
		for _, file := range files {
			if rel, err := filepath.Rel(dir, file); err != nil || !filepath.IsLocal(rel) || rel == "." {
				t.Errorf("file %s is not inside %s", file, dir)
			}
		}
	})
}
