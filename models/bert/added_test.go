package bert

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeTestFile writes contents to dir/name.
func writeTestFile(t *testing.T, dir, name, contents string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(contents), 0o644); err != nil {
		t.Fatal(err)
	}
}

// microWordPieceJSON is microVocab as a HF WordPiece tokenizer.json, with addedTokens (a JSON
// array) as its added_tokens.
func microWordPieceJSON(t *testing.T, addedTokens string) string {
	t.Helper()
	vocab := map[string]int{}
	for i, tok := range microVocab {
		vocab[tok] = i
	}
	doc := map[string]any{
		"added_tokens":   json.RawMessage(addedTokens),
		"normalizer":     map[string]any{"type": "BertNormalizer", "lowercase": true, "strip_accents": nil, "handle_chinese_chars": true},
		"pre_tokenizer":  map[string]any{"type": "BertPreTokenizer"},
		"post_processor": map[string]any{"type": "BertProcessing", "cls": []any{ClsToken, vocab[ClsToken]}, "sep": []any{SepToken, vocab[SepToken]}},
		"model":          map[string]any{"type": "WordPiece", "vocab": vocab, "unk_token": UnkToken, "continuing_subword_prefix": "##", "max_input_chars_per_word": 100},
	}
	contents, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(contents)
}

// microSpecials are microVocab's special tokens as the added_tokens of a tokenizer.json, as
// transformers writes them (special, not normalized).
const microSpecials = `{"id": 0, "content": "[PAD]", "special": true}, {"id": 1, "content": "[UNK]", "special": true},
	{"id": 2, "content": "[CLS]", "special": true}, {"id": 3, "content": "[SEP]", "special": true},
	{"id": 4, "content": "[MASK]", "special": true}`

// TestWordPieceSpecialTokensInText: the special tokens written in a text are cut out before
// the text is normalized (lowercased, split at punctuation), as transformers does, whether
// the tokenizer comes from vocab.txt (special tokens from the BERT defaults) or from
// tokenizer.json (its added_tokens). Written lowercase they are not special (not normalized).
func TestWordPieceSpecialTokensInText(t *testing.T) {
	txtDir, jsonDir := t.TempDir(), t.TempDir()
	writeTestFile(t, txtDir, "vocab.txt", strings.Join(microVocab, "\n")+"\n")
	writeTestFile(t, jsonDir, "tokenizer.json", microWordPieceJSON(t, "["+microSpecials+"]"))
	cases := []struct {
		text string
		want []int32
	}{
		{"[CLS] hello [SEP] world[MASK]!", []int32{2, 27, 3, 28, 4, 14}},
		{"[cls] [Sep]", []int32{1, 1, 1, 1, 1, 1}}, // "[", "cls", "]", "[", "sep", "]", none in microVocab
		{"the[PAD][UNK]movie", []int32{5, 0, 1, 6}},
		{"[MASK", []int32{1, 1}},
	}
	for _, dir := range []string{txtDir, jsonDir} {
		tok, err := LoadTokenizer(dir, 32)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			want := append(append([]int32{2}, c.want...), 3)
			if got := tok.Encode(c.text); !slices.Equal(got, want) {
				t.Errorf("%s: Encode(%q) = %v, want %v", tok.vocabFrom, c.text, got, want)
			}
		}
	}
}

// TestAddedTokenRules: the added-token rule of the tokenizers library on a WordPiece
// tokenizer, from tokenizer_config.json's added_tokens_decoder (vocab.txt folder) and from
// tokenizer.json's added_tokens: not-normalized tokens are matched in the raw text,
// normalized ones (their content normalized too) in the normalized pieces left between;
// single_word refuses a match inside a word, lstrip and rstrip swallow the whitespace beside.
func TestAddedTokenRules(t *testing.T) {
	const added = `{"id": 33, "content": "GoAccel", "normalized": false, "single_word": true, "special": false},
		{"id": 34, "content": "Hyper", "normalized": true, "rstrip": true, "special": false}`
	txtDir, jsonDir := t.TempDir(), t.TempDir()
	writeTestFile(t, txtDir, "vocab.txt", strings.Join(microVocab, "\n")+"\n")
	writeTestFile(t, txtDir, "tokenizer_config.json", `{"do_lower_case": true, "added_tokens_decoder": {
		"4": {"content": "[MASK]", "lstrip": true, "normalized": false, "rstrip": false, "single_word": false, "special": true},
		"33": {"content": "GoAccel", "lstrip": false, "normalized": false, "rstrip": false, "single_word": true, "special": false},
		"34": {"content": "Hyper", "lstrip": false, "normalized": true, "rstrip": true, "single_word": false, "special": false}}}`)
	writeTestFile(t, jsonDir, "tokenizer.json", microWordPieceJSON(t, "["+
		strings.Replace(microSpecials, `"content": "[MASK]",`, `"content": "[MASK]", "lstrip": true,`, 1)+", "+added+"]"))
	cases := []struct {
		text string
		want []int32
	}{
		// "GoAccel" alone is matched, not inside "xGoAccel" (single_word) nor lowercase (not
		// normalized); "HYPER" and "hyper" are (normalized) and swallow the spaces after
		// them; "  [MASK]" swallows the two spaces before it.
		{"the GoAccel xGoAccel goaccel HYPER   movie hyper!  [MASK]", []int32{5, 33, 1, 1, 34, 6, 34, 14, 4}},
		{"GoAccel!GoAccel_", []int32{33, 14, 1, 1}}, // "_" is a word character: the second is inside a word
		{"hypergoaccel", []int32{34, 1}},
	}
	for _, dir := range []string{txtDir, jsonDir} {
		tok, err := LoadTokenizer(dir, 32)
		if err != nil {
			t.Fatal(err)
		}
		if tok.VocabSize() != 35 || tok.Token(33) != "GoAccel" {
			t.Errorf("%s: VocabSize %d, Token(33) %q; want 35, GoAccel", tok.vocabFrom, tok.VocabSize(), tok.Token(33))
		}
		for _, c := range cases {
			want := append(append([]int32{2}, c.want...), 3)
			if got := tok.Encode(c.text); !slices.Equal(got, want) {
				t.Errorf("%s: Encode(%q) = %v, want %v", tok.vocabFrom, c.text, got, want)
			}
		}
	}
}

