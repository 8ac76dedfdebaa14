package tokenizers

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/goaccel/goaccel/tokenizers/tokparity"
)

// unigramParity is testdata/unigram_parity_{xlmr,deberta}.json, written by
// scripts/make_unigram_fixtures.py with transformers' fast tokenizers.
type unigramParity struct {
	Name         string `json:"name"`
	Transformers string `json:"transformers_version"`
	Class        string `json:"tokenizer_class"`
	Folder       string `json:"folder"`
	TokenizerSHA string `json:"tokenizer_json_sha256"`
	SPMSHA       string `json:"spm_model_sha256"`
	VocabSize    int    `json:"vocab_size"`
	MaxLen       int    `json:"max_len"`
	Sentences    int    `json:"sentences"`
	TextsSHA256  string `json:"texts_sha256"`
	Truncated    int    `json:"truncated_sentences"`
	Single       string `json:"single_digests_b64"`
	Pair         string `json:"pair_digests_b64"`
	Cases        []struct {
		Text    string  `json:"text"`
		IDs     []int32 `json:"ids"`
		TypeIDs []int32 `json:"token_type_ids"`
		WordIDs []int32 `json:"word_ids"`
	} `json:"cases"`
	PairCases []struct {
		A, B    string
		IDs     []int32 `json:"ids"`
		TypeIDs []int32 `json:"token_type_ids"`
		WordIDs []int32 `json:"word_ids"`
	} `json:"pair_cases"`
}

func loadUnigramParity(t *testing.T, name string) *unigramParity {
	t.Helper()
	var f unigramParity
	tokparity.ReadFixture(t, filepath.Join("testdata", name), &f)
	return &f
}

// rowDigest is the fixture's digest: 8 bytes of sha256 over the little-endian int32 ids,
// then the attention mask, then the type ids, padded to the fixture's max_len.
func rowDigest(e Encoding, maxLen int, pad int32) [8]byte {
	ids, mask, types := slices.Repeat([]int32{pad}, maxLen), make([]int32, maxLen), make([]int32, maxLen)
	copy(ids, e.IDs)
	copy(types, e.TypeIDs)
	for i := range e.IDs {
		mask[i] = 1
	}
	return tokparity.Digest(ids, mask, types)
}

// checkUnigramParity compares tok (truncating at the fixture's max_len) with transformers on
// every rt-polarity sentence, alone and paired with the next one, and on the tricky texts
// and pairs (ids, type ids and word ids).
func checkUnigramParity(t *testing.T, f *unigramParity, tok *Tokenizer, pad int32) {
	t.Helper()
	if tok.VocabSize() != f.VocabSize {
		t.Errorf("VocabSize %d, transformers' len(tokenizer) %d", tok.VocabSize(), f.VocabSize)
	}
	texts := tokparity.Sentences(t, f.Sentences, f.TextsSHA256)
	single, err1 := base64.StdEncoding.DecodeString(f.Single)
	pair, err2 := base64.StdEncoding.DecodeString(f.Pair)
	if err1 != nil || err2 != nil || len(single) != 8*len(texts) || len(pair) != 8*(len(texts)-1) {
		t.Fatalf("digests: %d and %d bytes (%v, %v)", len(single), len(pair), err1, err2)
	}
	singleOK, pairOK, truncated := 0, 0, 0
	for i := range texts {
		e := tok.Encode(texts[i])
		if len(e.IDs) == f.MaxLen {
			truncated++
		}
		if d := rowDigest(e, f.MaxLen, pad); string(d[:]) == string(single[8*i:8*i+8]) {
			singleOK++
		} else if i-singleOK < 5 {
			t.Errorf("sentence %d %q: ids %v (%q) differ from transformers'", i, texts[i], e.IDs, tok.Tokenize(texts[i]))
		}
		if i == len(texts)-1 {
			continue
		}
		p := tok.EncodePair(texts[i], texts[i+1])
		if d := rowDigest(p, f.MaxLen, pad); string(d[:]) == string(pair[8*i:8*i+8]) {
			pairOK++
		} else if i-pairOK <= 5 {
			t.Errorf("pair %d (%q, %q): ids %v types %v differ from transformers'", i, texts[i], texts[i+1], p.IDs, p.TypeIDs)
		}
	}
	tokparity.Tally{Name: f.Name, Class: f.Class, Transformers: f.Transformers, N: len(texts), SingleOK: singleOK,
		PairOK: pairOK, Truncated: truncated, MaxLen: f.MaxLen}.Check(t, f.Truncated)

	same := 0
	for _, c := range f.Cases {
		e := tok.Encode(c.Text)
		if !slices.Equal(e.IDs, c.IDs) || !slices.Equal(e.TypeIDs, c.TypeIDs) || !slices.Equal(e.WordIDs, c.WordIDs) {
			t.Errorf("Encode(%q):\n got  %v %v words %v\n want %v %v words %v (transformers)\n tokens %q",
				c.Text, e.IDs, e.TypeIDs, e.WordIDs, c.IDs, c.TypeIDs, c.WordIDs, tok.Tokenize(c.Text))
		} else {
			same++
		}
	}
	for _, c := range f.PairCases {
		e := tok.EncodePair(c.A, c.B)
		if !slices.Equal(e.IDs, c.IDs) || !slices.Equal(e.TypeIDs, c.TypeIDs) || !slices.Equal(e.WordIDs, c.WordIDs) {
			t.Errorf("EncodePair(%q, %q):\n got  %v %v words %v\n want %v %v words %v (transformers)",
				c.A, c.B, e.IDs, e.TypeIDs, e.WordIDs, c.IDs, c.TypeIDs, c.WordIDs)
		} else {
			same++
		}
	}
	t.Logf("%s: %d/%d tricky texts and pairs identical to transformers' (ids, type ids, word ids)", f.Name, same, len(f.Cases)+len(f.PairCases))
}

