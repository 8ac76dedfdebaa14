package tokenizers

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// xlmrDoc is the XLM-R fixture's tokenizer.json, decoded for editing.
func xlmrDoc(t testing.TB) map[string]json.RawMessage {
	t.Helper()
	contents, err := os.ReadFile(filepath.Join("testdata", "xlmr", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(contents, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// writeDoc writes doc as a tokenizer.json in a temporary folder and returns its path.
func writeDoc(t *testing.T, doc map[string]json.RawMessage) string {
	t.Helper()
	contents, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, contents, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestUnsupportedComponent: a component type the package does not implement is an error
// naming the component, its type and the file, wherever it sits (also inside a Sequence).
func TestUnsupportedComponent(t *testing.T) {
	for _, c := range []struct{ key, value, want string }{
		{"normalizer", `{"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Fancy"}]}`, `normalizer type "Fancy"`},
		{"pre_tokenizer", `{"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": true}]}`, `pre-tokenizer type "Digits"`},
		{"post_processor", `{"type": "ByteLevelish"}`, `post-processor type "ByteLevelish"`},
		{"model", `{"type": "WordLevel", "vocab": {}}`, `model type "WordLevel"`},
	} {
		doc := xlmrDoc(t)
		doc[c.key] = json.RawMessage(c.value)
		path := writeDoc(t, doc)
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s %s: error %v, want one with %s and %s", c.key, c.value, err, c.want, path)
		}
	}
}

// TestAddedTokenIDs: an added token must have the id the tokenizers library gives it (its id
// in the vocabulary, or the next one after the vocabulary and the added tokens before it);
// the error names the token and both ids (see TestAddedIDRuleMatchesLibrary).
func TestAddedTokenIDs(t *testing.T) {
	for _, c := range []struct{ added, want string }{
		{`[{"id": 3005, "content": "<new>", "special": true}]`, `added token "<new>" has id 3005, but the tokenizers library gives it id 3002`},
		{`[{"id": 7, "content": "<s>", "special": true}]`, `added token "<s>" has id 7, but the tokenizers library gives it id 0 (its id in the vocabulary)`},
		{`[{"id": 3003, "content": "<b>", "special": true}, {"id": 3002, "content": "<a>", "special": true}]`,
			`added token "<b>" has id 3003, but the tokenizers library gives it id 3002`},
	} {
		doc := xlmrDoc(t)
		doc["added_tokens"] = json.RawMessage(c.added)
		_, err := Load(writeDoc(t, doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("added_tokens %s: error %v, want %q", c.added, err, c.want)
		}
	}
	doc := xlmrDoc(t)
	doc["added_tokens"] = json.RawMessage(`[{"id": 3002, "content": "<a>", "special": true}, {"id": 3003, "content": "<b>", "special": true}]`)
	tok, err := Load(writeDoc(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 3004 || tok.Token(3002) != "<a>" || tok.Token(3003) != "<b>" {
		t.Errorf("VocabSize %d, 3002 %q, 3003 %q; want 3004, <a>, <b>", tok.VocabSize(), tok.Token(3002), tok.Token(3003))
	}
	if got := tok.Encode("x<b>y<a>").IDs; !slices.Contains(got, 3002) || !slices.Contains(got, 3003) {
		t.Errorf("Encode(x<b>y<a>) = %v: the added tokens are not matched", got)
	}
}

// TestPrecompiled: SentencePiece's nmt_nfkc map of the fixture, applied per grapheme cluster
// (the expected strings are what the tokenizers library's Precompiled gives).
func TestPrecompiled(t *testing.T) {
	var n struct {
		Charsmap string `json:"precompiled_charsmap"`
	}
	if err := json.Unmarshal(xlmrDoc(t)["normalizer"], &n); err != nil {
		t.Fatal(err)
	}
	p, err := newPrecompiledBase64(n.Charsmap)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want string }{
		{"ﬁne ＡＢＣ", "fine ABC"},
		{"e\u0301te", "\u00e9te"},
		{"①②", "12"},
		{"a\u3000b\u00a0c", "a b c"},
		{"plain text", "plain text"},
		{"ｶﾀｶﾅ", "カタカナ"},
		{"x\u200by", "x y"},
	} {
		if got := p.Normalize(c.in); got != c.want {
			t.Errorf("Normalize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, blob := range [][]byte{nil, {1, 0, 0, 0}, {8, 0, 0, 0, 1, 2}} {
		if _, err := NewPrecompiled(blob); err == nil {
			t.Errorf("NewPrecompiled(%v): no error", blob)
		}
	}
}

// TestMetaspace: the prepend schemes and the split before each replacement (the expected
// words are the tokenizers library's pre_tokenize_str).
func TestMetaspace(t *testing.T) {
	first := Metaspace{Replacement: "▁", PrependScheme: "first", Split: true}
	for _, c := range []struct {
		in      string
		atStart bool
		want    []string
	}{
		{"hello world", true, []string{"▁hello", "▁world"}},
		{"  two  spaces", true, []string{"▁", "▁two", "▁", "▁spaces"}},
		{"x▁y", true, []string{"▁x", "▁y"}},
		{"▁▁a▁b", true, []string{"▁", "▁a", "▁b"}},
		{"x y", false, []string{"x", "▁y"}},
	} {
		var got []string
		for _, w := range first.PreTokenize([]Word{{Text: c.in, AtStart: c.atStart}}) {
			got = append(got, w.Text)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Metaspace first (at start %v) of %q = %q, want %q", c.atStart, c.in, got, c.want)
		}
	}
	never := Metaspace{Replacement: "▁", PrependScheme: "never"}
	if got := never.PreTokenize([]Word{{Text: "a b", AtStart: true}}); len(got) != 1 || got[0].Text != "a▁b" {
		t.Errorf("Metaspace never, no split, of \"a b\" = %v, want [a▁b]", got)
	}
}

// TestUnigramUnknown: characters no piece covers make one unknown token per stretch, or
// their bytes' pieces with byte fallback.
func TestUnigramUnknown(t *testing.T) {
	pieces := []string{"<unk>", "a", "b", "ab", "<0x78>", "<0x79>"}
	scores := []float64{0, -2, -2, -1, -5, -5}
	u, err := NewUnigram(pieces, scores, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := u.AppendIDs("abxyb", nil), []int32{3, 0, 2}; !slices.Equal(got, want) {
		t.Errorf("AppendIDs(abxyb) = %v, want %v (ab, one <unk> for xy, b)", got, want)
	}
	if got, want := u.AppendIDs("xaz", nil), []int32{0, 1, 0}; !slices.Equal(got, want) {
		t.Errorf("AppendIDs(xaz) = %v, want %v", got, want)
	}
	fb, err := NewUnigram(pieces, scores, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fb.AppendIDs("abxyb", nil), []int32{3, 4, 5, 2}; !slices.Equal(got, want) {
		t.Errorf("byte fallback AppendIDs(abxyb) = %v, want %v", got, want)
	}
	if got, want := fb.AppendIDs("az", nil), []int32{1, 0}; !slices.Equal(got, want) {
		t.Errorf("byte fallback AppendIDs(az) = %v, want %v (no <0x7A> piece: <unk>)", got, want)
	}
	if _, err := NewUnigram(pieces, scores, 9, false); err == nil {
		t.Error("NewUnigram with unk 9 of 6 pieces: no error")
	}
}

func TestLongestFirst(t *testing.T) {
	// The tokenizers library's own cases: room 7, first and second of 0, 2, 4 or 8 tokens.
	cases := []struct{ n1, n2, keep1, keep2 int }{
		{0, 8, 0, 7}, {2, 8, 2, 5}, {4, 4, 3, 4}, {4, 8, 3, 4}, {8, 2, 5, 2}, {8, 4, 4, 3}, {8, 8, 3, 4}, {2, 4, 2, 4},
	}
	for _, c := range cases {
		if k1, k2 := LongestFirst(c.n1, c.n2, 7); k1 != c.keep1 || k2 != c.keep2 {
			t.Errorf("LongestFirst(%d, %d, 7) = %d, %d; want %d, %d", c.n1, c.n2, k1, k2, c.keep1, c.keep2)
		}
	}
}