// bpeAddedDoc is a byte-level BPE tokenizer.json with a Lowercase normalizer and added
// tokens "AB" (normalized: matched as "ab" in the lowercased text), "BC" (not normalized:
// matched in the raw text, first) and "<x>" (single_word).
const bpeAddedDoc = `{
  "added_tokens": [{"id": 0, "content": "<s>", "special": true}, {"id": 1, "content": "<pad>", "special": true},
                   {"id": 2, "content": "</s>", "special": true}, {"id": 3, "content": "<mask>", "lstrip": true, "special": true},
                   {"id": 12, "content": "AB", "normalized": true}, {"id": 13, "content": "BC", "normalized": false},
                   {"id": 14, "content": "<x>", "single_word": true, "normalized": false}],
  "normalizer": {"type": "Lowercase"},
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0], "trim_offsets": true, "add_prefix_space": false},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "vocab": {"<s>": 0, "<pad>": 1, "</s>": 2, "<mask>": 3,
    "a": 4, "b": 5, "c": 6, "Ġ": 7, "ab": 8, "abc": 9, "Ġa": 10, "aa": 11},
    "merges": [["a", "b"], ["ab", "c"], "Ġ a", "a a"]}
}`

// TestBPEAddedTokenNormalized: the byte-level BPE honours each added token's normalized and
// single_word fields.
func TestBPEAddedTokenNormalized(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, dir, "tokenizer.json", bpeAddedDoc)
	tok, err := LoadTokenizer(dir, 16)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		text string
		want []int32
	}{
		{"abc", []int32{12, 6}},         // "AB" normalized is "ab"
		{"ABC", []int32{4, 13}},         // "BC" is matched in the raw text before "ab" in the normalized one
		{"Abc", []int32{12, 6}},         // lowercased: "ab" + "c"
		{"a<x> <x>", []int32{4, 7, 14}}, // the first "<x>" is inside a word; "<", "x", ">" are not in the vocabulary
	}
	for _, c := range cases {
		if got := tok.Encode(c.text); !slices.Equal(got, append(append([]int32{0}, c.want...), 2)) {
			t.Errorf("Encode(%q) = %v, want <s> %v </s>", c.text, got, c.want)
		}
	}
}

// TestTokenizerJSONRefusesBadIDs: a tokenizer.json whose ids go beyond its tokens (a crafted
// id near 2e9 once made a 32 GB table) or repeat is refused, naming the token, the id and the
// file, for both models.
func TestTokenizerJSONRefusesBadIDs(t *testing.T) {
	cases := []struct {
		name, doc, want string
	}{
		{"BPE vocab id", strings.Replace(bpeAddedDoc, `"aa": 11`, `"aa": 2000000000`, 1), `"aa" has id 2000000000`},
		{"BPE added id", strings.Replace(bpeAddedDoc, `"id": 14,`, `"id": 2000000000,`, 1), `"<x>" has id 2000000000`},
		{"BPE repeated id", strings.Replace(bpeAddedDoc, `"aa": 11`, `"aa": 10`, 1), `id 10`},
		{"WordPiece added id", microWordPieceJSON(t, `[{"id": 2000000000, "content": "huge", "special": false}]`), `"huge" has id 2000000000`},
		{"WordPiece vocab id", strings.Replace(microWordPieceJSON(t, "[]"), `"fun":32`, `"fun":2000000000`, 1), `"fun" has id 2000000000`},
		{"WordPiece added id of a vocab token", microWordPieceJSON(t, `[{"id": 7, "content": "[CLS]", "special": true}]`), `"[CLS]" has id 7`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTestFile(t, dir, "tokenizer.json", c.doc)
			_, err := LoadTokenizer(dir, 16)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Join(dir, "tokenizer.json")) {
				t.Fatalf("error %v, want one with %s and the file name", err, c.want)
			}
			t.Log(err)
		})
	}
}
