// Package configfuzz is the fuzz target that the model families' config.json readers share
// (models/modernbert, models/deberta): their tests call Fuzz from a FuzzParseConfig.
package configfuzz

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/models/internal/hf"
)

// Config is what the target asks of a family's parsed configuration.
type Config interface {
	Tensors() []hf.TensorSpec
	CheckMaxLen(maxLen int) error
}

// Fuzz seeds f with the package's testdata/*/config.json files and a few broken ones, and
// checks that whatever config.json holds, parse returns a configuration whose tensors all
// have positive dimensions, or an error naming the file; never a panic.
func Fuzz[C Config](f *testing.F, modelType string, parse func(contents []byte, name string) (C, error)) {
	fixtures, _ := filepath.Glob(filepath.Join("testdata", "*", "config.json"))
	if len(fixtures) == 0 {
		f.Fatal("no testdata/*/config.json")
	}
	for _, path := range fixtures {
		raw, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte(`{"model_type": "` + modelType + `", "hidden_size": -1}`))
	f.Add([]byte(`{"model_type": "` + modelType + `", "num_attention_heads": 0, "hidden_size": 32}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		const name = "fuzz/config.json"
		cfg, err := parse(raw, name)
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("error %v does not name %s", err, name)
			}
			return
		}
		for _, spec := range cfg.Tensors() {
			for _, d := range spec.Dims {
				if d <= 0 {
					t.Errorf("accepted a config whose tensor %s has shape %v", spec.Name, spec.Dims)
				}
			}
		}
		_ = cfg.CheckMaxLen(16)
	})
}
