package bert

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/goaccel/goaccel/tokenizers/tokparity"
)

// tokenizerParity is testdata/tokenizer_parity_{wordpiece,bpe}.json, written by
// scripts/make_tokenizer_fixtures.py with transformers' fast tokenizers.
type tokenizerParity struct {
	Kind             string   `json:"kind"`
	Transformers     string   `json:"transformers_version"`
	Class            string   `json:"tokenizer_class"`
	MaxLen           int      `json:"max_len"`
	Sentences        int      `json:"sentences"`
	TextsSHA256      string   `json:"texts_sha256"`
	Truncated        int      `json:"truncated_sentences"`
	Single           string   `json:"single_digests_b64"`
	Pair             string   `json:"pair_digests_b64"`
	Vocab            string   `json:"vocab"`
	VocabSHA256      string   `json:"vocab_sha256"`
	Tokenizer        string   `json:"tokenizer"`
	TokenizerSHA     string   `json:"tokenizer_sha256"`
	SameIDs          []string `json:"same_ids"`
	TokenizerJSONSHA string   `json:"tokenizer_json_sha256"`
	parityCases
	// Variants are the WordPiece tokenizer with added tokens, on the same texts.
	Variants []struct {
		Name            string          `json:"name"`
		TokenizerConfig json.RawMessage `json:"tokenizer_config"` // vocab_txt: vocab.txt and this
		AddedTokens     json.RawMessage `json:"added_tokens"`     // tokenizer_json: MiniLM's, these added_tokens
		VocabSize       int             `json:"vocab_size"`
		parityCases
	} `json:"variants"`
}

// parityCases are the ids transformers gives to tricky texts and pairs of texts.
type parityCases struct {
	Cases []struct {
		Text string  `json:"text"`
		IDs  []int32 `json:"ids"`
	} `json:"cases"`
	PairCases []struct {
		A, B    string
		IDs     []int32 `json:"ids"`
		TypeIDs []int32 `json:"token_type_ids"`
	} `json:"pair_cases"`
}

// check compares tok (whose MaxLen is the fixture's) with transformers on the cases.
func (c *parityCases) check(t *testing.T, tok *Tokenizer) {
	t.Helper()
	same := 0
	for _, c := range c.Cases {
		if got := tok.Encode(c.Text); !slices.Equal(got, c.IDs) {
			t.Errorf("Encode(%q):\n got  %v\n want %v (transformers)", c.Text, got, c.IDs)
		} else {
			same++
		}
	}
	for _, c := range c.PairCases {
		ids, types := tok.EncodePair(c.A, c.B)
		if !slices.Equal(ids, c.IDs) || !slices.Equal(types, c.TypeIDs) {
			t.Errorf("EncodePair(%q, %q):\n got  %v %v\n want %v %v (transformers)", c.A, c.B, ids, types, c.IDs, c.TypeIDs)
		} else {
			same++
		}
	}
	t.Logf("%s: %d/%d tricky texts and pairs identical to transformers'", tok.vocabFrom, same, len(c.Cases)+len(c.PairCases))
}

// checkTokenizerParity compares tok with transformers on every rt-polarity sentence, alone
// (through EncodeBatch, the path Collate takes) and paired with the next one (EncodePair),
// and on the fixture's tricky texts.
func checkTokenizerParity(t *testing.T, f *tokenizerParity, tok *Tokenizer) {
	t.Helper()
	texts := tokparity.Sentences(t, f.Sentences, f.TextsSHA256)
	single, err := base64.StdEncoding.DecodeString(f.Single)
	if err != nil || len(single) != 8*len(texts) {
		t.Fatalf("single digests: %d bytes, %v", len(single), err)
	}
	pair, err := base64.StdEncoding.DecodeString(f.Pair)
	if err != nil || len(pair) != 8*(len(texts)-1) {
		t.Fatalf("pair digests: %d bytes, %v", len(pair), err)
	}

	enc := tok.EncodeBatch(texts)
	if enc.Len != f.MaxLen {
		t.Fatalf("EncodeBatch padded to %d, want %d", enc.Len, f.MaxLen)
	}
	singleOK, pairOK, truncated := 0, 0, 0
	for i := range texts {
		row := func(s []int32) []int32 { return s[i*enc.Len : (i+1)*enc.Len] }
		if row(enc.AttentionMask)[enc.Len-1] == 1 {
			truncated++
		}
		if d := tokparity.Digest(row(enc.InputIDs), row(enc.AttentionMask), row(enc.TokenTypeIDs)); string(d[:]) == string(single[8*i:8*i+8]) {
			singleOK++
		} else if i-singleOK < 5 {
			t.Errorf("sentence %d %q: ids %v differ from transformers'", i, texts[i], tok.Encode(texts[i]))
		}
		if i == len(texts)-1 {
			continue
		}
		ids, types := tok.EncodePair(texts[i], texts[i+1])
		padded, mask, typ := slices.Repeat([]int32{tok.PadID()}, f.MaxLen), make([]int32, f.MaxLen), make([]int32, f.MaxLen)
		copy(padded, ids)
		copy(typ, types)
		for j := range ids {
			mask[j] = 1
		}
		if d := tokparity.Digest(padded, mask, typ); string(d[:]) == string(pair[8*i:8*i+8]) {
			pairOK++
		} else if i-pairOK <= 5 {
			t.Errorf("pair %d (%q, %q): ids %v types %v differ from transformers'", i, texts[i], texts[i+1], ids, types)
		}
	}
	tokparity.Tally{Name: f.Kind, Class: f.Class, Transformers: f.Transformers, N: len(texts), SingleOK: singleOK,
		PairOK: pairOK, Truncated: truncated, MaxLen: f.MaxLen}.Check(t, f.Truncated)

	long, err := tok.withMaxLen(f.MaxLen)
	if err != nil {
		t.Fatal(err)
	}
	f.parityCases.check(t, long)
}

