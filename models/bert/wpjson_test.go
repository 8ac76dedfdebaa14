package bert_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/bert"
)

// wordPieceDoc is a WordPiece tokenizer.json over the NER fixture's vocabulary with cased
// words added, with the given normalizer, pre-tokenizer and post-processor (nil: null).
func wordPieceDoc(t testing.TB, normalizer, preTokenizer, post any, model map[string]any) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(string(readFixture(t, "..", "auto", "testdata", "ner_bert", "vocab.txt")), "\n"), "\n")
	lines = append(lines, "Hello", "World", "HELLO", "##LO", "Ça", "İ", "##stanbul", "é", "##́", "e", "\x00", "WOR", "##ld")
	vocab := map[string]any{}
	for _, tok := range lines {
		if _, dup := vocab[tok]; !dup {
			vocab[tok] = len(vocab)
		}
	}
	m := map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab}
	for k, v := range model {
		m[k] = v
	}
	added := []any{}
	for _, tok := range []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"} {
		added = append(added, map[string]any{"id": vocab[tok], "content": tok, "special": true, "normalized": false, "single_word": false, "lstrip": false, "rstrip": false})
	}
	return map[string]any{"version": "1.0", "added_tokens": added, "normalizer": normalizer, "pre_tokenizer": preTokenizer,
		"post_processor": post, "decoder": map[string]any{"type": "WordPiece", "prefix": "##", "cleanup": true}, "model": m}
}

// bertTemplate is BERT's TemplateProcessing with the ids of [CLS] and [SEP] in the NER
// fixture's vocabulary.
func bertTemplate() map[string]any {
	sp := func(id string, typ int) any {
		return map[string]any{"SpecialToken": map[string]any{"id": id, "type_id": typ}}
	}
	seq := func(id string, typ int) any {
		return map[string]any{"Sequence": map[string]any{"id": id, "type_id": typ}}
	}
	return map[string]any{"type": "TemplateProcessing",
		"single": []any{sp("[CLS]", 0), seq("A", 0), sp("[SEP]", 0)},
		"pair":   []any{sp("[CLS]", 0), seq("A", 0), sp("[SEP]", 0), seq("B", 1), sp("[SEP]", 1)},
		"special_tokens": map[string]any{"[CLS]": map[string]any{"id": "[CLS]", "ids": []any{2}, "tokens": []any{"[CLS]"}},
			"[SEP]": map[string]any{"id": "[SEP]", "ids": []any{3}, "tokens": []any{"[SEP]"}}}}
}

// wordPieceTexts are cased, accented, decomposed, spaced and controlled texts.
var wordPieceTexts = []string{"Hello World", "HELLO wOrld! the movie", "Ça va? İstanbul", "tab\tand\u00a0nbsp\u3000x",
	"e\u0301 and é", "nul\x00char 東京", "WORld hellO", "a " + strings.Repeat("long ", 20) + "text"}

