package bert_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/models/bert"
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
