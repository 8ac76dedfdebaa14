package tokenizers

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplitGPT2(t *testing.T) {
	cases := []struct {
		text string
		want []string
	}{
		{"Hello world!", []string{"Hello", " world", "!"}},
		{"  two  spaces", []string{" ", " two", " ", " spaces"}},
		{"trailing space ", []string{"trailing", " space", " "}},
		{"it's we'll I'd", []string{"it", "'s", " we", "'ll", " I", "'d"}},
		{"DON'T", []string{"DON", "'", "T"}},
		{"a\tb", []string{"a", "\t", "b"}},
		{"x  \n y", []string{"x", "  \n", " y"}},
		{"3.14 $100", []string{"3", ".", "14", " $", "100"}},
		{"!!!? !!", []string{"!!!?", " !!"}},
		{"café 東京", []string{"café", " 東京"}},
		{"   ", []string{"   "}},
	}
	for _, c := range cases {
		if got := splitGPT2(c.text); !slices.Equal(got, c.want) {
			t.Errorf("splitGPT2(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

// FuzzByteLevelBPE checks two invariants of the byte-level BPE on the tokenizer trained on
// rt-polarity: GPT-2's split covers the text exactly, and the tokens, mapped back from their
// printable stand-ins to bytes, are the text again (every byte is in the vocabulary, so
// nothing is lost), whatever the input.
func FuzzByteLevelBPE(f *testing.F) {
	tok, err := FromFolder(filepath.Join("..", "models", "bert", "testdata", "roberta_bpe"))
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{"Hello world!", "  two  spaces \t\n", "it's DON'T", "café 東京 🎉", "a <mask>b", "\xff\xfe"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) {
			return // Go strings from files may hold any bytes; transformers only sees valid text
		}
		if got := strings.Join(splitGPT2(text), ""); got != text {
			t.Fatalf("splitGPT2(%q) joins to %q", text, got)
		}
		for _, a := range tok.AddedTokens() {
			if strings.Contains(text, a.Content) { // added tokens are cut out first, with the spaces they strip
				return
			}
		}
		var back []byte
		for _, token := range tok.Tokenize(text) {
			for _, r := range token {
				b, ok := runeByte[r]
				if !ok {
					t.Fatalf("token %q has %q, not a byte stand-in", token, r)
				}
				back = append(back, b)
			}
		}
		if string(back) != text {
			t.Fatalf("Tokenize(%q) maps back to %q", text, back)
		}
	})
}
