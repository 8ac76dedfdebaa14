package modernbert

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/internal/fsutil"
	"github.com/gomlx/compute/dtypes"
)

// SavePretrained writes the classifier as a Hugging Face folder of
// ModernBertForSequenceClassification that LoadPretrained (with LoadOptions.LoadHead) and
// transformers' from_pretrained read: config.json (Config.JSON: the layout in both
// spellings, id2label, label2id) and model.safetensors with HF tensor names, float32. All of
// the classifier's variables must have values (run the model once, or load it, first). Each
// file is written atomically. The tokenizer's files are not this package's business.
func SavePretrained(dir string, c *Classifier) error {
	if c == nil || c.store == nil {
		return fmt.Errorf("modernbert: SavePretrained: nil classifier or classifier without a Store")
	}
	var list []safetensors.Named
	for _, spec := range c.Config.Tensors() {
		path := VarPath(spec.Name)
		v := c.store.GetVariable(path)
		if v == nil || !v.HasValue() {
			return fmt.Errorf("modernbert: SavePretrained: variable %s (%s) has no value yet", path, spec.Name)
		}
		if !slices.Equal(v.Shape().Dimensions, spec.Dims) || v.Shape().DType != dtypes.Float32 {
			return fmt.Errorf("modernbert: SavePretrained: variable %s is %s, config wants float32 %v", path, v.Shape(), spec.Dims)
		}
		value, err := v.Value()
		if err != nil {
			return fmt.Errorf("modernbert: SavePretrained: reading variable %s: %w", path, err)
		}
		list = append(list, safetensors.Named{Name: spec.Name, Tensor: value})
	}
	slices.SortFunc(list, func(a, b safetensors.Named) int { return strings.Compare(a.Name, b.Name) })
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("modernbert: SavePretrained: %w", err)
	}
	cfgJSON, err := c.Config.JSON()
	if err != nil {
		return fmt.Errorf("modernbert: SavePretrained: encoding config: %w", err)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, "config.json"), append(cfgJSON, '\n')); err != nil {
		return fmt.Errorf("modernbert: SavePretrained: %w", err)
	}
	// transformers wants the metadata {"format": "pt"} to accept a safetensors file.
	err = fsutil.WriteAtomic(filepath.Join(dir, "model.safetensors"), func(w io.Writer) error {
		_, err := safetensors.Write(w, list, map[string]string{"format": "pt"})
		return err
	})
	if err != nil {
		return fmt.Errorf("modernbert: SavePretrained: %w", err)
	}
	return nil
}
