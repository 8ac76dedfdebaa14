package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/examples/internal/exampletest"
	"github.com/goaccel/goaccel/hub/hubtest"
)

// TestModelAndDatasetByHubID: --model_name_or_path org/name (transformers' tiny ViT folder)
// and --dataset_name org/name (Parquet shards of PNG bytes, train and validation, as datasets
// names them) from the Hub stand-in: the first run downloads both, the second runs offline
// (HF_HUB_OFFLINE=1) from the cache with no request.
func TestModelAndDatasetByHubID(t *testing.T) {
	s := hubtest.NewServer()
	defer s.Close()
	cache := s.Setenv(t)
	if _, err := s.Folder("model", "org/tiny-vit", transformersFolders["vit"]); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string][]byte{"README.md": []byte("# images\n")}
	for split, n := range map[string]int{"train": 48, "validation": 12} {
		p := filepath.Join(dir, split+".parquet")
		writeParquet(t, p, n, int64(n))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files["data/"+split+"-00000-of-00001.parquet"] = b
	}
	s.Commit("dataset", "org/images", files)
	for i, offline := range []string{"", "1"} {
		before := len(s.Requests())
		out := filepath.Join(dir, "run", string(rune('a'+i)))
		log := exampletest.Run(t, []string{"HF_HUB_OFFLINE=" + offline}, "--model_name_or_path", "org/tiny-vit", "--ignore_mismatched_sizes",
			"--dataset_name", "org/images", "--max_steps", "2", "--batch_size", "8", "--output_dir", out, "--workers", "1")
		if !strings.Contains(log, "training on 48 images, validating on 12") || !strings.Contains(log, "model: vit ") {
			t.Errorf("offline=%q:\n%s", offline, log)
		}
		if n := len(s.Requests()) - before; (offline == "1") != (n == 0) {
			t.Errorf("offline=%q: %d requests to the Hub", offline, n)
		}
	}
	if _, err := os.Stat(filepath.Join(cache, "datasets--org--images", "refs", "main")); err != nil {
		t.Errorf("the data set's ref: %v", err)
	}
}
