package bert

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/goaccel/goaccel/tokenizers"
)

// SentencePiece Unigram tokenizers: XLM-RoBERTa's and DeBERTa-v2/v3's, read by the
// tokenizers package from a tokenizer.json or from DeBERTa's spm.model, which then encodes
// the texts; this file gives them the special tokens Collate pads with and SavePretrained
// writes back.

// unigramFamily is what a family puts around a SentencePiece model: its special tokens and
// transformers' tokenizer class.
type unigramFamily struct {
	cls, sep, pad, unk, mask string
	pairSeps                 int   // separators between the texts of a pair
	pairTypeID               int32 // the type id of the second text
	class                    string
}

var (
	// xlmrUnigram is XLM-RoBERTa's: <s> A </s></s> B </s>.
	xlmrUnigram = unigramFamily{cls: "<s>", sep: "</s>", pad: "<pad>", unk: "<unk>", mask: "<mask>", pairSeps: 2,
		class: "XLMRobertaTokenizer"}
	// debertaUnigram is DeBERTa-v2/v3's: [CLS] A [SEP] B [SEP], type id 1 on "B [SEP]".
	debertaUnigram = unigramFamily{cls: "[CLS]", sep: "[SEP]", pad: "[PAD]", unk: "[UNK]", mask: "[MASK]", pairSeps: 1,
		pairTypeID: 1, class: "DebertaV2Tokenizer"}
)

// readUnigramJSON reads a Unigram tokenizer.json with the tokenizers package: XLM-RoBERTa's
// (when the vocabulary has <s>) or DeBERTa-v3's as transformers 5 saves it (when it has
// [CLS]).
func readUnigramJSON(contents []byte, path string, maxLen int) (*Tokenizer, error) {
	uni, err := tokenizers.Parse(contents, path)
	if err != nil {
		return nil, err
	}
	fam := &xlmrUnigram
	if _, ok := uni.ID(xlmrUnigram.cls); !ok {
		if _, ok := uni.ID(debertaUnigram.cls); ok {
			fam = &debertaUnigram
		}
	}
	t, err := fromUnigram(uni, fam, path, maxLen)
	if err != nil {
		return nil, err
	}
	t.json = contents
	return t, nil
}

// readSentencePiece reads the tokenizer of a DeBERTa-v2/v3 folder that has only spm.model
// (path), as transformers' DebertaV2TokenizerFast converts it (tokenizers.LoadSentencePiece:
// the model's normalization, Metaspace, Unigram, [CLS] A [SEP] B [SEP], [MASK] added after the
// pieces). tokenizer_config.json and special_tokens_map.json, when there, may rename the
// special tokens; do_lower_case or split_by_punct set to true, and added tokens other than
// the model's, are refused with an error naming the file and the key.
func readSentencePiece(dir, path string, maxLen int) (*Tokenizer, error) {
	fam := debertaUnigram
	var config, tokMap map[string]json.RawMessage
	configPath := filepath.Join(dir, "tokenizer_config.json")
	if err := readJSONIfPresent(configPath, &config); err != nil {
		return nil, err
	}
	if err := readJSONIfPresent(filepath.Join(dir, "special_tokens_map.json"), &tokMap); err != nil {
		return nil, err
	}
	for _, key := range []struct {
		name string
		want bool
	}{{"do_lower_case", false}, {"split_by_punct", false}, {"add_prefix_space", true}} {
		var v bool
		if raw, ok := config[key.name]; ok && json.Unmarshal(raw, &v) == nil && v != key.want {
			return nil, fmt.Errorf("bert: %s: %s %v is not supported with spm.model (DeBERTa-v3's folders have %v)", configPath, key.name, v, key.want)
		}
	}
	for _, s := range []struct {
		key  string
		into *string
	}{{"cls_token", &fam.cls}, {"sep_token", &fam.sep}, {"pad_token", &fam.pad}, {"unk_token", &fam.unk}, {"mask_token", &fam.mask}} {
		for _, src := range []struct {
			m    map[string]json.RawMessage
			file string
		}{{config, "tokenizer_config.json"}, {tokMap, "special_tokens_map.json"}} {
			raw, ok := src.m[s.key]
			if !ok {
				continue
			}
			tok, err := parseSpecial(raw)
			if err != nil {
				return nil, fmt.Errorf("bert: %s: %s: %w", filepath.Join(dir, src.file), s.key, err)
			}
			if tok.Content != "" {
				*s.into = tok.Content
			}
			break
		}
	}
	uni, err := tokenizers.LoadSentencePiece(path, tokenizers.SentencePieceOptions{Cls: fam.cls, Sep: fam.sep, Extra: []string{fam.mask}})
	if err != nil {
		return nil, err
	}
	if raw, ok := config["added_tokens_decoder"]; ok {
		var decoder map[string]addedJSON
		if err := json.Unmarshal(raw, &decoder); err != nil {
			return nil, fmt.Errorf("bert: parsing added_tokens_decoder of %s: %w", configPath, err)
		}
		for key, a := range decoder {
			id, err := strconv.ParseInt(key, 10, 32)
			if have, ok := uni.ID(a.Content); err != nil || !ok || int64(have) != id {
				return nil, fmt.Errorf("bert: %s: added_tokens_decoder has %q with id %s, which %s does not give it: "+
					"added tokens beyond the SentencePiece model are not supported without a tokenizer.json", configPath, a.Content, key, path)
			}
		}
	}
	t, err := fromUnigram(uni, &fam, path, maxLen)
	if err != nil {
		return nil, err
	}
	if t.spm, err = os.ReadFile(path); err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	return t, nil
}

// fromUnigram wraps a Unigram pipeline into a Tokenizer truncating at maxLen, with fam's
// special tokens, which the vocabulary must have.
func fromUnigram(uni *tokenizers.Tokenizer, fam *unigramFamily, path string, maxLen int) (*Tokenizer, error) {
	if specials := 2 + fam.pairSeps; maxLen < specials {
		return nil, fmt.Errorf("bert: max_len must be at least %d (a pair of texts holds %d special tokens), got %d", specials, specials, maxLen)
	}
	uni, err := uni.WithMaxLen(maxLen)
	if err != nil {
		return nil, fmt.Errorf("bert: %s: %w", path, err)
	}
	tokens := make([]string, uni.VocabSize())
	ids := make(map[string]int32, len(tokens))
	for i := range tokens {
		tokens[i] = uni.Token(int32(i))
		ids[tokens[i]] = int32(i)
	}
	sp := specialTokens{pairSeps: fam.pairSeps, pairTypeID: fam.pairTypeID}
	for _, s := range []struct {
		token string
		into  *int32
	}{{fam.cls, &sp.cls}, {fam.sep, &sp.sep}, {fam.pad, &sp.pad}} {
		id, ok := ids[s.token]
		if !ok {
			return nil, fmt.Errorf("bert: %s: the vocabulary has no %s token", path, s.token)
		}
		*s.into = id
	}
	return &Tokenizer{tokens: tokens, ids: ids, modelSize: len(tokens), maxLen: maxLen, special: sp, uniFamily: fam,
		added: tokenizers.NewAddedVocab(uni.AddedTokens(), nil), buckets: []int{maxLen}, vocabFrom: path, uni: uni}, nil
}
