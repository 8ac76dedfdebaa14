package tokenizers

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Reading the tokenizer of a Hugging Face model folder, as transformers' AutoTokenizer does
// from the folder alone: the files say the pipeline, and tokenizer_config.json and
// special_tokens_map.json name the special tokens (SpecialToken).

// The special tokens of BERT's WordPiece tokenizers, which transformers' BertTokenizer adds
// when the files do not name others.
const (
	bertUnk, bertSep, bertPad, bertCls, bertMask = "[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"
)

// specialRoles are the keys of tokenizer_config.json that name a special token, in the
// order transformers adds them.
var specialRoles = []string{"unk_token", "sep_token", "pad_token", "cls_token", "mask_token", "bos_token", "eos_token"}

// FromFolder reads the tokenizer of a model folder, trying in order:
//
//   - vocab.txt: BERT's WordPiece, with BertNormalizer's switches from tokenizer_config.json
//     (do_lower_case, strip_accents, tokenize_chinese_chars), BertPreTokenizer, BertProcessing
//     over cls_token and sep_token, and the added tokens transformers' BertTokenizer reads:
//     the special tokens named in tokenizer_config.json or special_tokens_map.json (else
//     [UNK], [SEP], [PAD], [CLS], [MASK]), their extra_special_tokens (or
//     additional_special_tokens), tokenizer_config.json's added_tokens_decoder (whose flags
//     win) and added_tokens.json;
//   - tokenizer.json (see Parse; a WordPiece one gets BERT's special tokens it lacks, as
//     transformers' BertTokenizer adds them);
//   - spm.model: a SentencePiece Unigram model as DeBERTa-v2/v3's converter builds it (see
//     LoadSentencePiece), its special tokens [CLS], [SEP], [PAD], [UNK], [MASK] unless
//     tokenizer_config.json or special_tokens_map.json rename them;
//   - vocab.json and merges.txt: RoBERTa's byte-level BPE, as transformers' RobertaTokenizer
//     builds it: ByteLevel with tokenizer_config.json's add_prefix_space (false when absent),
//     BPE without an unknown token, RobertaProcessing over cls_token and sep_token with its
//     trim_offsets (true when absent), and the special tokens <s>, </s>, <unk>, <pad>, <mask>
//     unless the files name others, with the added tokens as for vocab.txt.
func FromFolder(dir string) (*Tokenizer, error) {
	cfg, err := readFolderConfig(dir)
	if err != nil {
		return nil, err
	}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	var t *Tokenizer
	switch {
	case exists("vocab.txt"):
		t, err = readWordPieceFolder(dir, cfg)
	case exists("tokenizer.json"):
		t, err = readJSONFolder(dir, cfg)
	case exists("spm.model"):
		t, err = readSentencePieceFolder(dir, cfg)
	case exists("vocab.json") && exists("merges.txt"):
		t, err = readRobertaFolder(dir, cfg)
	default:
		return nil, fmt.Errorf("tokenizers: model folder %s has neither vocab.txt nor tokenizer.json nor spm.model (nor vocab.json with merges.txt)", dir)
	}
	if err != nil {
		return nil, err
	}
	t.cleanUpSpaces = cfg.bool("clean_up_tokenization_spaces", false)
	return t, nil
}

// SpecialToken is the token the folder's files name for a role (tokenizer_config.json's
// and special_tokens_map.json's "pad_token", "cls_token", "sep_token", "unk_token",
// "mask_token", "bos_token", "eos_token"; a pipeline's defaults where they say none), and
// whether it is named and in the vocabulary.
func (t *Tokenizer) SpecialToken(role string) (string, bool) {
	tok, ok := t.specials[role]
	if !ok {
		return "", false
	}
	_, ok = t.ids[tok]
	return tok, ok
}

// folderConfig is what tokenizer_config.json and special_tokens_map.json hold.
type folderConfig struct {
	dir            string
	config, tokMap map[string]json.RawMessage
}

func readFolderConfig(dir string) (*folderConfig, error) {
	c := &folderConfig{dir: dir}
	if err := readJSONIfPresent(filepath.Join(dir, "tokenizer_config.json"), &c.config); err != nil {
		return nil, err
	}
	if err := readJSONIfPresent(filepath.Join(dir, "special_tokens_map.json"), &c.tokMap); err != nil {
		return nil, err
	}
	return c, nil
}

