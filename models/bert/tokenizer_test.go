package bert

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data/text"
	"github.com/gomlx/gomlx/core/tensors"
)

func microTokenizer(t *testing.T, maxLen int) *Tokenizer {
	t.Helper()
	tok, err := NewTokenizerFromVocab(microVocab, maxLen)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestTokenize(t *testing.T) {
	tok := microTokenizer(t, 64)
	longWord := "a" + strings.Repeat("b", 99) // 100 runes: still WordPiece'd
	cases := []struct {
		name, text string
		want       []string
	}{
		{"plain words and punctuation", "The movie was great!", []string{"the", "movie", "was", "great", "!"}},
		{"punctuation without spaces", "Hello,World.", []string{"hello", ",", "world", "."}},
		{"apostrophe splits", "don't", []string{"don", "'", "t"}},
		{"word pieces", "Unaffable", []string{"un", "##aff", "##able"}},
		{"suffix pieces", "RUNNING runs", []string{"run", "##ning", "run", "##s"}},
		{"accents stripped", "Café CAFÉ café", []string{"cafe", "cafe", "cafe"}},
		{"combining accent", "cafe\u0301", []string{"cafe"}},
		{"CJK split per character", "東京", []string{"東", "京"}},
		{"ascii symbol is punctuation", "$great", []string{"$", "great"}},
		{"unknown word", "xyz", []string{UnkToken}},
		{"partly covered word is one unk", "abd the", []string{UnkToken, "the"}},
		{"unknown digit", "$5", []string{"$", UnkToken}},
		{"whitespace kinds", "the\tmovie\u00a0was\n\r great", []string{"the", "movie", "was", "great"}},
		{"control and format chars dropped", "the\u0007 movie\u200b", []string{"the", "movie"}},
		{"100-rune word", longWord, append([]string{"a"}, slices.Repeat([]string{"##b"}, 99)...)},
		{"101-rune word is unk", longWord + "b", []string{UnkToken}},
		{"empty", "", []string{}},
		{"only spaces", "   \t ", []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := tok.Tokenize(c.text)
			if !slices.Equal(got, c.want) {
				t.Errorf("Tokenize(%q) = %q, want %q", c.text, got, c.want)
			}
		})
	}
}

func TestEncodeTruncates(t *testing.T) {
	id := func(tok string) int32 {
		i := slices.Index(microVocab, tok)
		if i < 0 {
			t.Fatalf("%q not in microVocab", tok)
		}
		return int32(i)
	}
	cases := []struct {
		maxLen int
		text   string
		want   []int32
	}{
		{8, "the movie", []int32{id(ClsToken), id("the"), id("movie"), id(SepToken)}},
		{5, "the movie was great !", []int32{id(ClsToken), id("the"), id("movie"), id("was"), id(SepToken)}},
		{3, "the movie", []int32{id(ClsToken), id("the"), id(SepToken)}}, // 3: the least, a pair holds 3 special tokens
		{4, "", []int32{id(ClsToken), id(SepToken)}},
		{4, "unaffable", []int32{id(ClsToken), id("un"), id("##aff"), id(SepToken)}},
	}
	for _, c := range cases {
		tok := microTokenizer(t, c.maxLen)
		if got := tok.Encode(c.text); !slices.Equal(got, c.want) {
			t.Errorf("maxLen %d: Encode(%q) = %v, want %v", c.maxLen, c.text, got, c.want)
		}
	}
}

func TestCollate(t *testing.T) {
	tok := microTokenizer(t, 6)
	examples := []text.Labeled{{Text: "the movie", Label: 1}, {Text: "bad bad bad bad bad bad", Label: 0}, {Text: "", Label: 2}}
	inputs, labels, err := tok.Collate(examples)
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) != 3 {
		t.Fatalf("Collate returned %d inputs, want 3", len(inputs))
	}
	for i, in := range inputs {
		if dims := in.Shape().Dimensions; !slices.Equal(dims, []int{3, 6}) || in.DType().String() != "Int32" {
			t.Errorf("input %d has shape %s, want (Int32)[3 6]", i, in.Shape())
		}
	}
	cls, sep, pad := int32(2), int32(3), int32(0)
	the, movie, bad := int32(5), int32(6), int32(9)
	wantIDs := []int32{cls, the, movie, sep, pad, pad, cls, bad, bad, bad, bad, sep, cls, sep, pad, pad, pad, pad}
	wantMask := []int32{1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0}
	if got := tensors.MustCopyFlatData[int32](inputs[0]); !slices.Equal(got, wantIDs) {
		t.Errorf("input_ids = %v, want %v", got, wantIDs)
	}
	if got := tensors.MustCopyFlatData[int32](inputs[1]); !slices.Equal(got, wantMask) {
		t.Errorf("attention_mask = %v, want %v", got, wantMask)
	}
	if got := tensors.MustCopyFlatData[int32](inputs[2]); !slices.Equal(got, make([]int32, 18)) {
		t.Errorf("token_type_ids = %v, want all zeros", got)
	}
	if got := tensors.MustCopyFlatData[int32](labels); !slices.Equal(got, []int32{1, 0, 2}) {
		t.Errorf("labels = %v, want [1 0 2]", got)
	}

	if _, _, err := tok.Collate(nil); err == nil || !strings.Contains(err.Error(), "empty batch") {
		t.Errorf("Collate(nil) error = %v, want an empty-batch error", err)
	}
	if _, _, err := tok.Collate([]text.Labeled{{Text: "the", Label: -1}}); err == nil || !strings.Contains(err.Error(), "negative label") {
		t.Errorf("Collate(label -1) error = %v, want a negative-label error", err)
	}
}

