package tokenizers

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/goaccel/goaccel/tokenizers/tokfuzz"
)

// The fuzz targets of the package's file readers: tokenizer.json (Parse), spm.model
// (LoadSentencePiece) and the Precompiled character map (NewPrecompiled). Each reads what
// the fuzzer makes, and when that is accepted, encodes a text every way the package can:
// nothing may panic, and every encoding must be well formed (checkEncoding). Their seeds
// are the fixtures of testdata, whole and cut down to a size the fuzzer mutates quickly.

// fuzzTexts are the texts the seeds encode.
var fuzzTexts = []string{"Hello world! It's <mask> time.", "  Ça  va\tbien?  ", "", "İstanbul ΣΑΣ straße 東京 \u0301x"}

// fuzzEdits are the tokfuzz.Mutate edits of the seeds: none, and a few arbitrary ones for
// the fuzzer to vary.
var fuzzEdits = [][]byte{{}, {3, 17, 4, 2, 40, 12}, {3, 3, 12, 2, 9, 36, 3, 77, 20}, {4, 16, 4}}

// smallDoc is a fixture's tokenizer.json cut to n pieces (tokfuzz.Shrink), its normalizer
// the DeBERTa one without the Precompiled map (which FuzzPrecompiled fuzzes), edited by edit.
func smallDoc(t testing.TB, fixture string, n int, edit func(doc map[string]json.RawMessage)) []byte {
	t.Helper()
	contents, err := os.ReadFile(filepath.Join("testdata", fixture, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(tokfuzz.Shrink(contents, n), &doc); err != nil {
		t.Fatal(err)
	}
	doc["normalizer"] = json.RawMessage(`{"type": "Sequence", "normalizers": [{"type": "Strip", "strip_left": false, "strip_right": true}, {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}, {"type": "NFKC"}]}`)
	if edit != nil {
		edit(doc)
	}
	return mustMarshal(t, doc)
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkEncoding fails t unless e is well formed: ids within the tokenizer's vocabulary, as
// many type ids and word ids as ids, at most maxLen ids (when not 0).
func checkEncoding(t *testing.T, tok *Tokenizer, what string, e Encoding, maxLen int) {
	t.Helper()
	if len(e.TypeIDs) != len(e.IDs) || len(e.WordIDs) != len(e.IDs) {
		t.Fatalf("%s: %d ids, %d type ids, %d word ids", what, len(e.IDs), len(e.TypeIDs), len(e.WordIDs))
	}
	for _, id := range e.IDs {
		if id < 0 || int(id) >= tok.VocabSize() {
			t.Fatalf("%s: id %d outside the %d tokens", what, id, tok.VocabSize())
		}
	}
	if maxLen > 0 && len(e.IDs) > maxLen {
		t.Fatalf("%s: %d ids, more than MaxLen %d", what, len(e.IDs), maxLen)
	}
}

// exercise encodes text every way a Tokenizer can, at maxLen too.
func exercise(t *testing.T, tok *Tokenizer, text string, maxLen int) {
	t.Helper()
	if c, err := tok.WithMaxLen(maxLen); err == nil {
		tok = c
	} else {
		maxLen = 0
	}
	checkEncoding(t, tok, "Encode", tok.Encode(text), maxLen)
	checkEncoding(t, tok, "EncodePair", tok.EncodePair(text, text+" b"), maxLen)
	checkEncoding(t, tok, "EncodeWords", tok.EncodeWords([]string{text, "b", text}), maxLen)
	if e, offs, err := tok.EncodeOffsets(text); err == nil {
		checkEncoding(t, tok, "EncodeOffsets", e, maxLen)
		if len(offs) != len(e.IDs) {
			t.Fatalf("EncodeOffsets: %d offsets for %d ids", len(offs), len(e.IDs))
		}
		for _, o := range offs {
			if o.Start < 0 || o.Start > o.End || o.End > len(text) {
				t.Fatalf("EncodeOffsets(%q): offset %v outside the text", text, o)
			}
		}
	}
	for _, tk := range tok.Tokenize(text) {
		if _, ok := tok.ID(tk); !ok {
			t.Fatalf("Tokenize(%q) gives %q, which has no id", text, tk)
		}
	}
	for _, strategy := range []string{TruncateLongestFirst, TruncateOnlyFirst, TruncateOnlySecond} {
		tr := Truncation{MaxLen: max(maxLen, 0) + 4, Strategy: strategy, Stride: maxLen % 3}
		rows, err := tok.EncodeTruncated(tr, text, text+" b")
		if err != nil {
			continue
		}
		// The first row fits; a later one may not, where a text is cut to nothing (the library
		// then makes the whole text one window).
		for i, e := range rows {
			checkEncoding(t, tok, "EncodeTruncated "+strategy, e, map[bool]int{true: tr.MaxLen}[i == 0])
		}
		for _, e := range Pad(rows, Padding{MultipleOf: 8, Left: maxLen%2 == 0}) {
			if len(e.IDs)%8 != 0 || len(e.AttentionMask) != len(e.IDs) || len(e.TypeIDs) != len(e.IDs) || len(e.WordIDs) != len(e.IDs) {
				t.Fatalf("Pad: %d ids, %d mask, %d type ids, %d word ids", len(e.IDs), len(e.AttentionMask), len(e.TypeIDs), len(e.WordIDs))
			}
		}
	}
	ids := tok.EncodePair(text, "b").IDs
	for _, skip := range []bool{false, true} {
		if _, err := tok.Decode(append(ids, -1, int32(tok.VocabSize())), skip); err != nil && tok.decoderErr == nil {
			t.Fatalf("Decode(%v): %v", ids, err)
		}
	}
}

// bpeSeed is a small byte-level BPE tokenizer.json (RoBERTa's pipeline).
const bpeSeed = `{"added_tokens": [{"id": 0, "content": "<s>", "special": true}, {"id": 1, "content": "<pad>", "special": true},
	{"id": 2, "content": "</s>", "special": true}, {"id": 3, "content": "<mask>", "lstrip": true, "special": true},
	{"id": 12, "content": "hyper", "normalized": true}],
  "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]},
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
  "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0], "trim_offsets": true, "add_prefix_space": true},
  "decoder": {"type": "ByteLevel"},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "fuse_unk": false, "vocab": {"<s>": 0, "<pad>": 1, "</s>": 2, "<mask>": 3,
    "a": 4, "b": 5, "c": 6, "Ġ": 7, "ab": 8, "abc": 9, "Ġa": 10, "aa": 11}, "merges": [["a", "b"], ["ab", "c"], "Ġ a", "a a"]}}`

// wordPieceSeed is a small WordPiece tokenizer.json (BERT's pipeline).
const wordPieceSeed = `{"added_tokens": [{"id": 0, "content": "[PAD]", "special": true}, {"id": 1, "content": "[UNK]", "special": true},
	{"id": 2, "content": "[CLS]", "special": true}, {"id": 3, "content": "[SEP]", "special": true}, {"id": 11, "content": "[MASK]", "special": true}],
  "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
  "pre_tokenizer": {"type": "BertPreTokenizer"},
  "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
  "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
  "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
    "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "hello": 4, "world": 5, "!": 6, "##s": 7, "it": 8, "'": 9, "s": 10}}}`

// FuzzParse: tokenizer.json, one of the seed documents with the edits the fuzzer makes to
// its tree (tokfuzz.Mutate: byte flips would mostly make text that is not JSON).
func FuzzParse(f *testing.F) {
	seeds := [][]byte{
		smallDoc(f, "xlmr", 40, nil),
		smallDoc(f, "deberta", 40, nil),
		smallDoc(f, "deberta", 40, func(doc map[string]json.RawMessage) {
			doc["post_processor"] = json.RawMessage(`{"type": "BertProcessing", "cls": ["[CLS]", 1], "sep": ["[SEP]", 2]}`)
		}),
		[]byte(bpeSeed),
		[]byte(wordPieceSeed),
		smallDoc(f, "xlmr", 300, func(doc map[string]json.RawMessage) {
			doc["added_tokens"] = json.RawMessage(`[{"id": 3, "content": "<unk>", "special": true}, {"id": 300, "content": "<mask>", "lstrip": true, "special": true},
				{"id": 301, "content": "time", "single_word": true, "normalized": true, "rstrip": true}]`)
		}),
	}
	for i := range seeds {
		for j, maxLen := range []int{0, -1, 5} {
			f.Add(uint8(i), fuzzEdits[(i+j)%len(fuzzEdits)], fuzzTexts[(i+j)%len(fuzzTexts)], maxLen)
		}
	}
	f.Fuzz(func(t *testing.T, seed uint8, edits []byte, text string, maxLen int) {
		tok, err := Parse(tokfuzz.Mutate(seeds[int(seed)%len(seeds)], edits), "fuzz.json")
		if err != nil {
			return
		}
		exercise(t, tok, text, maxLen%64)
	})
}

// FuzzSentencePiece: spm.model (DeBERTa-v3's fixture, whole and cut short).
func FuzzSentencePiece(f *testing.F) {
	spm, err := os.ReadFile(filepath.Join("testdata", "deberta", "spm.model"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(spm, fuzzTexts[0], 8)
	f.Add(spm[:len(spm)/3], fuzzTexts[3], 0)
	f.Fuzz(func(t *testing.T, model []byte, text string, maxLen int) {
		path := filepath.Join(t.TempDir(), "spm.model")
		if err := os.WriteFile(path, model, 0o644); err != nil {
			t.Fatal(err)
		}
		tok, err := LoadSentencePiece(path, SentencePieceOptions{Cls: "[CLS]", Sep: "[SEP]", Extra: []string{"[MASK]"}})
		if err != nil {
			return
		}
		exercise(t, tok, text, maxLen%64)
	})
}

// FuzzPrecompiled: the Precompiled character map (the fixture's, whole and cut short).
func FuzzPrecompiled(f *testing.F) {
	doc := xlmrDoc(f)
	var n struct {
		Charsmap string `json:"precompiled_charsmap"`
	}
	if err := json.Unmarshal(doc["normalizer"], &n); err != nil {
		f.Fatal(err)
	}
	blob, err := base64.StdEncoding.DecodeString(n.Charsmap)
	if err != nil {
		f.Fatal(err)
	}
	for i, text := range fuzzTexts {
		f.Add(blob, text)
		f.Add(blob[:len(blob)>>(i+1)], text)
	}
	f.Fuzz(func(t *testing.T, blob []byte, text string) {
		p, err := NewPrecompiled(blob)
		if err != nil {
			return
		}
		p.Normalize(text)
		a := p.normalizeAligned(NewAligned(text, 0))
		for i := 0; i < len(a.Text); i++ {
			if o := a.Span(i, i+1); o.Start < 0 || o.Start > o.End || o.End > len(text) {
				t.Fatalf("byte %d of the normalized %q has span %v outside the text %q", i, a.Text, o, text)
			}
		}
	})
}