// lookup is the value of key in tokenizer_config.json, else special_tokens_map.json, and the
// file it was found in.
func (c *folderConfig) lookup(key string) (json.RawMessage, string) {
	if v, ok := c.config[key]; ok {
		return v, filepath.Join(c.dir, "tokenizer_config.json")
	}
	if v, ok := c.tokMap[key]; ok {
		return v, filepath.Join(c.dir, "special_tokens_map.json")
	}
	return nil, ""
}

// special is the token the files name for role; ok false when they name none (null included).
func (c *folderConfig) special(role string) (AddedToken, bool, error) {
	raw, file := c.lookup(role)
	if raw == nil {
		return AddedToken{}, false, nil
	}
	tok, err := parseSpecial(raw)
	if err != nil {
		return AddedToken{}, false, fmt.Errorf("tokenizers: %s: %s: %w", file, role, err)
	}
	return tok, tok.Content != "", nil
}

// roles are the special tokens the files name, over defaults.
func (c *folderConfig) roles(defaults map[string]string) (map[string]string, error) {
	out := maps.Clone(defaults)
	if out == nil {
		out = map[string]string{}
	}
	for _, role := range specialRoles {
		tok, ok, err := c.special(role)
		if err != nil {
			return nil, err
		}
		if ok {
			out[role] = tok.Content
		}
	}
	return out, nil
}

// bool is a boolean of tokenizer_config.json, def when absent, null or not a boolean.
func (c *folderConfig) bool(key string, def bool) bool {
	var v *bool
	if raw, ok := c.config[key]; ok && json.Unmarshal(raw, &v) == nil && v != nil {
		return *v
	}
	return def
}

// addedDecoder reads tokenizer_config.json's added_tokens_decoder, by id.
func (c *folderConfig) addedDecoder() ([]AddedToken, error) {
	raw, ok := c.config["added_tokens_decoder"]
	if !ok {
		return nil, nil
	}
	path := filepath.Join(c.dir, "tokenizer_config.json")
	var decoder map[string]AddedTokenJSON
	if err := json.Unmarshal(raw, &decoder); err != nil {
		return nil, fmt.Errorf("tokenizers: parsing added_tokens_decoder of %s: %w", path, err)
	}
	var out []AddedToken
	for key, a := range decoder {
		id, err := strconv.ParseInt(key, 10, 32)
		if err != nil || a.Content == "" {
			return nil, fmt.Errorf("tokenizers: %s: added_tokens_decoder entry %q: %q is not a token with an id", path, key, a.Content)
		}
		out = append(out, a.Token(int32(id)))
	}
	slices.SortFunc(out, func(a, b AddedToken) int { return int(a.ID) - int(b.ID) })
	return out, nil
}

// addedPlan are the added tokens of a folder: the ones the files give an id, then the
// special tokens without one, which get the ids the tokenizers library gives them.
type addedPlan struct {
	withID   []AddedToken
	explicit map[string]bool // contents whose id a file gives
	pending  []AddedToken
}

// withIDs returns the added tokens with their ids: the files' ones, then for the others
// their id in vocab, or else the next id as the tokenizers library assigns it (see
// newTokenizer). A content already given keeps its first entry.
func (p *addedPlan) withIDs(vocab map[string]int32, n int) []AddedToken {
	out := slices.Clone(p.withID)
	have := make(map[string]bool, len(out)+len(p.pending))
	maxAdded := int64(-1)
	for _, a := range out {
		have[a.Content] = true
		maxAdded = max(maxAdded, int64(a.ID))
	}
	for _, a := range p.pending {
		if have[a.Content] {
			continue
		}
		have[a.Content] = true
		if id, ok := vocab[a.Content]; ok {
			a.ID = id
		} else if maxAdded >= int64(n) {
			a.ID = int32(min(maxAdded+1, 1<<31-1))
		} else {
			a.ID = int32(n)
		}
		maxAdded = max(maxAdded, int64(a.ID))
		out = append(out, a)
	}
	return out
}

