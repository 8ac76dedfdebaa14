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
	"strings"
	"unicode"
	"unicode/utf8"
)

// The added vocabulary: the tokens a Hugging Face tokenizer matches in the text before its
// model sees it, as the tokenizers library does. They are the special tokens ([CLS], [SEP],
// [PAD], [UNK], [MASK]; <s>, </s>, <pad>, <unk>, <mask>) and the words a user added
// (tokenizer.json's added_tokens, tokenizer_config.json's added_tokens_decoder,
// added_tokens.json). A text is encoded in two passes:
//
//  1. the tokens that are not normalized are found in the raw text, and cut out;
//  2. each piece left between them is normalized, and the normalized tokens (whose content
//     was normalized the same way) are found in it and cut out;
//
// and what is left is pre-tokenized and given to the model (WordPiece or BPE). Each pass
// takes the leftmost match, the longest one at that place, then goes on after it. A match of
// a single_word token with a word character (letter, mark, digit, connector such as "_")
// just before or just after it is dropped; lstrip and rstrip take the whitespace before and
// after a match into it. Example with bert-base-uncased: "[CLS] Hello[MASK]!" -> [CLS],
// "hello", [MASK], "!" (101, 7592, 103, 999), where "[cls]" would be "[", "cl", "##s", "]".

// addedToken is one token of the added vocabulary.
type addedToken struct {
	content    string
	id         int32
	special    bool // a special token (transformers skips it when decoding)
	normalized bool // matched in the normalized text, its content normalized too
	lstrip     bool // takes the whitespace on its left
	rstrip     bool // and on its right
	singleWord bool // only matched when no word character touches it
}

