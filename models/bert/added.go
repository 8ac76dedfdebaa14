package bert

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/goaccel/goaccel/tokenizers"
)

// The added vocabulary: the special tokens ([CLS], [SEP], [PAD], [UNK], [MASK]; <s>, </s>,
// <pad>, <unk>, <mask>) and the words a user added (tokenizer.json's added_tokens,
// tokenizer_config.json's added_tokens_decoder, added_tokens.json), matched in the text
// before it is normalized as tokenizers.AddedVocab does. Example with bert-base-uncased:
// "[CLS] Hello[MASK]!" -> [CLS], "hello", [MASK], "!" (101, 7592, 103, 999), where "[cls]"
// would be "[", "cl", "##s", "]".

// addedToken is one token of the added vocabulary.
type addedToken = tokenizers.AddedToken

// addedJSON is an added token as tokenizer.json and tokenizer_config.json write it.
type addedJSON = tokenizers.AddedTokenJSON

// idTable builds the id -> token table of a tokenizer from its model vocabulary and its added
// tokens: lines, when the vocabulary is a vocab.txt (token i has id i, a repeated line keeps
// its last id in vocab), or else vocab alone (tokenizer.json). Ids must be below the number
// of tokens (a crafted id of 2e9 must not size the table), each id must name one token, an
// added token that is in the vocabulary must have its id there, and no id may be left
// without a token. Errors name the token, the id and source (the file).
func idTable(vocab map[string]int32, lines []string, added []addedToken, source string) ([]string, error) {
	size := max(len(vocab), len(lines))
	seen := make(map[string]bool, len(added))
	for _, a := range added {
		if _, ok := vocab[a.Content]; !ok && !seen[a.Content] {
			seen[a.Content] = true
			size++
		}
	}
	tokens := make([]string, size)
	filled := make([]bool, size)
	set := func(tok string, id int32, what string) error {
		if id < 0 || int(id) >= size {
			return fmt.Errorf("bert: %s: %s %q has id %d, outside 0..%d (the %d tokens of the vocabulary and the added tokens)",
				source, what, tok, id, size-1, size)
		}
		if filled[id] && tokens[id] != tok {
			return fmt.Errorf("bert: %s: %s %q has id %d, which is already the id of %q", source, what, tok, id, tokens[id])
		}
		tokens[id], filled[id] = tok, true
		return nil
	}
	if lines != nil {
		copy(tokens, lines)
		for i := range lines {
			filled[i] = true
		}
	} else {
		for tok, id := range vocab {
			if err := set(tok, id, "token"); err != nil {
				return nil, err
			}
		}
	}
	for _, a := range added {
		if id, ok := vocab[a.Content]; ok && id != a.ID {
			return nil, fmt.Errorf("bert: %s: added token %q has id %d, but the vocabulary gives it id %d", source, a.Content, a.ID, id)
		}
		if err := set(a.Content, a.ID, "added token"); err != nil {
			return nil, err
		}
	}
	for id, ok := range filled {
		if !ok {
			return nil, fmt.Errorf("bert: %s: the ids of the tokens are not 0..%d without gaps: no token has id %d", source, size-1, id)
		}
	}
	return tokens, nil
}

// folderSpecials are the added tokens of a WordPiece tokenizer read from vocab.txt, before
// the ones without an id in the files are given one, and the special tokens it uses.
type folderSpecials struct {
	cls, sep, pad, unk string          // the tokens of the post-processor, padding and WordPiece
	explicit           map[string]bool // contents whose id a file gives
	withID             []addedToken    // added_tokens_decoder, then added_tokens.json
	pending            []addedToken    // the special tokens without an id, in order
}

// defaultSpecials are BERT's special tokens, as transformers' BertTokenizer adds them:
// special and not normalized.
func defaultSpecials() *folderSpecials {
	sp := &folderSpecials{cls: ClsToken, sep: SepToken, pad: PadToken, unk: UnkToken, explicit: map[string]bool{}}
	for _, name := range []string{UnkToken, SepToken, PadToken, ClsToken, MaskToken} {
		sp.pending = append(sp.pending, addedToken{Content: name, Special: true})
	}
	return sp
}

// withIDs returns the added tokens with their ids: the ids the files give, then for the others
// their id in the vocabulary (vocab, of n lines), or else the next free id after the
// vocabulary and the given ids, as the tokenizers library assigns them. A content already
// given keeps its first entry.
func (sp *folderSpecials) withIDs(vocab map[string]int32, n int) []addedToken {
	out := slices.Clone(sp.withID)
	have := make(map[string]bool, len(out)+len(sp.pending))
	next := int64(n)
	for _, a := range out {
		have[a.Content] = true
		next = max(next, int64(a.ID)+1)
	}
	for _, a := range sp.pending {
		if have[a.Content] {
			continue
		}
		have[a.Content] = true
		if id, ok := vocab[a.Content]; ok {
			a.ID = id
		} else {
			a.ID = int32(min(next, math.MaxInt32))
			next++
		}
		out = append(out, a)
	}
	return out
}

