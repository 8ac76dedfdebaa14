package checkpoint

import (
	"errors"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
)

// TestStandardErrorWrapping: the data, checkpoint, metrics and BERT packages wrap errors with
// the standard library (fmt.Errorf("%w"), errors.Is/As), not github.com/pkg/errors.
func TestStandardErrorWrapping(t *testing.T) {
	for _, dir := range []string{".", "safetensors", "../data", "../metrics", "../models/bert"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s: %v", dir, err)
		}
		for _, f := range files {
			parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range parsed.Imports {
				if imp.Path.Value == `"github.com/pkg/errors"` {
					t.Errorf("%s imports github.com/pkg/errors; use fmt.Errorf with %%w and the errors package", f)
				}
			}
		}
	}
}

// TestImportWeightsErrorPrefixOnce: a damaged or missing weights file is reported once with
// the package that found the problem and the file, and still matches errors.Is.
func TestImportWeightsErrorPrefixOnce(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.safetensors")
	if err := os.WriteFile(bad, []byte("not a safetensors file at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ImportWeights(bad, model.NewStore(), nil)
	if err == nil || !strings.HasPrefix(err.Error(), "safetensors: ") || strings.Count(err.Error(), "safetensors:") != 1 ||
		!strings.Contains(err.Error(), bad) {
		t.Errorf("damaged file: error %q, want one \"safetensors: \" prefix and the file name", err)
	}
	missing := filepath.Join(dir, "missing.safetensors")
	_, err = ImportWeights(missing, model.NewStore(), nil)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: error %v, want fs.ErrNotExist naming %s", err, missing)
	}
}
