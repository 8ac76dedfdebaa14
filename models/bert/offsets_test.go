package bert

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/goaccel/goaccel/tokenizers"
)

// offsetsFixture is testdata/offsets_parity.json (scripts/make_ner_fixtures.py): for each
// tokenizer, transformers' ids and offset_mapping (characters) of a list of texts.
type offsetsFixture map[string]struct {
	Kind  string `json:"kind"`
	Cases []struct {
		Text    string   `json:"text"`
		IDs     []int32  `json:"ids"`
		Offsets [][2]int `json:"offsets"`
	} `json:"cases"`
}

// TestEncodeOffsetsMatchesTransformers: EncodeOffsets gives the ids and, converted by
// tokenizers.CharOffsets, the offset_mapping of transformers' fast tokenizers, for every
// tokenizer kind of the families (WordPiece uncased and cased, byte-level BPE with
// trim_offsets, XLM-R's and DeBERTa-v3's Unigram tokenizer.json, DeBERTa-v3's spm.model), on
// texts with accents, CJK, emoji, whitespace runs, long words and special tokens; and every
// byte offset slices the text on character boundaries.
func TestEncodeOffsetsMatchesTransformers(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "offsets_parity.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f offsetsFixture
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	cased := t.TempDir()
	vocab, err := os.ReadFile(filepath.Join("..", "auto", "testdata", "ner_bert", "vocab.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cased, "vocab.txt"), vocab, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cased, "tokenizer_config.json"), []byte(`{"do_lower_case": false}`), 0o644); err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{
		"wordpiece_uncased": filepath.Join("..", "auto", "testdata", "ner_bert"),
		"wordpiece_cased":   cased,
		"bpe":               filepath.Join("testdata", "roberta_bpe"),
		"xlmr":              filepath.Join("..", "..", "tokenizers", "testdata", "xlmr"),
		"deberta_json":      filepath.Join("..", "..", "tokenizers", "testdata", "deberta"),
		"deberta_spm":       filepath.Join("..", "deberta", "testdata", "tiny"),
	}
	if len(f) != len(dirs) {
		t.Fatalf("the fixture has %d tokenizers, the test %d", len(f), len(dirs))
	}
	for name, dir := range dirs {
		t.Run(name, func(t *testing.T) {
			fx, ok := f[name]
			if !ok || len(fx.Cases) == 0 {
				t.Fatalf("the fixture has no cases for %s", name)
			}
			tok, err := LoadTokenizer(dir, 512)
			if err != nil {
				t.Fatal(err)
			}
			bad := 0
			for _, c := range fx.Cases {
				ids, offs, err := tok.EncodeOffsets(c.Text)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(ids, c.IDs) {
					t.Errorf("%q: ids\n%v, transformers'\n%v", c.Text, ids, c.IDs)
					continue
				}
				if want := tok.Encode(c.Text); !slices.Equal(ids, want) {
					t.Errorf("%q: EncodeOffsets' ids %v differ from Encode's %v", c.Text, ids, want)
				}
				for i, o := range offs {
					if o.Start > o.End || o.End > len(c.Text) || !isRuneBoundary(c.Text, o.Start) || !isRuneBoundary(c.Text, o.End) {
						t.Errorf("%q: token %d has byte offset %v, not a slice of the text", c.Text, i, o)
					}
				}
				chars := tokenizers.CharOffsets(c.Text, offs)
				for i, o := range chars {
					if want := c.Offsets[i]; o.Start != want[0] || o.End != want[1] {
						bad++
						if bad <= 10 {
							t.Errorf("%q: token %d (%q) has offsets (%d, %d), transformers' (%d, %d)", c.Text, i, tok.Token(ids[i]), o.Start, o.End, want[0], want[1])
						}
					}
				}
			}
			t.Logf("%s (%s): %d texts, %d offsets differ", name, fx.Kind, len(fx.Cases), bad)
		})
	}
}

func isRuneBoundary(s string, i int) bool {
	return i == 0 || i == len(s) || i < len(s) && (s[i]&0xC0) != 0x80
}