// readFolderSpecials reads the added tokens of a vocab.txt folder from tokenizer_config.json,
// special_tokens_map.json and added_tokens.json (each optional).
func readFolderSpecials(dir string) (*folderSpecials, error) {
	sp := defaultSpecials()
	sp.pending = nil
	var config, tokMap map[string]json.RawMessage
	for _, f := range []struct {
		name string
		into *map[string]json.RawMessage
	}{{"tokenizer_config.json", &config}, {"special_tokens_map.json", &tokMap}} {
		if err := readJSONIfPresent(filepath.Join(dir, f.name), f.into); err != nil {
			return nil, err
		}
	}
	lookup := func(key string) (json.RawMessage, string) {
		if v, ok := config[key]; ok {
			return v, filepath.Join(dir, "tokenizer_config.json")
		}
		if v, ok := tokMap[key]; ok {
			return v, filepath.Join(dir, "special_tokens_map.json")
		}
		return nil, ""
	}

	// added_tokens_decoder: ids and flags, which win over the other files.
	if raw, ok := config["added_tokens_decoder"]; ok {
		path := filepath.Join(dir, "tokenizer_config.json")
		var decoder map[string]addedJSON
		if err := json.Unmarshal(raw, &decoder); err != nil {
			return nil, fmt.Errorf("bert: parsing added_tokens_decoder of %s: %w", path, err)
		}
		for key, a := range decoder {
			id, err := strconv.ParseInt(key, 10, 32)
			if err != nil || a.Content == "" {
				return nil, fmt.Errorf("bert: %s: added_tokens_decoder entry %q: %q is not a token with an id", path, key, a.Content)
			}
			sp.withID = append(sp.withID, a.Token(int32(id)))
			sp.explicit[a.Content] = true
		}
		slices.SortFunc(sp.withID, func(a, b addedToken) int { return int(a.ID) - int(b.ID) })
	}
	var addedFile map[string]int32
	path := filepath.Join(dir, "added_tokens.json")
	if err := readJSONIfPresent(path, &addedFile); err != nil {
		return nil, err
	}
	var fromFile []addedToken
	for content, id := range addedFile {
		if !sp.explicit[content] {
			fromFile = append(fromFile, addedToken{Content: content, ID: id, Normalized: true})
			sp.explicit[content] = true
		}
	}
	slices.SortFunc(fromFile, func(a, b addedToken) int { return int(a.ID) - int(b.ID) })
	sp.withID = append(sp.withID, fromFile...)

	// The named special tokens, then the extra ones.
	for _, name := range []struct {
		key string
		use *string
		def string
	}{{"unk_token", &sp.unk, UnkToken}, {"sep_token", &sp.sep, SepToken}, {"pad_token", &sp.pad, PadToken},
		{"cls_token", &sp.cls, ClsToken}, {"mask_token", nil, MaskToken}, {"bos_token", nil, ""}, {"eos_token", nil, ""}} {
		tok := addedToken{Content: name.def, Special: true}
		if raw, file := lookup(name.key); raw != nil {
			var err error
			if tok, err = parseSpecial(raw); err != nil {
				return nil, fmt.Errorf("bert: %s: %s: %w", file, name.key, err)
			}
		}
		if name.use != nil {
			if tok.Content == "" {
				return nil, fmt.Errorf("bert: %s: %s is not set", dir, name.key)
			}
			*name.use = tok.Content
		}
		if tok.Content != "" {
			sp.pending = append(sp.pending, tok)
		}
	}
	extra, file := lookup("extra_special_tokens")
	if extra == nil {
		extra, file = lookup("additional_special_tokens")
	}
	if extra != nil {
		var list []json.RawMessage
		if err := json.Unmarshal(extra, &list); err != nil {
			var named map[string]json.RawMessage // {"image_token": "<image>"}
			if json.Unmarshal(extra, &named) != nil {
				return nil, fmt.Errorf("bert: %s: the extra special tokens are not a list: %w", file, err)
			}
			keys := slices.Sorted(maps.Keys(named))
			for _, k := range keys {
				list = append(list, named[k])
			}
		}
		for _, raw := range list {
			tok, err := parseSpecial(raw)
			if err != nil {
				return nil, fmt.Errorf("bert: %s: extra special token: %w", file, err)
			}
			if tok.Content != "" {
				sp.pending = append(sp.pending, tok)
			}
		}
	}
	return sp, nil
}

// parseSpecial reads a special token of tokenizer_config.json or special_tokens_map.json: a
// string, or an AddedToken object ({"content": ..., "lstrip": ..., ...}); null is none.
func parseSpecial(raw json.RawMessage) (addedToken, error) {
	var s *string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s == nil {
			return addedToken{}, nil
		}
		return addedToken{Content: *s, Special: true}, nil
	}
	a := addedJSON{Special: true}
	if err := json.Unmarshal(raw, &a); err != nil {
		return addedToken{}, fmt.Errorf("%s is neither a token nor an AddedToken", raw)
	}
	return a.Token(0), nil
}

// readJSONIfPresent decodes the JSON file path into v; a missing file leaves v alone.
func readJSONIfPresent(path string, v any) error {
	contents, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("bert: reading %w", err)
	}
	if err := json.Unmarshal(contents, v); err != nil {
		return fmt.Errorf("bert: parsing %s: %w", path, err)
	}
	return nil
}
