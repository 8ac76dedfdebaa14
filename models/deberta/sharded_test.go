package deberta

import (
	"testing"

	"github.com/goaccel/goaccel/models/internal/familytest"
)

// TestLoadSharded: a folder whose weights are shards and a model.safetensors.index.json
// loads as the same folder with one model.safetensors; a tensor in two shards is refused.
// (ModernBERT's LoadPretrained is the same hf.Folder.Load.)
func TestLoadSharded(t *testing.T) {
	familytest.CheckSharded(t, "testdata/tiny", func(dir string) (*Classifier, error) {
		return LoadPretrained(dir, nil, LoadOptions{LoadHead: true})
	})
}