// readWordPieceFolder reads a vocab.txt folder.
func readWordPieceFolder(dir string, cfg *folderConfig) (*Tokenizer, error) {
	vocabPath := filepath.Join(dir, "vocab.txt")
	tokens, err := ReadVocabTxt(vocabPath)
	if err != nil {
		return nil, err
	}
	configPath := filepath.Join(dir, "tokenizer_config.json")
	if !cfg.bool("do_basic_tokenize", true) {
		return nil, fmt.Errorf("tokenizers: %s: do_basic_tokenize=false is not supported", configPath)
	}
	norm := BertNormalizer{CleanText: true, Lowercase: cfg.bool("do_lower_case", true), HandleChineseChars: cfg.bool("tokenize_chinese_chars", true)}
	norm.StripAccents = cfg.bool("strip_accents", norm.Lowercase) // null follows do_lower_case
	plan, roles, err := readFolderAdded(cfg, bertRoles())
	if err != nil {
		return nil, err
	}
	return newWordPieceTokenizer(tokens, norm, plan, roles, vocabPath)
}

// NewBertWordPiece is BERT's uncased WordPiece pipeline over a vocabulary (token i has id
// i): BertNormalizer, BertPreTokenizer, WordPiece, [CLS] A [SEP] (B [SEP]), and [UNK], [SEP],
// [PAD], [CLS], [MASK] as special tokens. source names the vocabulary in errors.
func NewBertWordPiece(vocab []string, source string) (*Tokenizer, error) {
	plan, roles := bertPlan()
	norm := BertNormalizer{CleanText: true, Lowercase: true, StripAccents: true, HandleChineseChars: true}
	return newWordPieceTokenizer(slices.Clone(vocab), norm, plan, roles, source)
}

// bertPlan is BERT's special tokens, as transformers' BertTokenizer adds them: special and
// not normalized.
func bertPlan() (*addedPlan, map[string]string) {
	plan := &addedPlan{explicit: map[string]bool{}}
	for _, name := range []string{bertUnk, bertSep, bertPad, bertCls, bertMask} {
		plan.pending = append(plan.pending, AddedToken{Content: name, Special: true})
	}
	return plan, map[string]string{"unk_token": bertUnk, "sep_token": bertSep, "pad_token": bertPad, "cls_token": bertCls, "mask_token": bertMask}
}

// newWordPieceTokenizer builds BERT's pipeline over tokens with the added tokens of plan,
// roles naming the unknown, padding and post-processor's tokens.
func newWordPieceTokenizer(tokens []string, norm BertNormalizer, plan *addedPlan, roles map[string]string, source string) (*Tokenizer, error) {
	if len(tokens) == 0 {
		return nil, fmt.Errorf("tokenizers: %s: empty vocabulary", source)
	}
	ids := make(map[string]int32, len(tokens))
	for i, tok := range tokens {
		ids[tok] = int32(i) // a repeated token keeps its last id, as transformers' load_vocab
	}
	for _, role := range []string{"pad_token", "unk_token", "cls_token", "sep_token"} {
		if _, ok := ids[roles[role]]; !ok && !plan.explicit[roles[role]] {
			return nil, fmt.Errorf("tokenizers: %s: vocabulary has no %s token (%s)", source, roles[role], role)
		}
	}
	wp := &WordPiece{vocab: tokens, ids: ids, prefix: "##", maxChars: DefaultMaxInputChars}
	t := &Tokenizer{model: wp, normalizer: norm, preTokenizer: BertPreTokenizer{}, source: source, specials: roles,
		decoder: WordPieceDecoder{Prefix: "##", Cleanup: true}}
	t, err := newTokenizer(t, plan.withIDs(ids, len(tokens)))
	if err != nil {
		return nil, err
	}
	wp.unk = t.ids[roles["unk_token"]]
	t.post = newBertLike(specialPair{roles["cls_token"], t.ids[roles["cls_token"]]}, specialPair{roles["sep_token"], t.ids[roles["sep_token"]]}, false)
	return t, nil
}

// folderRoles are a tokenizer class's special tokens: the defaults of its roles, the order
// transformers adds them in, and the roles that must be set.
type folderRoles struct {
	defaults map[string]string
	order    []string
	required []string
}

// bertRoles are BertTokenizer's.
func bertRoles() folderRoles {
	return folderRoles{defaults: map[string]string{"unk_token": bertUnk, "sep_token": bertSep, "pad_token": bertPad, "cls_token": bertCls, "mask_token": bertMask},
		order: specialRoles, required: []string{"unk_token", "sep_token", "pad_token", "cls_token"}}
}