// addedJSON is an added token as tokenizer.json and tokenizer_config.json write it.
type addedJSON struct {
	ID         *int32 `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized *bool  `json:"normalized"`
	Special    bool   `json:"special"`
}

// token is the added token a, normalized when the file does not say (the tokenizers library
// default: special tokens are not normalized, the others are).
func (a *addedJSON) token(id int32) addedToken {
	normalized := !a.Special
	if a.Normalized != nil {
		normalized = *a.Normalized
	}
	return addedToken{content: a.Content, id: id, special: a.Special, normalized: normalized,
		lstrip: a.LStrip, rstrip: a.RStrip, singleWord: a.SingleWord}
}

// addedVocab matches the added tokens of a tokenizer in its texts.
type addedVocab struct {
	tokens []addedToken // as declared, for writing them back
	raw    matcher      // the tokens that are not normalized, on the raw text
	norm   matcher      // the normalized ones, on the normalized text
}

// matcher finds a set of patterns in a text: leftmost first, longest first at one place.
type matcher struct {
	byFirst map[byte][]matchEntry // patterns by their first byte, longest first
}

// matchEntry is one pattern of a matcher and the token it stands for.
type matchEntry struct {
	pattern string
	tok     *addedToken
}

// newAddedVocab indexes tokens; normalize is the tokenizer's normalizer, applied to the
// content of the normalized tokens.
func newAddedVocab(tokens []addedToken, normalize func(string) string) *addedVocab {
	v := &addedVocab{tokens: tokens}
	for i := range v.tokens {
		tok := &v.tokens[i]
		if tok.normalized {
			v.norm.add(normalize(tok.content), tok)
		} else {
			v.raw.add(tok.content, tok)
		}
	}
	return v
}

// add adds a pattern; an empty one (a content the normalizer erased) never matches.
func (m *matcher) add(pattern string, tok *addedToken) {
	if pattern == "" {
		return
	}
	if m.byFirst == nil {
		m.byFirst = map[byte][]matchEntry{}
	}
	entries := append(m.byFirst[pattern[0]], matchEntry{pattern, tok})
	// Stable: of two tokens with the same pattern the first declared wins.
	slices.SortStableFunc(entries, func(a, b matchEntry) int { return len(b.pattern) - len(a.pattern) })
	m.byFirst[pattern[0]] = entries
}

// split calls piece for every part of s in order: the matches (tok not nil, the text it
// covers with the whitespace that lstrip / rstrip took) and the text between them (tok nil,
// never empty).
func (m *matcher) split(s string, piece func(text string, tok *addedToken)) {
	if len(m.byFirst) == 0 {
		if s != "" {
			piece(s, nil)
		}
		return
	}
	done := 0 // s[:done] has been given to piece
	for pos := 0; pos < len(s); {
		start, tok := m.next(s, pos)
		if tok == nil {
			break
		}
		end := start + len(tok.pattern)
		pos = end
		t := tok.tok
		if t.singleWord && (endsWithWordChar(s[:start]) || startsWithWordChar(s[end:])) {
			continue
		}
		if t.lstrip {
			start = max(len(strings.TrimRightFunc(s[:start], isUnicodeSpace)), done)
		}
		if t.rstrip {
			end = len(s) - len(strings.TrimLeftFunc(s[end:], isUnicodeSpace))
			pos = end
		}
		if start > done {
			piece(s[done:start], nil)
		}
		piece(s[start:end], t)
		done = end
	}
	if done < len(s) {
		piece(s[done:], nil)
	}
}

// next finds the leftmost match at or after pos, the longest pattern there.
func (m *matcher) next(s string, pos int) (int, *matchEntry) {
	for i := pos; i < len(s); i++ {
		for j, e := range m.byFirst[s[i]] {
			if strings.HasPrefix(s[i:], e.pattern) {
				return i, &m.byFirst[s[i]][j]
			}
		}
	}
	return 0, nil
}

// segment appends the ids of text: the added tokens found in it, and the model's ids of the
// normalized pieces between them (plain gets each normalized piece).
func (v *addedVocab) segment(text string, normalize func(string) string, plain func(string, []int32) []int32, out []int32) []int32 {
	v.raw.split(text, func(piece string, tok *addedToken) {
		if tok != nil {
			out = append(out, tok.id)
			return
		}
		v.norm.split(normalize(piece), func(piece string, tok *addedToken) {
			if tok != nil {
				out = append(out, tok.id)
				return
			}
			out = plain(piece, out)
		})
	})
	return out
}

// isUnicodeSpace is the White_Space property (Rust's char::is_whitespace and regex \s).
func isUnicodeSpace(r rune) bool { return unicode.Is(unicode.White_Space, r) }

// isWordChar is a Unicode word character (regex \w): alphabetic, a mark, a decimal digit, a
// connector punctuation ("_") or a joiner.
func isWordChar(r rune) bool {
	return unicode.IsLetter(r) || unicode.In(r, unicode.Nl, unicode.Other_Alphabetic, unicode.M, unicode.Nd,
		unicode.Pc, unicode.Join_Control)
}

func endsWithWordChar(s string) bool {
	r, n := utf8.DecodeLastRuneInString(s)
	return n > 0 && isWordChar(r)
}

func startsWithWordChar(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return n > 0 && isWordChar(r)
}

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
		if _, ok := vocab[a.content]; !ok && !seen[a.content] {
			seen[a.content] = true
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
		if id, ok := vocab[a.content]; ok && id != a.id {
			return nil, fmt.Errorf("bert: %s: added token %q has id %d, but the vocabulary gives it id %d", source, a.content, a.id, id)
		}
		if err := set(a.content, a.id, "added token"); err != nil {
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
		sp.pending = append(sp.pending, addedToken{content: name, special: true})
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
		have[a.content] = true
		next = max(next, int64(a.id)+1)
	}
	for _, a := range sp.pending {
		if have[a.content] {
			continue
		}
		have[a.content] = true
		if id, ok := vocab[a.content]; ok {
			a.id = id
		} else {
			a.id = int32(min(next, math.MaxInt32))
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
			sp.withID = append(sp.withID, a.token(int32(id)))
			sp.explicit[a.Content] = true
		}
		slices.SortFunc(sp.withID, func(a, b addedToken) int { return int(a.id) - int(b.id) })
	}
	var addedFile map[string]int32
	path := filepath.Join(dir, "added_tokens.json")
	if err := readJSONIfPresent(path, &addedFile); err != nil {
		return nil, err
	}
	var fromFile []addedToken
	for content, id := range addedFile {
		if !sp.explicit[content] {
			fromFile = append(fromFile, addedToken{content: content, id: id, normalized: true})
			sp.explicit[content] = true
		}
	}
	slices.SortFunc(fromFile, func(a, b addedToken) int { return int(a.id) - int(b.id) })
	sp.withID = append(sp.withID, fromFile...)

	// The named special tokens, then the extra ones.
	for _, name := range []struct {
		key string
		use *string
		def string
	}{{"unk_token", &sp.unk, UnkToken}, {"sep_token", &sp.sep, SepToken}, {"pad_token", &sp.pad, PadToken},
		{"cls_token", &sp.cls, ClsToken}, {"mask_token", nil, MaskToken}, {"bos_token", nil, ""}, {"eos_token", nil, ""}} {
		tok := addedToken{content: name.def, special: true}
		if raw, file := lookup(name.key); raw != nil {
			var err error
			if tok, err = parseSpecial(raw); err != nil {
				return nil, fmt.Errorf("bert: %s: %s: %w", file, name.key, err)
			}
		}
		if name.use != nil {
			if tok.content == "" {
				return nil, fmt.Errorf("bert: %s: %s is not set", dir, name.key)
			}
			*name.use = tok.content
		}
		if tok.content != "" {
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
			if tok.content != "" {
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
		return addedToken{content: *s, special: true}, nil
	}
	a := addedJSON{Special: true}
	if err := json.Unmarshal(raw, &a); err != nil {
		return addedToken{}, fmt.Errorf("%s is neither a token nor an AddedToken", raw)
	}
	return a.token(0), nil
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