func loadTokenizerParity(t *testing.T, name string) *tokenizerParity {
	t.Helper()
	var f tokenizerParity
	tokparity.ReadFixture(t, filepath.Join("testdata", name), &f)
	return &f
}

// TestWordPieceParityRTPolarity: BERT's WordPiece (also DistilBERT's and ELECTRA's, which the
// script checks give the same ids) on the pretrained MiniLM's vocabulary.
func TestWordPieceParityRTPolarity(t *testing.T) {
	f := loadTokenizerParity(t, "tokenizer_parity_wordpiece.json")
	dir := parityModelDir(t, &parityFixture{Model: filepath.Dir(f.Vocab)})
	vocab := filepath.Join(dir, "vocab.txt")
	if _, err := os.Stat(vocab); err != nil {
		msg := fmt.Sprintf("SKIPPING WORDPIECE PARITY: %s not found (%v); run make deps (or scripts/fetch_model.sh)", vocab, err)
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set (make deps fetches the model there) but " + msg)
		}
		t.Skip(msg)
	}
	if sum := fileSHA256(t, vocab); sum != f.VocabSHA256 {
		t.Fatalf("%s has sha256 %s, the fixture was made from %s", vocab, sum, f.VocabSHA256)
	}
	tok, err := LoadTokenizer(dir, f.MaxLen)
	if err != nil {
		t.Fatal(err)
	}
	checkTokenizerParity(t, f, tok)

	// The variants with added tokens: vocab.txt with a tokenizer_config.json, and MiniLM's
	// tokenizer.json with other added_tokens.
	jsonPath := filepath.Join(dir, "tokenizer.json")
	if sum := fileSHA256(t, jsonPath); sum != f.TokenizerJSONSHA {
		t.Fatalf("%s has sha256 %s, the fixture was made from %s", jsonPath, sum, f.TokenizerJSONSHA)
	}
	if len(f.Variants) != 2 {
		t.Fatalf("the fixture has %d variants, want 2 (vocab_txt, tokenizer_json)", len(f.Variants))
	}
	for _, v := range f.Variants {
		t.Run(v.Name, func(t *testing.T) {
			vdir := t.TempDir()
			switch v.Name {
			case "vocab_txt":
				contents, err := os.ReadFile(vocab)
				if err != nil {
					t.Fatal(err)
				}
				writeTestFile(t, vdir, "vocab.txt", string(contents))
				writeTestFile(t, vdir, "tokenizer_config.json", string(v.TokenizerConfig))
			case "tokenizer_json":
				var doc map[string]json.RawMessage
				contents, err := os.ReadFile(jsonPath)
				if err == nil {
					err = json.Unmarshal(contents, &doc)
				}
				if err != nil {
					t.Fatal(err)
				}
				doc["added_tokens"] = v.AddedTokens
				if contents, err = json.Marshal(doc); err != nil {
					t.Fatal(err)
				}
				writeTestFile(t, vdir, "tokenizer.json", string(contents))
			default:
				t.Fatalf("unknown variant %q", v.Name)
			}
			tok, err := LoadTokenizer(vdir, f.MaxLen)
			if err != nil {
				t.Fatal(err)
			}
			if tok.VocabSize() != v.VocabSize {
				t.Errorf("VocabSize %d, transformers' len(tokenizer) %d", tok.VocabSize(), v.VocabSize)
			}
			v.parityCases.check(t, tok)
		})
	}
}

// TestBPEParityRTPolarity: RoBERTa's byte-level BPE, on a tokenizer trained on rt-polarity
// (testdata/roberta_bpe/tokenizer.json).
func TestBPEParityRTPolarity(t *testing.T) {
	f := loadTokenizerParity(t, "tokenizer_parity_bpe.json")
	path := filepath.Join("testdata", filepath.FromSlash(f.Tokenizer))
	if sum := fileSHA256(t, path); sum != f.TokenizerSHA {
		t.Fatalf("%s has sha256 %s, the fixture was made from %s: rerun scripts/make_tokenizer_fixtures.py", path, sum, f.TokenizerSHA)
	}
	tok, err := LoadTokenizer(filepath.Dir(path), f.MaxLen)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Kind() != "BPE" {
		t.Fatalf("Kind() = %q, want BPE", tok.Kind())
	}
	checkTokenizerParity(t, f, tok)
}