// readFolderAdded reads the added tokens of a folder without tokenizer.json from
// tokenizer_config.json, special_tokens_map.json and added_tokens.json (each optional), and
// the roles of the special tokens.
func readFolderAdded(cfg *folderConfig, fr folderRoles) (*addedPlan, map[string]string, error) {
	plan := &addedPlan{explicit: map[string]bool{}}
	decoder, err := cfg.addedDecoder()
	if err != nil {
		return nil, nil, err
	}
	for _, a := range decoder {
		plan.withID = append(plan.withID, a)
		plan.explicit[a.Content] = true
	}
	var addedFile map[string]int32
	if err := readJSONIfPresent(filepath.Join(cfg.dir, "added_tokens.json"), &addedFile); err != nil {
		return nil, nil, err
	}
	var fromFile []AddedToken
	for content, id := range addedFile {
		if !plan.explicit[content] {
			fromFile = append(fromFile, AddedToken{Content: content, ID: id, Normalized: true})
			plan.explicit[content] = true
		}
	}
	slices.SortFunc(fromFile, func(a, b AddedToken) int { return int(a.ID) - int(b.ID) })
	plan.withID = append(plan.withID, fromFile...)

	roles := map[string]string{}
	for _, role := range fr.order {
		tok := AddedToken{Content: fr.defaults[role], Special: true}
		raw, file := cfg.lookup(role)
		if raw != nil {
			if tok, err = parseSpecial(raw); err != nil {
				return nil, nil, fmt.Errorf("tokenizers: %s: %s: %w", file, role, err)
			}
		}
		if slices.Contains(fr.required, role) && tok.Content == "" {
			return nil, nil, fmt.Errorf("tokenizers: %s: %s is not set", cfg.dir, role)
		}
		if tok.Content != "" {
			roles[role] = tok.Content
			plan.pending = append(plan.pending, tok)
		}
	}
	extra, file := cfg.lookup("extra_special_tokens")
	if extra == nil {
		extra, file = cfg.lookup("additional_special_tokens")
	}
	if extra != nil {
		var list []json.RawMessage
		if err := json.Unmarshal(extra, &list); err != nil {
			var named map[string]json.RawMessage // {"image_token": "<image>"}
			if json.Unmarshal(extra, &named) != nil {
				return nil, nil, fmt.Errorf("tokenizers: %s: the extra special tokens are not a list: %w", file, err)
			}
			for _, k := range slices.Sorted(maps.Keys(named)) {
				list = append(list, named[k])
			}
		}
		for _, raw := range list {
			tok, err := parseSpecial(raw)
			if err != nil {
				return nil, nil, fmt.Errorf("tokenizers: %s: extra special token: %w", file, err)
			}
			if tok.Content != "" {
				plan.pending = append(plan.pending, tok)
			}
		}
	}
	return plan, roles, nil
}

// readJSONFolder reads a folder's tokenizer.json.
func readJSONFolder(dir string, cfg *folderConfig) (*Tokenizer, error) {
	path := filepath.Join(dir, "tokenizer.json")
	contents, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizers: %w", err)
	}
	t, added, err := parsePipeline(contents, path)
	if err != nil {
		return nil, err
	}
	defaults := map[string]string{}
	if wp, ok := t.model.(*WordPiece); ok {
		// transformers' BertTokenizer adds BERT's special tokens the file lacks.
		plan, roles := bertPlan()
		plan.withID = added
		for _, a := range added {
			plan.explicit[a.Content] = true
		}
		added = plan.withIDs(wp.ids, len(wp.vocab))
		defaults = roles
		defaults["unk_token"] = wp.vocab[wp.unk]
	}
	if t.specials, err = cfg.roles(defaults); err != nil {
		return nil, err
	}
	return newTokenizer(t, added)
}

// readSentencePieceFolder reads a DeBERTa-v2/v3 folder that has only spm.model, as
// transformers' DebertaV2TokenizerFast converts it. do_lower_case or split_by_punct set to
// true, and added tokens other than the model's, are refused naming the file and the key.
func readSentencePieceFolder(dir string, cfg *folderConfig) (*Tokenizer, error) {
	path := filepath.Join(dir, "spm.model")
	configPath := filepath.Join(dir, "tokenizer_config.json")
	for _, key := range []struct {
		name string
		want bool
	}{{"do_lower_case", false}, {"split_by_punct", false}, {"add_prefix_space", true}} {
		if v := cfg.bool(key.name, key.want); v != key.want {
			return nil, fmt.Errorf("tokenizers: %s: %s %v is not supported with spm.model (DeBERTa-v3's folders have %v)", configPath, key.name, v, key.want)
		}
	}
	roles, err := cfg.roles(map[string]string{"cls_token": bertCls, "sep_token": bertSep, "pad_token": bertPad, "unk_token": bertUnk, "mask_token": bertMask})
	if err != nil {
		return nil, err
	}
	t, err := LoadSentencePiece(path, SentencePieceOptions{Cls: roles["cls_token"], Sep: roles["sep_token"], Extra: []string{roles["mask_token"]}})
	if err != nil {
		return nil, err
	}
	t.specials = roles
	decoder, err := cfg.addedDecoder()
	if err != nil {
		return nil, err
	}
	for _, a := range decoder {
		if have, ok := t.ID(a.Content); !ok || have != a.ID {
			return nil, fmt.Errorf("tokenizers: %s: added_tokens_decoder has %q with id %d, which %s does not give it: "+
				"added tokens beyond the SentencePiece model are not supported without a tokenizer.json", configPath, a.Content, a.ID, path)
		}
	}
	return t, nil
}