func TestWithBuckets(t *testing.T) {
	tok := microTokenizer(t, 16)
	bucketed, err := tok.WithBuckets(4, 8)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		texts   []string
		wantLen int
	}{
		{[]string{"the", "bad"}, 4},
		{[]string{"the movie was", "bad"}, 8},
		{[]string{"the movie was great bad bad bad"}, 16},
	}
	for _, c := range cases {
		if got := bucketed.EncodeBatch(c.texts).Len; got != c.wantLen {
			t.Errorf("EncodeBatch(%q).Len = %d, want %d", c.texts, got, c.wantLen)
		}
	}
	if got := tok.EncodeBatch([]string{"the"}).Len; got != 16 {
		t.Errorf("the original tokenizer must keep padding to max_len: got %d", got)
	}
	for _, bad := range []int{1, 17} {
		if _, err := tok.WithBuckets(bad); err == nil {
			t.Errorf("WithBuckets(%d) succeeded, want an error", bad)
		}
	}
}

func TestTokenizerFromFiles(t *testing.T) {
	dir := t.TempDir()
	vocabPath := filepath.Join(dir, "vocab.txt")
	if err := os.WriteFile(vocabPath, []byte(strings.Join(microVocab, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fromTxt, err := NewTokenizer(vocabPath, 32)
	if err != nil {
		t.Fatal(err)
	}
	if fromTxt.VocabSize() != len(microVocab) {
		t.Errorf("VocabSize = %d, want %d", fromTxt.VocabSize(), len(microVocab))
	}

	// The same vocabulary as a HF tokenizer.json (no vocab.txt in that folder).
	jsonDir := t.TempDir()
	vocabMap := map[string]int{}
	for i, tok := range microVocab {
		vocabMap[tok] = i
	}
	doc := map[string]any{
		"normalizer":     map[string]any{"type": "BertNormalizer", "lowercase": true, "strip_accents": nil, "handle_chinese_chars": true},
		"pre_tokenizer":  map[string]any{"type": "BertPreTokenizer"},
		"post_processor": map[string]any{"type": "BertProcessing", "cls": []any{ClsToken, vocabMap[ClsToken]}, "sep": []any{SepToken, vocabMap[SepToken]}},
		"model":          map[string]any{"type": "WordPiece", "vocab": vocabMap, "unk_token": UnkToken, "continuing_subword_prefix": "##", "max_input_chars_per_word": 100},
	}
	contents, _ := json.Marshal(doc)
	if err := os.WriteFile(filepath.Join(jsonDir, "tokenizer.json"), contents, 0o644); err != nil {
		t.Fatal(err)
	}
	fromJSON, err := LoadTokenizer(jsonDir, 32)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"The movie was GREAT!", "Unaffable café, 東京 don't", "xyz abc"} {
		if a, b := fromTxt.Encode(text), fromJSON.Encode(text); !slices.Equal(a, b) {
			t.Errorf("vocab.txt and tokenizer.json tokenizers differ on %q: %v vs %v", text, a, b)
		}
	}

	// A cased model (do_lower_case false in tokenizer_config.json) keeps case and accents.
	casedDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(casedDir, "vocab.txt"), []byte(strings.Join(microVocab, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(casedDir, "tokenizer_config.json"), []byte(`{"do_lower_case": false}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cased, err := LoadTokenizer(casedDir, 32)
	if err != nil {
		t.Fatal(err)
	}
	if got := cased.Tokenize("The the café"); !slices.Equal(got, []string{UnkToken, "the", UnkToken}) {
		t.Errorf("cased Tokenize = %q, want [[UNK] the [UNK]]", got)
	}
}

func TestTokenizerErrors(t *testing.T) {
	dir := t.TempDir()
	noSep := filepath.Join(dir, "nosep.txt")
	if err := os.WriteFile(noSep, []byte("[PAD]\n[UNK]\n[CLS]\nthe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	unigram := t.TempDir()
	if err := os.WriteFile(filepath.Join(unigram, "tokenizer.json"), []byte(`{"model": {"type": "Unigram", "vocab": []}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	wordLevel := t.TempDir()
	if err := os.WriteFile(filepath.Join(wordLevel, "tokenizer.json"), []byte(`{"model": {"type": "WordLevel", "vocab": {}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	bpe := t.TempDir()
	if err := os.WriteFile(filepath.Join(bpe, "tokenizer.json"), []byte(`{"model": {"type": "BPE", "vocab": {}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	slowBPE := t.TempDir()
	for name, contents := range map[string]string{"vocab.json": `{"a": 0, "<s>": 1, "</s>": 2}`, "merges.txt": "#version: 0.2\n"} {
		if err := os.WriteFile(filepath.Join(slowBPE, name), []byte(contents), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name    string
		load    func() (*Tokenizer, error)
		wantErr string
	}{
		{"vocab.json and merges.txt", func() (*Tokenizer, error) { return LoadTokenizer(slowBPE, 16) }, "no tokenizer.json, which SavePretrained writes back"},
		{"missing vocab file", func() (*Tokenizer, error) { return NewTokenizer(filepath.Join(dir, "nope.txt"), 16) }, "nope.txt"},
		{"empty vocab", func() (*Tokenizer, error) { return NewTokenizer(empty, 16) }, "empty"},
		{"no [SEP]", func() (*Tokenizer, error) { return NewTokenizer(noSep, 16) }, "no [SEP] token"},
		{"max_len too small", func() (*Tokenizer, error) { return NewTokenizerFromVocab(microVocab, 1) }, "max_len must be at least 3"},
		{"folder without vocab", func() (*Tokenizer, error) { return LoadTokenizer(t.TempDir(), 16) }, "neither vocab.txt nor tokenizer.json nor spm.model"},
		{"Unigram without unk_id", func() (*Tokenizer, error) { return LoadTokenizer(unigram, 16) }, `a Unigram model without unk_id is not supported`},
		{"WordLevel tokenizer.json", func() (*Tokenizer, error) { return LoadTokenizer(wordLevel, 16) }, `model type "WordLevel" in ` + filepath.Join(wordLevel, "tokenizer.json") + ` is not supported (supported: WordPiece, BPE, Unigram)`},
		{"BPE with an empty vocabulary", func() (*Tokenizer, error) { return LoadTokenizer(bpe, 16) }, `BPE model has an empty vocabulary`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.load()
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, c.wantErr)
			}
		})
	}
}

func TestBuildVocab(t *testing.T) {
	texts := []string{"A great, great movie!", "a bad movie", "Café: bad!"}
	vocab := BuildVocab(texts, 100)
	if !slices.Equal(vocab[:5], []string{PadToken, UnkToken, ClsToken, SepToken, MaskToken}) {
		t.Errorf("vocab starts with %q, want the special tokens in BERT order", vocab[:5])
	}
	if again := BuildVocab(texts, 100); !slices.Equal(vocab, again) {
		t.Error("BuildVocab is not deterministic")
	}
	for _, want := range []string{"great", "movie", "bad", "cafe", "##e", "!", ","} {
		if !slices.Contains(vocab, want) {
			t.Errorf("vocab lacks %q: %q", want, vocab)
		}
	}
	// The most frequent words come first: "great", "bad" and "movie" appear twice.
	if i, j := slices.Index(vocab, "great"), slices.Index(vocab, "cafe"); i > j {
		t.Errorf("frequent word %q (id %d) comes after rare %q (id %d)", "great", i, "cafe", j)
	}
	tok, err := NewTokenizerFromVocab(vocab, 32)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range append(texts, "a bead, a cab: ace") {
		if slices.Contains(tok.Tokenize(text), UnkToken) {
			t.Errorf("Tokenize(%q) = %q has [UNK]: every seen character must be covered", text, tok.Tokenize(text))
		}
	}
	if small := BuildVocab(texts, 1); slices.Contains(small, "movie") && slices.Contains(small, "great") {
		t.Errorf("maxWords=1 kept more than one word: %q", small)
	}
}
