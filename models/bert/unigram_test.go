package bert

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/tokenizers/tokparity"
)

// debertaTokenizerDir is tokenizers/testdata/deberta: a DeBERTa-v3 spm.model (3,000 pieces
// trained on rt-polarity by scripts/make_unigram_fixtures.py) and transformers 5's
// DebertaV2TokenizerFast saved from it (tokenizer.json, tokenizer_config.json).
var debertaTokenizerDir = filepath.Join("..", "..", "tokenizers", "testdata", "deberta")

// debertaParity is tokenizers/testdata/unigram_parity_deberta.json: transformers'
// DebertaV2TokenizerFast on every rt-polarity sentence and pair, and on tricky texts.
func debertaParity(t *testing.T) *tokenizerParity {
	t.Helper()
	var f struct {
		tokenizerParity
		Name   string `json:"name"`
		SPMSHA string `json:"spm_model_sha256"`
	}
	tokparity.ReadFixture(t, filepath.Join(debertaTokenizerDir, "..", "unigram_parity_deberta.json"), &f)
	if sum := fileSHA256(t, filepath.Join(debertaTokenizerDir, "spm.model")); sum != f.SPMSHA {
		t.Fatalf("%s/spm.model has sha256 %s, the fixture was made from %s", debertaTokenizerDir, sum, f.SPMSHA)
	}
	f.Kind = f.Name
	return &f.tokenizerParity
}

// debertaFolder copies the named files of tokenizers/testdata/deberta into a new folder.
func debertaFolder(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(debertaTokenizerDir, name))
		if err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, dir, name, string(b))
	}
	return dir
}

// TestDebertaTokenizerParity: LoadTokenizer on a DeBERTa-v3 folder gives transformers'
// DebertaV2TokenizerFast ids on all of rt-polarity, alone and in pairs ([CLS] A [SEP] B [SEP],
// type ids 1 on B), and on the tricky texts, whether the folder has only spm.model (as
// microsoft/deberta-v3-* on the Hub) or the tokenizer.json transformers 5 saves.
func TestDebertaTokenizerParity(t *testing.T) {
	f := debertaParity(t)
	for _, files := range [][]string{{"spm.model"}, {"spm.model", "tokenizer_config.json"}, {"tokenizer.json", "tokenizer_config.json"}} {
		t.Run(strings.Join(files, "+"), func(t *testing.T) {
			tok, err := LoadTokenizer(debertaFolder(t, files...), f.MaxLen)
			if err != nil {
				t.Fatal(err)
			}
			if tok.Kind() != "Unigram" || tok.Token(tok.PadID()) != "[PAD]" {
				t.Errorf("Kind %s, pad %q: want Unigram and [PAD]", tok.Kind(), tok.Token(tok.PadID()))
			}
			checkTokenizerParity(t, f, tok)
		})
	}
}

// TestDebertaTokenizerConfigRefused: what a spm.model folder's tokenizer_config.json asks that
// DebertaV2Tokenizer would do differently is refused, naming the file and the key.
func TestDebertaTokenizerConfigRefused(t *testing.T) {
	for _, c := range []struct{ config, want string }{
		{`{"do_lower_case": true}`, "do_lower_case true"},
		{`{"split_by_punct": true}`, "split_by_punct true"},
		{`{"add_prefix_space": false}`, "add_prefix_space false"},
		{`{"added_tokens_decoder": {"3001": {"content": "<ent>", "special": true}}}`, `added_tokens_decoder has "<ent>"`},
		{`{"cls_token": "<s>"}`, `no piece "<s>"`},
	} {
		dir := debertaFolder(t, "spm.model")
		writeTestFile(t, dir, "tokenizer_config.json", c.config)
		_, err := LoadTokenizer(dir, 64)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), dir) {
			t.Errorf("tokenizer_config.json %s: error %v, want one with %q and the folder", c.config, err, c.want)
		}
	}
}

// TestDebertaTokenizerSaved: a DeBERTa tokenizer read from spm.model, saved as SavePretrained
// saves tokenizers, is spm.model and a DebertaV2Tokenizer tokenizer_config.json, which this
// package reads back with the same ids, and transformers' AutoTokenizer too when
// GOACCEL_TORCH_PYTHON names a Python with transformers and sentencepiece.
func TestDebertaTokenizerSaved(t *testing.T) {
	tok, err := LoadTokenizer(debertaFolder(t, "spm.model"), 32)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := tok.writeFiles(dir, microConfig(tok.VocabSize())); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err == nil {
		t.Errorf("a tokenizer.json was written for a tokenizer read from spm.model")
	}
	back, err := LoadTokenizer(dir, 32)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range savedTokenizerTexts {
		if a, b := tok.Encode(text), back.Encode(text); !slices.Equal(a, b) {
			t.Errorf("%q: %v, read back %v", text, a, b)
		}
	}
	// transformers reads spm.model with the sentencepiece package, which make deps does not
	// install: the torch venv of the model parity tests has it.
	python := os.Getenv("GOACCEL_TORCH_PYTHON")
	if python == "" {
		testutil.TorchPython(t, "the transformers half")
	}
	textsJSON, _ := json.Marshal(savedTokenizerTexts)
	script := fmt.Sprintf(`
import json, sys
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[1])
print(json.dumps({"class": type(tok).__name__, "ids": [tok(t, truncation=True, max_length=32)["input_ids"] for t in %s]}))
`, textsJSON)
	var res struct {
		Class string    `json:"class"`
		IDs   [][]int32 `json:"ids"`
	}
	testutil.RunPythonJSON(t, "transformers loading "+dir, python, script, &res, dir)
	for i, text := range savedTokenizerTexts {
		if got := tok.Encode(text); i >= len(res.IDs) || !slices.Equal(got, res.IDs[i]) {
			t.Errorf("%q: ids %v here, transformers' %s %v", text, got, res.Class, res.IDs)
		}
	}
	t.Logf("transformers read the saved folder as %s: %d texts, the same ids", res.Class, len(savedTokenizerTexts))
}
