package tokenizers

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
)

// robertaFiles writes the vocab.json and merges.txt of the RoBERTa fixture's BPE model into a
// temporary folder, with config as its tokenizer_config.json.
func robertaFiles(t *testing.T, config map[string]any) string {
	t.Helper()
	contents, err := os.ReadFile(filepath.Join("..", "models", "bert", "testdata", "roberta_bpe", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Model struct {
			Vocab  map[string]int `json:"vocab"`
			Merges [][2]string    `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(contents, &doc); err != nil {
		t.Fatal(err)
	}
	lines := []string{"#version: 0.2"}
	for _, m := range doc.Model.Merges {
		lines = append(lines, m[0]+" "+m[1])
	}
	dir := copyFolder(t, t.TempDir(), nil, config)
	for name, b := range map[string][]byte{"vocab.json": mustMarshal(t, doc.Model.Vocab), "merges.txt": []byte(strings.Join(lines, "\n") + "\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRobertaFolderMatchesTransformers: a folder with vocab.json and merges.txt (RoBERTa's
// files without tokenizer.json) encodes as transformers' RobertaTokenizer built from them:
// ids, pairs and their type ids, character offsets, words and their word ids, and decoding,
// with and without add_prefix_space.
func TestRobertaFolderMatchesTransformers(t *testing.T) {
	t.Parallel() // most of its time is Python's
	py := testutil.NeedTransformers(t)
	texts := []string{"Hello world! It's a <mask> movie.", "  two  spaces and café 東京 🎉 ", "<s>a</s>", "", "don't we'll"}
	dirs := []string{robertaFiles(t, map[string]any{"tokenizer_class": "RobertaTokenizer", "add_prefix_space": false}),
		robertaFiles(t, map[string]any{"tokenizer_class": "RobertaTokenizer", "add_prefix_space": true})}
	var all [][]struct {
		IDs, PairIDs, PairTypes, WordsIDs []int32
		Offsets                           [][2]int
		WordIDs                           []*int32
		Decoded                           string
	}
	testutil.RunPythonJSON(t, "RobertaTokenizer", py, `
import json, sys
from transformers import AutoTokenizer
texts = json.loads(sys.argv[2])
all = []
for d in json.loads(sys.argv[1]):
    tok = AutoTokenizer.from_pretrained(d)
    wtok = AutoTokenizer.from_pretrained(d, add_prefix_space=True)
    out = []
    for i, x in enumerate(texts):
        e = tok(x, return_offsets_mapping=True)
        p = tok(x, texts[(i + 1) % len(texts)], return_token_type_ids=True)
        w = wtok(x.split(), is_split_into_words=True)
        out.append({"IDs": e["input_ids"], "Offsets": e["offset_mapping"], "PairIDs": p["input_ids"], "PairTypes": p["token_type_ids"],
                    "WordsIDs": w["input_ids"], "WordIDs": w.word_ids(), "Decoded": tok.decode(p["input_ids"])})
    all.append(out)
print(json.dumps(all))
`, &all, string(mustMarshal(t, dirs)), string(mustMarshal(t, texts)))
	for di, dir := range dirs {
		prefix := di == 1
		tok, err := FromFolder(dir)
		if err != nil {
			t.Fatal(err)
		}
		for i, text := range texts {
			w := all[di][i]
			e, offs, err := tok.EncodeOffsets(text)
			if err != nil {
				t.Fatal(err)
			}
			chars := CharOffsets(text, offs)
			gotOffs := make([][2]int, len(chars))
			for k, o := range chars {
				gotOffs[k] = [2]int{o.Start, o.End}
			}
			if !slices.Equal(e.IDs, w.IDs) || !slices.Equal(gotOffs, w.Offsets) {
				t.Errorf("add_prefix_space %v: EncodeOffsets(%q) = %v %v, transformers %v %v", prefix, text, e.IDs, gotOffs, w.IDs, w.Offsets)
			}
			p := tok.EncodePair(text, texts[(i+1)%len(texts)])
			if !slices.Equal(p.IDs, w.PairIDs) || !slices.Equal(p.TypeIDs, w.PairTypes) {
				t.Errorf("add_prefix_space %v: EncodePair(%q) = %v %v, transformers %v %v", prefix, text, p.IDs, p.TypeIDs, w.PairIDs, w.PairTypes)
			}
			ew := tok.EncodeWords(strings.Fields(text))
			wordIDs := make([]*int32, len(ew.WordIDs))
			for k := range ew.WordIDs {
				if ew.WordIDs[k] >= 0 {
					wordIDs[k] = &ew.WordIDs[k]
				}
			}
			if !slices.Equal(ew.IDs, w.WordsIDs) || !slices.EqualFunc(wordIDs, w.WordIDs, func(a, b *int32) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }) {
				t.Errorf("add_prefix_space %v: EncodeWords(%q) = %v %v, transformers %v", prefix, strings.Fields(text), ew.IDs, ew.WordIDs, w.WordsIDs)
			}
			if got, err := tok.Decode(p.IDs, false); err != nil || got != w.Decoded {
				t.Errorf("add_prefix_space %v: Decode(%v) = %q, %v; transformers %q", prefix, p.IDs, got, err, w.Decoded)
			}
		}
	}
}