// loadFixtureTokenizer reads the fixture's tokenizer.json, checking it is the one the
// fixture was made from.
func loadFixtureTokenizer(t *testing.T, f *unigramParity) *Tokenizer {
	t.Helper()
	path := filepath.Join("testdata", f.Folder, "tokenizer.json")
	if sum := tokparity.FileSHA256(t, path); sum != f.TokenizerSHA {
		t.Fatalf("%s has sha256 %s, the fixture was made from %s: rerun scripts/make_unigram_fixtures.py", path, sum, f.TokenizerSHA)
	}
	tok, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if tok, err = tok.WithMaxLen(f.MaxLen); err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestUnigramParityXLMR: XLM-RoBERTa's converted tokenizer.json (Precompiled normalizer,
// WhitespaceSplit and Metaspace, Unigram, TemplateProcessing <s> A </s></s> B </s>).
func TestUnigramParityXLMR(t *testing.T) {
	f := loadUnigramParity(t, "unigram_parity_xlmr.json")
	tok := loadFixtureTokenizer(t, f)
	pad, _ := tok.ID("<pad>")
	checkUnigramParity(t, f, tok, pad)
}

// TestUnigramParityDeBERTa: DeBERTa-v3's converted tokenizer.json (Precompiled, Strip and
// Replace normalizers, Metaspace, Unigram, TemplateProcessing [CLS] A [SEP] B [SEP] with
// type ids 1 on B).
func TestUnigramParityDeBERTa(t *testing.T) {
	f := loadUnigramParity(t, "unigram_parity_deberta.json")
	tok := loadFixtureTokenizer(t, f)
	pad, _ := tok.ID("[PAD]")
	checkUnigramParity(t, f, tok, pad)
}

// TestSentencePieceParityDeBERTa: DeBERTa-v3's spm.model read directly gives the ids that
// transformers' DebertaV2TokenizerFast gives after converting the same file.
func TestSentencePieceParityDeBERTa(t *testing.T) {
	f := loadUnigramParity(t, "unigram_parity_deberta.json")
	path := filepath.Join("testdata", f.Folder, "spm.model")
	if sum := tokparity.FileSHA256(t, path); sum != f.SPMSHA {
		t.Fatalf("%s has sha256 %s, the fixture was made from %s: rerun scripts/make_unigram_fixtures.py", path, sum, f.SPMSHA)
	}
	tok, err := LoadSentencePiece(path, SentencePieceOptions{Cls: "[CLS]", Sep: "[SEP]", Extra: []string{"[MASK]"}})
	if err != nil {
		t.Fatal(err)
	}
	if tok, err = tok.WithMaxLen(f.MaxLen); err != nil {
		t.Fatal(err)
	}
	pad, _ := tok.ID("[PAD]")
	checkUnigramParity(t, f, tok, pad)
}

// TestSentencePieceErrors: a file that is not a SentencePiece model, cls or sep tokens the
// model lacks, and a model without a precompiled_charsmap are errors naming the file.
func TestSentencePieceErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "spm.model")
	if err := os.WriteFile(bad, []byte("not a protobuf \xff\xff\xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join("testdata", "deberta", "spm.model")
	// A model without a normalizer spec (so without precompiled_charsmap): its pieces only.
	var proto []byte
	for _, piece := range []struct {
		text string
		kind uint64
	}{{"[PAD]", pieceControl}, {"[CLS]", pieceControl}, {"[SEP]", pieceControl}, {"[UNK]", pieceUnknown}, {"\u2581a", pieceNormal}} {
		var p []byte
		p = protowire.AppendTag(p, 1, protowire.BytesType)
		p = protowire.AppendString(p, piece.text)
		p = protowire.AppendTag(p, 3, protowire.VarintType)
		p = protowire.AppendVarint(p, piece.kind)
		proto = protowire.AppendTag(proto, 1, protowire.BytesType)
		proto = protowire.AppendBytes(proto, p)
	}
	plain := filepath.Join(dir, "plain.model")
	if err := os.WriteFile(plain, proto, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		opts SentencePieceOptions
		want string
	}{
		{bad, SentencePieceOptions{Cls: "[CLS]", Sep: "[SEP]"}, "reading the SentencePiece model"},
		{good, SentencePieceOptions{Cls: "<s>", Sep: "</s>"}, `no piece "<s>" or "</s>"`},
		{plain, SentencePieceOptions{Cls: "[CLS]", Sep: "[SEP]"}, "without a precompiled_charsmap"},
	} {
		_, err := LoadSentencePiece(c.path, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("LoadSentencePiece(%s, %+v): error %v, want one with %q and the path", c.path, c.opts, err, c.want)
		}
	}
}