// TestWordPieceJSONPipelineParity: a WordPiece tokenizer.json runs the pipeline the file
// describes, as the tokenizers library does: with "normalizer": null nothing is lowercased,
// stripped or cleaned (a cased model keeps its case), a BertNormalizer's switches
// (clean_text, lowercase, strip_accents) are followed, and the post-processor's tokens and
// layout are the file's.
func TestWordPieceJSONPipelineParity(t *testing.T) {
	py := testutil.Python(t, "tokenizers", "tokenizers (make deps)")
	bertNorm := func(clean, lower bool, strip any) map[string]any {
		return map[string]any{"type": "BertNormalizer", "clean_text": clean, "handle_chinese_chars": true, "strip_accents": strip, "lowercase": lower}
	}
	bertPre := map[string]any{"type": "BertPreTokenizer"}
	bertProc := map[string]any{"type": "BertProcessing", "sep": []any{"[SEP]", 3}, "cls": []any{"[CLS]", 2}}
	for _, c := range []struct {
		name string
		doc  map[string]any
	}{
		{"normalizer null", wordPieceDoc(t, nil, bertPre, bertTemplate(), nil)},
		{"cased BertNormalizer", wordPieceDoc(t, bertNorm(true, false, nil), bertPre, bertTemplate(), nil)},
		{"uncased BertNormalizer", wordPieceDoc(t, bertNorm(true, true, nil), bertPre, bertProc, nil)},
		{"clean_text false", wordPieceDoc(t, bertNorm(false, true, false), bertPre, bertProc, nil)},
		{"prefix and max chars", wordPieceDoc(t, nil, bertPre, bertTemplate(), map[string]any{"continuing_subword_prefix": "##", "max_input_chars_per_word": 4})},
		{"NFD and Lowercase", wordPieceDoc(t, map[string]any{"type": "Sequence", "normalizers": []any{map[string]any{"type": "NFD"},
			map[string]any{"type": "Lowercase"}}}, bertPre, bertTemplate(), nil)},
		{"Whitespace pre-tokenizer", wordPieceDoc(t, nil, map[string]any{"type": "Whitespace"}, bertTemplate(), nil)},
		{"no pre-tokenizer", wordPieceDoc(t, nil, nil, bertTemplate(), nil)},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := folderWith(t, map[string]any{"tokenizer.json": c.doc})
			const maxLen = 24
			tok, err := bert.LoadTokenizer(dir, maxLen)
			if err != nil {
				t.Fatal(err)
			}
			var want struct{ Single, Pair, PairTypes [][]int32 }
			testutil.RunPythonJSON(t, "the tokenizers library on "+c.name, py, `
import json, sys
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
tok.enable_truncation(int(sys.argv[2]))
texts = json.loads(sys.argv[3])
pairs = [tok.encode(a, b) for a, b in zip(texts, texts[1:] + texts[:1])]
print(json.dumps({"single": [tok.encode(x).ids for x in texts], "pair": [e.ids for e in pairs], "pairtypes": [e.type_ids for e in pairs]}))
`, &want, filepath.Join(dir, "tokenizer.json"), "24", string(mustJSON(t, wordPieceTexts)))
			for i, text := range wordPieceTexts {
				if got := tok.Encode(text); !slices.Equal(got, want.Single[i]) {
					t.Errorf("Encode(%q) = %v, the tokenizers library %v", text, got, want.Single[i])
				}
				b := wordPieceTexts[(i+1)%len(wordPieceTexts)]
				ids, types := tok.EncodePair(text, b)
				if !slices.Equal(ids, want.Pair[i]) || !slices.Equal(types, want.PairTypes[i]) {
					t.Errorf("EncodePair(%q, %q) = %v %v, the tokenizers library %v %v", text, b, ids, types, want.Pair[i], want.PairTypes[i])
				}
			}
		})
	}
}

// TestWordPieceJSONRefusals: a pipeline part that the tokenizers package does not implement,
// or a post-processor that adds no [CLS] and [SEP] (which a BERT model needs), is an error
// naming it and the file.
func TestWordPieceJSONRefusals(t *testing.T) {
	bertPre := map[string]any{"type": "BertPreTokenizer"}
	for _, c := range []struct {
		doc  map[string]any
		want string
	}{
		{wordPieceDoc(t, map[string]any{"type": "Sequence", "normalizers": []any{map[string]any{"type": "Fancy"}}}, bertPre, bertTemplate(), nil), `normalizer type "Fancy"`},
		{wordPieceDoc(t, nil, map[string]any{"type": "Digits"}, bertTemplate(), nil), `pre-tokenizer type "Digits"`},
		{wordPieceDoc(t, nil, bertPre, nil, nil), `the post_processor adds no special tokens`},
		{wordPieceDoc(t, nil, bertPre, map[string]any{"type": "ByteLevel"}, nil), `the post_processor adds no special tokens`},
	} {
		dir := folderWith(t, map[string]any{"tokenizer.json": c.doc})
		_, err := loadNoPanic(t, dir, 16)
		wantErr(t, c.want, err, c.want, filepath.Join(dir, "tokenizer.json"))
	}
}
