package bert_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/models/bert"
	"github.com/goaccel/goaccel/tokenizers"
)

// These tests go through the package's exported API only (LoadTokenizer and the
// Tokenizer's methods), so that they hold whatever the tokenizer code becomes.

// robertaDoc is the RoBERTa BPE fixture's tokenizer.json, decoded for editing.
func robertaDoc(t testing.TB) map[string]any {
	t.Helper()
	contents, err := os.ReadFile(filepath.Join("testdata", "roberta_bpe", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(contents, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// folderWith writes files (name -> contents; a value that is not a string or []byte is
// written as JSON) into a new temporary folder.
func folderWith(t testing.TB, files map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	for name, v := range files {
		var b []byte
		switch v := v.(type) {
		case string:
			b = []byte(v)
		case []byte:
			b = v
		default:
			var err error
			if b, err = json.Marshal(v); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// loadNoPanic is LoadTokenizer, failing t when it panics.
func loadNoPanic(t *testing.T, dir string, maxLen int) (tok *bert.Tokenizer, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("LoadTokenizer(%s) panicked: %v", dir, r)
		}
	}()
	return bert.LoadTokenizer(dir, maxLen)
}

// wantErr fails t unless err names every one of want.
func wantErr(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one with %q", what, want)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q, want one with %q", what, err, w)
		}
	}
}

// TestBPEBadMerge: a merge that is not a pair of tokens ([] included, which tokenizers 0.20's
// list form allows to write) is an error naming the file and the merge, not a panic.
func TestBPEBadMerge(t *testing.T) {
	for _, merge := range []any{[]any{}, []any{"a"}, []any{"a", "b", "c"}, []any{1.0, "b"}, "ab", 3.0} {
		doc := robertaDoc(t)
		merges := doc["model"].(map[string]any)["merges"].([]any)
		merges[5] = merge
		dir := folderWith(t, map[string]any{"tokenizer.json": doc})
		_, err := loadNoPanic(t, dir, 16)
		wantErr(t, "merge "+string(mustJSON(t, merge)), err, filepath.Join(dir, "tokenizer.json"), "merge 5")
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBPESpecialTokenIDs: the special tokens of a BPE tokenizer's post-processor must be in
// the vocabulary with the ids the post-processor gives them: an id past the vocabulary, or a
// token it lacks (even when the file says id 0, which a missing token would read as), is an
// error naming the token and the file.
func TestBPESpecialTokenIDs(t *testing.T) {
	tpl := func(cls string, clsID float64) map[string]any {
		return map[string]any{"type": "TemplateProcessing",
			"single": []any{map[string]any{"SpecialToken": map[string]any{"id": cls, "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				map[string]any{"SpecialToken": map[string]any{"id": "</s>", "type_id": 0}}},
			"pair": []any{map[string]any{"SpecialToken": map[string]any{"id": cls, "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				map[string]any{"SpecialToken": map[string]any{"id": "</s>", "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}},
				map[string]any{"SpecialToken": map[string]any{"id": "</s>", "type_id": 1}}},
			"special_tokens": map[string]any{
				cls:    map[string]any{"id": cls, "ids": []any{clsID}, "tokens": []any{cls}},
				"</s>": map[string]any{"id": "</s>", "ids": []any{2.0}, "tokens": []any{"</s>"}}}}
	}
	for _, c := range []struct {
		post any
		want string
	}{
		{tpl("<s>", 999999), `"<s>"`},
		{tpl("<cls>", 0), `"<cls>"`},
		{map[string]any{"type": "RobertaProcessing", "cls": []any{"<cls>", 0.0}, "sep": []any{"</s>", 2.0}}, `<cls>`},
		{map[string]any{"type": "RobertaProcessing", "cls": []any{"<s>", 0.0}, "sep": []any{"</s>", 77777.0}}, `</s>`},
	} {
		doc := robertaDoc(t)
		doc["post_processor"] = c.post
		dir := folderWith(t, map[string]any{"tokenizer.json": doc})
		tok, err := loadNoPanic(t, dir, 16)
		if err == nil {
			t.Errorf("post_processor %s: loaded, Encode(hi) = %v; want an error", mustJSON(t, c.post), tok.Encode("hi"))
			continue
		}
		wantErr(t, "post_processor "+string(mustJSON(t, c.post)), err, "tokenizer.json", c.want)
	}
}

// TestInvalidUTF8 (found by FuzzTokenizerJSON): a byte that is not UTF-8 is kept as the
// byte it is by every kind of tokenizer, Encode and EncodeOffsets agree, and the offsets stay
// within the text.
func TestInvalidUTF8(t *testing.T) {
	for _, dir := range []string{filepath.Join("testdata", "roberta_bpe"), filepath.Join("..", "..", "tokenizers", "testdata", "xlmr")} {
		tok, err := bert.LoadTokenizer(dir, 32)
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range []string{"\xbc", "a\xffb c", "é\xe2\x82 x"} {
			var ids []int32
			var offs []tokenizers.Offset
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("%s: EncodeOffsets(%q) panicked: %v", dir, text, r)
					}
				}()
				ids, offs, err = tok.EncodeOffsets(text)
			}()
			if err != nil {
				t.Fatal(err)
			}
			if want := tok.Encode(text); !slices.Equal(ids, want) {
				t.Errorf("%s: EncodeOffsets(%q) ids %v, Encode %v", dir, text, ids, want)
			}
			for _, o := range offs {
				if o.Start < 0 || o.Start > o.End || o.End > len(text) {
					t.Errorf("%s: EncodeOffsets(%q): offset %v outside the %d bytes", dir, text, o, len(text))
				}
			}
		}
	}
}

// TestPairFitsMaxLen (found by FuzzTokenizerJSON): a MaxLen below the special tokens of a
// pair (3 for BERT's layout, 4 for RoBERTa's) is refused when the tokenizer is made, since
// EncodePair could not keep to it; at the smallest length allowed, pairs fit.
func TestPairFitsMaxLen(t *testing.T) {
	vocab := strings.Split(strings.TrimSuffix(string(readFixture(t, "..", "auto", "testdata", "ner_bert", "vocab.txt")), "\n"), "\n")
	for _, c := range []struct {
		name string
		load func(maxLen int) (*bert.Tokenizer, error)
		min  int
	}{
		{"WordPiece", func(n int) (*bert.Tokenizer, error) { return bert.NewTokenizerFromVocab(vocab, n) }, 3},
		{"BPE", func(n int) (*bert.Tokenizer, error) {
			return bert.LoadTokenizer(filepath.Join("testdata", "roberta_bpe"), n)
		}, 4},
	} {
		if _, err := c.load(c.min - 1); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("at least %d", c.min)) {
			t.Errorf("%s at max_len %d: error %v, want one saying at least %d", c.name, c.min-1, err, c.min)
		}
		tok, err := c.load(c.min)
		if err != nil {
			t.Fatalf("%s at max_len %d: %v", c.name, c.min, err)
		}
		if ids, _ := tok.EncodePair("hello there", "general kenobi"); len(ids) > c.min {
			t.Errorf("%s: EncodePair at max_len %d gives %d ids", c.name, c.min, len(ids))
		}
	}
}

// TestLowercaseOneRule: the WordPiece (do_lower_case) and BPE (a Lowercase normalizer)
// tokenizers lowercase as the tokenizers library does (as the tokenizers package's
// Lowercase): "İ" is "i" and a combining dot, not "i". The letters of Unicode 16, which Go's
// tables (Unicode 15) do not know, are checked on BPE only: BERT's cleaning drops the
// characters it takes for unassigned.
func TestLowercaseOneRule(t *testing.T) {
	cases := map[string]string{"İstanbul": "i\u0307stanbul", "ΟΔΟΣ": "οδοσ", "ǅ": "ǆ", "ẞ": "ß", "\u212A": "k", "ᾈ": "ᾀ"}
	newer := map[string]string{"\u1C89": "\u1C8A", "\uA7DC": "\u019B", "\U00010D50": "\U00010D70"}
	vocab := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
	for _, want := range cases {
		vocab = append(vocab, want)
	}
	dir := folderWith(t, map[string]any{"vocab.txt": strings.Join(vocab, "\n") + "\n",
		"tokenizer_config.json": map[string]any{"do_lower_case": true, "strip_accents": false}})
	wp, err := bert.LoadTokenizer(dir, 16)
	if err != nil {
		t.Fatal(err)
	}
	doc := robertaDoc(t)
	doc["normalizer"] = map[string]any{"type": "Lowercase"}
	bpe, err := bert.LoadTokenizer(folderWith(t, map[string]any{"tokenizer.json": doc}), 16)
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range cases {
		if got := wp.Tokenize(in); !slices.Equal(got, []string{want}) {
			t.Errorf("WordPiece Tokenize(%q) = %q, want [%q]", in, got, want)
		}
	}
	for _, m := range []map[string]string{cases, newer} {
		for in, want := range m {
			if got, w := bpe.Encode(in), bpe.Encode(want); !slices.Equal(got, w) {
				t.Errorf("BPE Encode(%q) = %v, want Encode(%q) = %v", in, got, want, w)
			}
		}
	}
}
