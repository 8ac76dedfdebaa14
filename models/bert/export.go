package bert

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gomlx/gomlx/core/tensors"
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
	var list []stTensor
	for _, spec := range c.Config.Tensors() {
		path, _ := VarPath(spec.Name)
		v := c.store.GetVariable(path)
		if v == nil || !v.HasValue() {
			return fmt.Errorf("bert: SavePretrained: variable %s (%s) has no value yet", path, spec.Name)
		}
		if !slicesEqual(v.Shape().Dimensions, spec.Dims) {
			return fmt.Errorf("bert: SavePretrained: variable %s has shape %s, config wants %v", path, v.Shape(), spec.Dims)
		}
		value, err := v.Value()
		if err != nil {
			return fmt.Errorf("bert: SavePretrained: reading variable %s: %w", path, err)
		}
		data, err := tensors.CopyFlatData[float32](value)
		if err != nil {
			return fmt.Errorf("bert: SavePretrained: variable %s: %w", path, err)
		}
		list = append(list, stTensor{Name: spec.Name, DType: "F32", Shape: spec.Dims, Data: data})
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bert: SavePretrained: %w", err)
	}
	cfgJSON, err := c.Config.JSON()
	if err != nil {
		return fmt.Errorf("bert: SavePretrained: encoding config: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, "config.json"), append(cfgJSON, '\n')); err != nil {
		return err
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
		if err := writeFileAtomic(filepath.Join(dir, "tokenizer_config.json"), append(tokCfg, '\n')); err != nil {
			return err
		}
	}
	return writeSafetensors(filepath.Join(dir, "model.safetensors"), list, map[string]string{"format": "pt"})
}
