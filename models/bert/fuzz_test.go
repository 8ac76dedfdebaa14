package bert_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/models/bert"
	"github.com/goaccel/goaccel/tokenizers/tokfuzz"
)

// The fuzz targets of the package's file readers: tokenizer.json (WordPiece, BPE, Unigram),
// vocab.txt with tokenizer_config.json, special_tokens_map.json and added_tokens.json,
// spm.model with its tokenizer_config.json, and config.json. Each gets a seed document of
// the fixtures with the edits the fuzzer makes to its tree (tokfuzz.Mutate); a tokenizer
// that loads must encode every text without panicking, within its vocabulary and MaxLen
// (checkTokenizer).

// readFixture reads a file of the repository's testdata.
func readFixture(t testing.TB, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(parts...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fuzzTexts are the seeds' texts.
var fuzzTexts = []string{"Hello world! It's [MASK] <mask> time.", "  Ça  va\tbien?  İ", "", "東京 \u0301x don't"}

// fuzzEdits are seed edits for tokfuzz.Mutate: none, and a few arbitrary ones to vary.
var fuzzEdits = [][]byte{{}, {3, 17, 4, 2, 40, 12}, {3, 3, 12, 2, 9, 36, 3, 77, 20}}

// checkTokenizer encodes text every way tok can, failing t on an id outside its vocabulary,
// a sequence longer than MaxLen or lengths that disagree.
func checkTokenizer(t *testing.T, tok *bert.Tokenizer, text string) {
	t.Helper()
	n, maxLen := int32(tok.VocabSize()), tok.MaxLen()
	check := func(what string, ids []int32) {
		t.Helper()
		if len(ids) > maxLen {
			t.Fatalf("%s(%q): %d ids, MaxLen %d", what, text, len(ids), maxLen)
		}
		for _, id := range ids {
			if id < 0 || id >= n {
				t.Fatalf("%s(%q): id %d outside the %d tokens", what, text, id, n)
			}
		}
	}
	check("Encode", tok.Encode(text))
	ids, types := tok.EncodePair(text, text+" b")
	check("EncodePair", ids)
	if len(types) != len(ids) {
		t.Fatalf("EncodePair: %d ids, %d type ids", len(ids), len(types))
	}
	ids, words := tok.EncodeWords(strings.Fields(text + " x"))
	check("EncodeWords", ids)
	if len(words) != len(ids) {
		t.Fatalf("EncodeWords: %d ids, %d word ids", len(ids), len(words))
	}
	if ids, offs, err := tok.EncodeOffsets(text); err == nil {
		check("EncodeOffsets", ids)
		for _, o := range offs {
			if o.Start < 0 || o.Start > o.End || o.End > len(text) {
				t.Fatalf("EncodeOffsets(%q): offset %v outside the text", text, o)
			}
		}
	}
	tok.TokensToString(tok.Tokenize(text))
	if enc := tok.EncodeBatch([]string{text, "a"}); len(enc.InputIDs) != enc.Batch*enc.Len {
		t.Fatalf("EncodeBatch: %d ids for %dx%d", len(enc.InputIDs), enc.Batch, enc.Len)
	}
}

// loadWith writes files into a folder and loads its tokenizer at maxLen (between 0 and 63).
func loadWith(t *testing.T, files map[string][]byte, maxLen int) (*bert.Tokenizer, error) {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		if b == nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return bert.LoadTokenizer(dir, maxLen%64)
}

// FuzzTokenizerJSON: tokenizer.json, from the BPE fixture, the WordPiece of the NER fixture
// folder, and the Unigram fixtures of the tokenizers package, cut down (tokfuzz.Shrink).
func FuzzTokenizerJSON(f *testing.F) {
	vocab := map[string]int{}
	for i, tok := range strings.Split(strings.TrimSuffix(string(readFixture(f, "..", "auto", "testdata", "ner_bert", "vocab.txt")), "\n"), "\n") {
		if i < 400 {
			vocab[tok] = i
		}
	}
	wordPiece := mustJSON(f, map[string]any{
		"added_tokens": []any{map[string]any{"id": 0, "content": "[PAD]", "special": true}, map[string]any{"id": 100, "content": "[UNK]", "special": true},
			map[string]any{"id": 101, "content": "[CLS]", "special": true}, map[string]any{"id": 102, "content": "[SEP]", "special": true},
			map[string]any{"id": 103, "content": "[MASK]", "special": true, "lstrip": true}},
		"normalizer":    map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": nil, "lowercase": true},
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single": []any{map[string]any{"SpecialToken": map[string]any{"id": "[CLS]", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				map[string]any{"SpecialToken": map[string]any{"id": "[SEP]", "type_id": 0}}},
			"pair": []any{map[string]any{"SpecialToken": map[string]any{"id": "[CLS]", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				map[string]any{"SpecialToken": map[string]any{"id": "[SEP]", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}},
				map[string]any{"SpecialToken": map[string]any{"id": "[SEP]", "type_id": 1}}},
			"special_tokens": map[string]any{"[CLS]": map[string]any{"id": "[CLS]", "ids": []any{101}, "tokens": []any{"[CLS]"}},
				"[SEP]": map[string]any{"id": "[SEP]", "ids": []any{102}, "tokens": []any{"[SEP]"}}}},
		"model": map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab},
	})
	seeds := [][]byte{
		tokfuzz.Shrink(readFixture(f, "testdata", "roberta_bpe", "tokenizer.json"), 300),
		wordPiece,
		tokfuzz.Shrink(readFixture(f, "..", "..", "tokenizers", "testdata", "xlmr", "tokenizer.json"), 60),
	}
	for i := range seeds {
		for j, maxLen := range []int{16, 3, 0} {
			f.Add(uint8(i), fuzzEdits[(i+j)%len(fuzzEdits)], fuzzTexts[(i+j)%len(fuzzTexts)], maxLen)
		}
	}
	f.Fuzz(func(t *testing.T, seed uint8, edits []byte, text string, maxLen int) {
		doc := tokfuzz.Mutate(seeds[int(seed)%len(seeds)], edits)
		if tok, err := loadWith(t, map[string][]byte{"tokenizer.json": doc}, maxLen); err == nil {
			checkTokenizer(t, tok, text)
		}
	})
}

// FuzzVocabFolder: vocab.txt (the NER fixture's, its first lines, with the fuzzer's bytes
// after them) with tokenizer_config.json, special_tokens_map.json and added_tokens.json.
func FuzzVocabFolder(f *testing.F) {
	lines := strings.SplitAfter(string(readFixture(f, "..", "auto", "testdata", "ner_bert", "vocab.txt")), "\n")
	config := readFixture(f, "..", "auto", "testdata", "ner_bert", "tokenizer_config.json")
	variant := mustJSON(f, map[string]any{"do_lower_case": true, "extra_special_tokens": []any{"<ent>"},
		"added_tokens_decoder": map[string]any{
			"103": map[string]any{"content": "[MASK]", "lstrip": true, "normalized": false, "special": true},
			"400": map[string]any{"content": "GoAccel", "single_word": true, "normalized": false},
			"401": map[string]any{"content": "hyperparam", "rstrip": true, "normalized": true}}})
	tokMap := mustJSON(f, map[string]any{"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]",
		"mask_token": map[string]any{"content": "[MASK]", "lstrip": true, "special": true}, "additional_special_tokens": []any{"<x>"}})
	added := []byte(`{"<new>": 402, "newword": 403}`)
	configs := [][]byte{config, variant, tokMap, added}
	for i, text := range fuzzTexts {
		f.Add(uint16(400), []byte{}, uint8(i), fuzzEdits[i%len(fuzzEdits)], text, 16)
	}
	f.Add(uint16(5), []byte("extra\n##x\r\n"), uint8(2), []byte{}, "x", 4)
	f.Fuzz(func(t *testing.T, n uint16, extra []byte, which uint8, edits []byte, text string, maxLen int) {
		vocab := strings.Join(lines[:min(int(n), len(lines))], "") + string(extra)
		files := map[string][]byte{"vocab.txt": []byte(vocab)}
		// One of the other files gets the edits; the others are as the seeds have them.
		names := []string{"tokenizer_config.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json"}
		for i, c := range configs {
			if i == int(which)%len(configs) {
				c = tokfuzz.Mutate(c, edits)
			} else if i == 1 || i == 3 && which%2 == 0 {
				continue // the seeds' second tokenizer_config.json, and added_tokens.json half of the time
			}
			files[names[i]] = c
		}
		if tok, err := loadWith(t, files, maxLen); err == nil {
			checkTokenizer(t, tok, text)
		}
	})
}

// FuzzSentencePieceFolder: DeBERTa-v3's spm.model with the tokenizer_config.json and
// special_tokens_map.json that may rename its special tokens.
func FuzzSentencePieceFolder(f *testing.F) {
	spm := readFixture(f, "..", "..", "tokenizers", "testdata", "deberta", "spm.model")
	config := readFixture(f, "..", "..", "tokenizers", "testdata", "deberta", "tokenizer_config.json")
	tokMap := mustJSON(f, map[string]any{"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]", "mask_token": "[MASK]"})
	for i, text := range fuzzTexts {
		f.Add(i%2 == 0, fuzzEdits[i%len(fuzzEdits)], text, 12)
	}
	f.Fuzz(func(t *testing.T, editMap bool, edits []byte, text string, maxLen int) {
		files := map[string][]byte{"spm.model": spm, "tokenizer_config.json": config, "special_tokens_map.json": tokMap}
		name := "tokenizer_config.json"
		if editMap {
			name = "special_tokens_map.json"
		}
		files[name] = tokfuzz.Mutate(files[name], edits)
		if tok, err := loadWith(t, files, maxLen); err == nil {
			checkTokenizer(t, tok, text)
		}
	})
}

// FuzzConfig: config.json, from the families' parity fixtures and the NER fixture folder.
func FuzzConfig(f *testing.F) {
	var seeds [][]byte
	for _, fam := range []string{"bert", "distilbert", "electra", "roberta", "xlm-roberta"} {
		var fixture struct {
			Config json.RawMessage `json:"config"`
		}
		if err := json.Unmarshal(readFixture(f, "testdata", "family_"+fam+".json"), &fixture); err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, fixture.Config)
	}
	seeds = append(seeds, readFixture(f, "..", "auto", "testdata", "ner_bert", "config.json"))
	for i := range seeds {
		f.Add(uint8(i), fuzzEdits[i%len(fuzzEdits)])
	}
	f.Fuzz(func(t *testing.T, seed uint8, edits []byte) {
		cfg, err := bert.ParseConfig(tokfuzz.Mutate(seeds[int(seed)%len(seeds)], edits), "config.json")
		if err != nil {
			return
		}
		// What is accepted is written back, and reads back the same.
		b, err := cfg.JSON()
		if err != nil {
			t.Fatalf("JSON of an accepted config: %v", err)
		}
		if _, err := bert.ParseConfig(b, "written.json"); err != nil {
			t.Fatalf("the config written back does not parse: %v\n%s", err, b)
		}
	})
}
