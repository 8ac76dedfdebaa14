package bert

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/internal/fsutil"
	"github.com/gomlx/compute/dtypes"
)

// SavePretrained writes the classifier as a Hugging Face folder of its family's sequence
// classifier (BertForSequenceClassification, RobertaForSequenceClassification, ...) that
// LoadPretrained (with LoadOptions.LoadHead) and transformers' from_pretrained can read:
// config.json, the tokenizer when tok is not nil (vocab.txt for WordPiece, tokenizer.json for
// BPE, with tokenizer_config.json) and model.safetensors with HF tensor names, float32. All
// of the classifier's variables must have values (run the model once, or load it, first).
// Each file is written atomically.
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
		if err := tok.writeFiles(dir, c.Config); err != nil {
			return err
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

// tokenizerClass is the transformers tokenizer class written in tokenizer_config.json.
var tokenizerClass = map[string]string{"bert": "BertTokenizer", "distilbert": "DistilBertTokenizer",
	"electra": "ElectraTokenizer", "roberta": "BertTokenizer", "xlm-roberta": "BertTokenizer"}

// writeFiles writes the tokenizer's files into a model folder: vocab.txt for WordPiece (the
// added tokens, with their ids and flags, in tokenizer_config.json's added_tokens_decoder,
// which transformers reads), the tokenizer.json it was read from for BPE, and
// tokenizer_config.json.
func (t *Tokenizer) writeFiles(dir string, cfg Config) error {
	maxLen := cfg.MaxPositionEmbeddings - cfg.positionOffset()
	var tokCfg map[string]any
	switch seg := t.seg.(type) {
	case *wordPiece:
		if err := t.WriteVocab(filepath.Join(dir, "vocab.txt")); err != nil {
			return err
		}
		tokCfg = map[string]any{
			"tokenizer_class":        tokenizerClass[cfg.Family()],
			"do_lower_case":          seg.basic.lowercase,
			"strip_accents":          seg.basic.stripAccents,
			"tokenize_chinese_chars": seg.basic.chineseChars,
			"model_max_length":       maxLen,
			"cls_token":              t.tokens[t.special.cls],
			"sep_token":              t.tokens[t.special.sep],
			"pad_token":              t.tokens[t.special.pad],
			"unk_token":              t.tokens[seg.unk],
			"added_tokens_decoder":   t.addedDecoder(),
		}
	case nil: // a Unigram tokenizer.json (XLM-RoBERTa's)
		if err := fsutil.WriteFileAtomic(filepath.Join(dir, "tokenizer.json"), t.json); err != nil {
			return fmt.Errorf("bert: SavePretrained: %w", err)
		}
		cls, sep, pad := t.tokens[t.special.cls], t.tokens[t.special.sep], t.tokens[t.special.pad]
		tokCfg = map[string]any{
			"tokenizer_class": "XLMRobertaTokenizer", "model_max_length": maxLen,
			"bos_token": cls, "cls_token": cls, "eos_token": sep, "sep_token": sep, "pad_token": pad,
		}
		for _, name := range []string{"unk", "mask"} {
			if _, ok := t.ids["<"+name+">"]; ok {
				tokCfg[name+"_token"] = "<" + name + ">"
			}
		}
	case *byteLevelBPE:
		if err := fsutil.WriteFileAtomic(filepath.Join(dir, "tokenizer.json"), t.json); err != nil {
			return fmt.Errorf("bert: SavePretrained: %w", err)
		}
		// RobertaTokenizerFast rebuilds the pre- and post-processor when add_prefix_space
		// differs from its argument: it is written so that it does not.
		cls, sep, pad := t.tokens[t.special.cls], t.tokens[t.special.sep], t.tokens[t.special.pad]
		tokCfg = map[string]any{
			"tokenizer_class": "RobertaTokenizer", "model_max_length": maxLen, "add_prefix_space": seg.addPrefixSpace,
			"bos_token": cls, "cls_token": cls, "eos_token": sep, "sep_token": sep, "pad_token": pad,
		}
		if seg.unk >= 0 {
			tokCfg["unk_token"] = t.tokens[seg.unk]
		}
		if _, ok := t.ids["<mask>"]; ok {
			tokCfg["mask_token"] = "<mask>"
		}
	}
	contents, err := json.MarshalIndent(tokCfg, "", "  ")
	if err != nil {
		return fmt.Errorf("bert: SavePretrained: encoding tokenizer config: %w", err)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, "tokenizer_config.json"), append(contents, '\n')); err != nil {
		return fmt.Errorf("bert: SavePretrained: %w", err)
	}
	return nil
}

// addedDecoder is tokenizer_config.json's added_tokens_decoder: the added tokens by id.
func (t *Tokenizer) addedDecoder() map[string]any {
	out := map[string]any{}
	if t.added == nil {
		return out
	}
	for _, a := range t.added.Tokens() {
		out[strconv.Itoa(int(a.ID))] = map[string]any{"content": a.Content, "special": a.Special, "normalized": a.Normalized,
			"lstrip": a.LStrip, "rstrip": a.RStrip, "single_word": a.SingleWord}
	}
	return out
}
