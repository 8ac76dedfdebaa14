package bert

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
)

// shardedFolder makes the model folder dir from the saved folder base (its files less
// model.safetensors) whose model.safetensors.index.json maps every tensor to shard.
func shardedFolder(t *testing.T, base, dir, shard string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, os.DirFS(base)); err != nil { // then without its model.safetensors
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(filepath.Join(base, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	weightMap := map[string]string{}
	for _, spec := range cfg.EncoderTensors() {
		weightMap[spec.Name] = shard
	}
	index, _ := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": weightMap})
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), index, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWeightMapStaysInFolder: a shard that model.safetensors.index.json names must be a file
// of the folder: "..", an absolute path and a symbolic link out of it are refused, naming the
// index and the entry, before anything is read; a hub cache snapshot's links to its blobs/
// still load.
func TestWeightMapStaysInFolder(t *testing.T) {
	base, _, _ := savedMicroModel(t)
	weights, err := os.ReadFile(filepath.Join(base, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	outside := filepath.Join(root, "outside.safetensors") // a valid weights file, outside every folder below
	if err := os.WriteFile(outside, weights, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "linked")
	shardedFolder(t, base, link, "w.safetensors")
	if err := os.Symlink(outside, filepath.Join(link, "w.safetensors")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, dir, shard, want string }{
		{"dot-dot", filepath.Join(root, "up"), "../outside.safetensors", "outside the folder"},
		{"absolute", filepath.Join(root, "abs"), outside, "absolute"},
		{"symbolic link out", link, "w.safetensors", "symbolic link"},
	} {
		if c.dir != link {
			shardedFolder(t, base, c.dir, c.shard)
		}
		_, _, err := LoadPretrained(c.dir, model.NewStore(), LoadOptions{})
		index := filepath.Join(c.dir, "model.safetensors.index.json")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), index) || !strings.Contains(err.Error(), "weight_map") {
			t.Errorf("%s: LoadPretrained: %v; want an error naming %s, weight_map and saying %q", c.name, err, index, c.want)
		}
	}

	// The hub cache's layout: the snapshot's shard is a link to the repository's blobs/.
	repo := filepath.Join(root, "hub", "models--org--micro")
	snap := filepath.Join(repo, "snapshots", "abc123")
	shardedFolder(t, base, snap, "model-00001-of-00001.safetensors")
	if err := os.MkdirAll(filepath.Join(repo, "blobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "blobs", "0f0f"), weights, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../blobs/0f0f", filepath.Join(snap, "model-00001-of-00001.safetensors")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadPretrained(snap, model.NewStore(), LoadOptions{}); err != nil {
		t.Errorf("a hub cache snapshot whose shard links to blobs/: %v", err)
	}
}