// parseSpecial reads a special token of tokenizer_config.json or special_tokens_map.json: a
// string, or an AddedToken object ({"content": ..., "lstrip": ..., ...}); null is none.
func parseSpecial(raw json.RawMessage) (AddedToken, error) {
	var s *string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s == nil {
			return AddedToken{}, nil
		}
		return AddedToken{Content: *s, Special: true}, nil
	}
	a := AddedTokenJSON{Special: true}
	if err := json.Unmarshal(raw, &a); err != nil {
		return AddedToken{}, fmt.Errorf("%s is neither a token nor an AddedToken", raw)
	}
	return a.Token(0), nil
}

// readJSONIfPresent decodes the JSON file path into v; a missing file leaves v alone.
func readJSONIfPresent(path string, v any) error {
	contents, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("tokenizers: reading %w", err)
	}
	if err := json.Unmarshal(contents, v); err != nil {
		return fmt.Errorf("tokenizers: parsing %s: %w", path, err)
	}
	return nil
}

// readRobertaFolder reads a folder with vocab.json and merges.txt.
func readRobertaFolder(dir string, cfg *folderConfig) (*Tokenizer, error) {
	vocabPath, mergesPath := filepath.Join(dir, "vocab.json"), filepath.Join(dir, "merges.txt")
	var vocab map[string]int32
	if err := readJSONIfPresent(vocabPath, &vocab); err != nil {
		return nil, err
	}
	if len(vocab) == 0 {
		return nil, fmt.Errorf("tokenizers: %s: empty vocabulary", vocabPath)
	}
	tokens, err := denseVocab(vocab, vocabPath)
	if err != nil {
		return nil, err
	}
	contents, err := os.ReadFile(mergesPath)
	if err != nil {
		return nil, fmt.Errorf("tokenizers: %w", err)
	}
	m := &BPE{vocab: tokens, ids: vocab, ranks: map[string]int{}, unk: -1}
	for i, line := range strings.Split(strings.TrimSuffix(string(contents), "\n"), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if i == 0 && strings.HasPrefix(line, "#version") || line == "" {
			continue
		}
		left, right, ok := strings.Cut(line, " ")
		if !ok || strings.Contains(right, " ") {
			return nil, fmt.Errorf("tokenizers: %s:%d: %q is not two tokens separated by a space", mergesPath, i+1, line)
		}
		if key := left + " " + right; !hasKey(m.ranks, key) {
			m.ranks[key] = len(m.ranks)
		}
	}
	prefixSpace := cfg.bool("add_prefix_space", false)
	fr := folderRoles{defaults: map[string]string{"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>",
		"pad_token": "<pad>", "cls_token": "<s>", "mask_token": "<mask>"},
		order:    []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"},
		required: []string{"sep_token", "cls_token"}}
	plan, roles, err := readFolderAdded(cfg, fr)
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{model: m, preTokenizer: ByteLevel{AddPrefixSpace: prefixSpace, UseRegex: true}, decoder: ByteLevelDecoder{},
		source: vocabPath, specials: roles}
	if t, err = newTokenizer(t, plan.withIDs(vocab, len(tokens))); err != nil {
		return nil, err
	}
	post := newBertLike(specialPair{roles["cls_token"], t.ids[roles["cls_token"]]}, specialPair{roles["sep_token"], t.ids[roles["sep_token"]]}, true)
	post.TrimOffsets, post.AddPrefixSpace = cfg.bool("trim_offsets", true), prefixSpace
	t.post = post
	return t, nil
}
