package bert

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/goaccel/goaccel/internal/fsutil"
	"github.com/goaccel/goaccel/models/internal/hf"
)

// SavePretrained writes the classifier as a Hugging Face folder of its family's classifier
// with the Config's Head (BertForSequenceClassification, RobertaForTokenClassification, ...;
// a token classifier's folder is read by transformers' AutoModelForTokenClassification) that
// LoadPretrained (with LoadOptions.LoadHead) and transformers' from_pretrained can read:
// config.json and model.safetensors with HF tensor names, float32. All of the classifier's
// variables must have values (run the model once, or load it, first). Each file is written
// atomically.
//
// SavePretrained(dir, c) has the shape of every family's (deberta.SavePretrained,
// modernbert.SavePretrained). A tokenizer given after c (at most one; nil: none) is
// written too, because its files depend on the model's config (tokenizer_class,
// model_max_length): vocab.txt for WordPiece, or the tokenizer.json it was read from when
// vocab.txt cannot say its pipeline; tokenizer.json for BPE; with tokenizer_config.json.
//
// A classifier with a LoRA adapter is written merged (each targeted weight W + (alpha/r)·B·A,
// PEFT's merge_and_unload), so that dir is a plain folder with the adapted model's logits,
// and its adapter is written too, as PEFT's files, into the subfolder "adapter"
// (AdapterDir), which peft.PeftModel.from_pretrained reads onto the base model. (Not into dir
// itself: transformers, finding adapter_config.json in a folder, would load the base model
// it names instead of the merged weights.)
func SavePretrained(dir string, c *Classifier, tokenizer ...*Tokenizer) error {
	tok, err := oneTokenizer("SavePretrained", tokenizer)
	if err != nil {
		return err
	}
	if c == nil || c.store == nil {
		return fmt.Errorf("bert: SavePretrained: nil classifier or classifier without a Store")
	}
	if c.Config.adapter != nil {
		if err := SaveAdapter(filepath.Join(dir, AdapterDir), c, tok); err != nil {
			return err
		}
	}
	c, err = c.merged()
	if err != nil {
		return fmt.Errorf("bert: SavePretrained: %w", err)
	}
	if tok != nil {
		if err := tok.CheckVocabSize(c.Config.VocabSize, "the model"); err != nil {
			return fmt.Errorf("bert: SavePretrained: %w", err)
		}
	}
	cfgJSON, err := c.Config.JSON()
	if err != nil {
		return fmt.Errorf("bert: SavePretrained: encoding config: %w", err)
	}
	if err := hf.WriteFolder(dir, c.store, c.Config.Tensors(), hf.VarPath, cfgJSON); err != nil {
		return fmt.Errorf("bert: SavePretrained: %w", err)
	}
	if tok != nil {
		return tok.writeFiles(dir, c.Config)
	}
	return nil
}

// oneTokenizer is the optional tokenizer argument of SavePretrained and SaveAdapter (nil
// when none is given).
func oneTokenizer(what string, toks []*Tokenizer) (*Tokenizer, error) {
	switch len(toks) {
	case 0:
		return nil, nil
	case 1:
		return toks[0], nil
	}
	return nil, fmt.Errorf("bert: %s: %d tokenizers given: give at most one", what, len(toks))
}

// tokenizerClass is the transformers tokenizer class written in tokenizer_config.json.
var tokenizerClass = map[string]string{"bert": "BertTokenizer", "distilbert": "DistilBertTokenizer",
	"electra": "ElectraTokenizer", "roberta": "BertTokenizer", "xlm-roberta": "BertTokenizer"}

// writeFiles writes the tokenizer's files into a model folder: vocab.txt for WordPiece (the
// added tokens, with their ids and flags, in tokenizer_config.json's added_tokens_decoder,
// which transformers reads; a WordPiece tokenizer.json that vocab.txt cannot say is written as
// it was read, see vocabTxtSays), the tokenizer.json it was read from for BPE, and
// tokenizer_config.json.
func (t *Tokenizer) writeFiles(dir string, cfg Config) error {
	maxLen := cfg.MaxPositionEmbeddings - cfg.positionOffset()
	var tokCfg map[string]any
	switch seg := t.seg.(type) {
	case *wordPiece:
		if t.json != nil && !t.vocabTxtSays(seg) {
			// A tokenizer.json whose pipeline vocab.txt and tokenizer_config.json cannot say
			// is written back as it was read.
			if err := fsutil.WriteFileAtomic(filepath.Join(dir, "tokenizer.json"), t.json); err != nil {
				return fmt.Errorf("bert: SavePretrained: %w", err)
			}
			tokCfg = map[string]any{
				"tokenizer_class":  tokenizerClass[cfg.Family()],
				"model_max_length": maxLen,
				"cls_token":        t.tokens[t.special.cls],
				"sep_token":        t.tokens[t.special.sep],
				"pad_token":        t.tokens[t.special.pad],
				"unk_token":        t.tokens[seg.unk],
			}
			break
		}
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
	case nil: // a Unigram tokenizer.json (XLM-RoBERTa's, DeBERTa's), or DeBERTa's spm.model
		name, contents := "tokenizer.json", t.json
		if t.spm != nil {
			name, contents = "spm.model", t.spm
		}
		if err := fsutil.WriteFileAtomic(filepath.Join(dir, name), contents); err != nil {
			return fmt.Errorf("bert: SavePretrained: %w", err)
		}
		fam := t.uniFamily
		cls, sep, pad := t.tokens[t.special.cls], t.tokens[t.special.sep], t.tokens[t.special.pad]
		tokCfg = map[string]any{
			"tokenizer_class": fam.class, "model_max_length": maxLen,
			"bos_token": cls, "cls_token": cls, "eos_token": sep, "sep_token": sep, "pad_token": pad,
		}
		if fam.class == debertaUnigram.class {
			tokCfg["do_lower_case"], tokCfg["split_by_punct"] = false, false
		}
		for _, name := range []string{"unk", "mask"} {
			token := fam.unk
			if name == "mask" {
				token = fam.mask
			}
			if _, ok := t.ids[token]; ok {
				tokCfg[name+"_token"] = token
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

// vocabTxtSays tells whether vocab.txt and tokenizer_config.json say all of a WordPiece
// pipeline, as LoadTokenizer reads them back: BERT's normalizer with clean_text, the "##"
// prefix, words of at most 100 characters, BERT's layout of a pair.
func (t *Tokenizer) vocabTxtSays(wp *wordPiece) bool {
	return !wp.basic.none && !wp.basic.noClean && wp.prefix == "##" && wp.maxChars == maxWordChars &&
		t.special.pairSeps == 1 && t.special.pairTypeID == 1
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
