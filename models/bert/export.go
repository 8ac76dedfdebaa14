package bert

import (
	"encoding/json"
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

// SavePretrained writes the classifier as a Hugging Face BertForSequenceClassification folder
// that LoadPretrained and transformers' from_pretrained can read: config.json, vocab.txt
// (when tok is not nil) and model.safetensors with HF tensor names, float32. All of the
// classifier's variables must have values (run the model once, or load it, first). Each
// file is written atomically.
func SavePretrained(dir string, c *Classifier, tok *Tokenizer) error {
	if c == nil || c.store == nil {
		return fmt.Errorf("bert: SavePretrained: nil classifier or classifier without a Store")
	}
	if tok != nil && tok.VocabSize() != c.Config.VocabSize {
		return fmt.Errorf("bert: SavePretrained: tokenizer has %d tokens but the model's vocab_size is %d",
			tok.VocabSize(), c.Config.VocabSize)
	}
	var list []safetensors.Named
	for _, spec := range c.Config.Tensors() {
		path, _ := VarPath(spec.Name)
		v := c.store.GetVariable(path)
		if v == nil || !v.HasValue() {
			return fmt.Errorf("bert: SavePretrained: variable %s (%s) has no value yet", path, spec.Name)
		}
		if !slices.Equal(v.Shape().Dimensions, spec.Dims) {
			return fmt.Errorf("bert: SavePretrained: variable %s has shape %s, config wants %v", path, v.Shape(), spec.Dims)
		}
		if dtype := v.Shape().DType; dtype != dtypes.Float32 {
			return fmt.Errorf("bert: SavePretrained: variable %s is %s, want float32", path, dtype)
		}
		value, err := v.Value()
		if err != nil {
			return fmt.Errorf("bert: SavePretrained: reading variable %s: %w", path, err)
		}
		list = append(list, safetensors.Named{Name: spec.Name, Tensor: value})
	}
	// Tensors sorted by name, like the files transformers writes.
	slices.SortFunc(list, func(a, b safetensors.Named) int { return strings.Compare(a.Name, b.Name) })
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bert: SavePretrained: %w", err)
	}
	cfgJSON, err := c.Config.JSON()
	if err != nil {
		return fmt.Errorf("bert: SavePretrained: encoding config: %w", err)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, "config.json"), append(cfgJSON, '\n')); err != nil {
		return fmt.Errorf("bert: SavePretrained: %w", err)
	}
	if tok != nil {
		if err := tok.WriteVocab(filepath.Join(dir, "vocab.txt")); err != nil {
			return err
		}
		tokCfg, err := json.MarshalIndent(map[string]any{
			"tokenizer_class":        "BertTokenizer",
			"do_lower_case":          tok.basic.lowercase,
			"strip_accents":          tok.basic.stripAccents,
			"tokenize_chinese_chars": tok.basic.chineseChars,
			"model_max_length":       c.Config.MaxPositionEmbeddings,
		}, "", "  ")
		if err != nil {
			return fmt.Errorf("bert: SavePretrained: encoding tokenizer config: %w", err)
		}
		if err := fsutil.WriteFileAtomic(filepath.Join(dir, "tokenizer_config.json"), append(tokCfg, '\n')); err != nil {
			return fmt.Errorf("bert: SavePretrained: %w", err)
		}
	}
	// transformers wants the metadata {"format": "pt"} to accept a safetensors file.
	err = fsutil.WriteAtomic(filepath.Join(dir, "model.safetensors"), func(w io.Writer) error {
		_, err := safetensors.Write(w, list, map[string]string{"format": "pt"})
		return err
	})
	if err != nil {
		return fmt.Errorf("bert: SavePretrained: %w", err)
	}
	return nil
}
