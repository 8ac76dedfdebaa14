package bert

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSavePretrainedShape: SavePretrained(dir, c) has every family's shape and writes the
// model alone (config.json and model.safetensors, no tokenizer file); with the tokenizer after
// c the folder has its files too; two tokenizers are refused; SaveAdapter(dir, c) is refused
// on a classifier without an adapter, as before.
func TestSavePretrainedShape(t *testing.T) {
	clf, tok := newMicroModel(t, mustGoBackend(t), 2, 12)
	files := func(dir string) []string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	alone := filepath.Join(t.TempDir(), "alone")
	if err := SavePretrained(alone, clf); err != nil {
		t.Fatal(err)
	}
	if got := files(alone); !slices.Equal(got, []string{"config.json", "model.safetensors"}) {
		t.Errorf("SavePretrained(dir, c) wrote %v, want config.json and model.safetensors", got)
	}
	with := filepath.Join(t.TempDir(), "with")
	if err := SavePretrained(with, clf, tok); err != nil {
		t.Fatal(err)
	}
	if got := files(with); !slices.Contains(got, "vocab.txt") || !slices.Contains(got, "tokenizer_config.json") {
		t.Errorf("SavePretrained(dir, c, tok) wrote %v, want the tokenizer's files too", got)
	}
	if err := SavePretrained(t.TempDir(), clf, tok, tok); err == nil || !strings.Contains(err.Error(), "2 tokenizers") {
		t.Errorf("two tokenizers: %v", err)
	}
	if err := SaveAdapter(t.TempDir(), clf); err == nil || !strings.Contains(err.Error(), "no LoRA adapter") {
		t.Errorf("SaveAdapter without an adapter: %v", err)
	}
}
