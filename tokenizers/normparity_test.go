package tokenizers

import (
	"slices"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
)

// TestNormalizersMatchLibrary: Lowercase (the one lowercasing of the package, which
// BertNormalizer uses too) and BertNormalizer's switches give what the tokenizers library's
// normalize_str gives, on texts with the letters whose lowercase differs between languages
// (İ, final Σ, ẞ, the Kelvin sign, title-case digraphs), letters newer than Go's Unicode
// tables, accents, controls, odd spaces and CJK.
func TestNormalizersMatchLibrary(t *testing.T) {
	t.Parallel() // most of its time is Python's
	py := testutil.NeedTransformers(t)
	texts := []string{"İstanbul", "ΟΔΟΣ ΣΑΣ", "ǅ ǈ ǋ", "ẞ straße", "\u212A\u212B", "ᾈ ᾼ", "\u1C89\u1C90", "\uA7DC\uA7CB", "\U00010D50\U00016EA0",
		"Crème BRÛLÉE", "e\u0301 A\u030A", "tab\tnl\nnul\x00\u200b\u00ad", "a\u3000b\u00a0c\u2028d\u2029e\u0085f\u000bg\u001ch\u180ei\u200bj\ufeffk", "東京タワー 한국어", "\ufffd\U000E0001x", ""}
	configs := []struct {
		name string
		n    Normalizer
		py   string
	}{
		{"Lowercase", Lowercase{}, "normalizers.Lowercase()"},
		{"BertNormalizer uncased", BertNormalizer{CleanText: true, HandleChineseChars: true, StripAccents: true, Lowercase: true},
			"normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True)"},
		{"BertNormalizer lowercase only", BertNormalizer{CleanText: true, HandleChineseChars: false, Lowercase: true},
			"normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=True)"},
		{"BertNormalizer cased, no cleaning", BertNormalizer{HandleChineseChars: true},
			"normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=True, strip_accents=False, lowercase=False)"},
	}
	exprs := make([]string, len(configs))
	for i, c := range configs {
		exprs[i] = c.py
	}
	var want [][]string
	testutil.RunPythonJSON(t, "the library's normalizers", py, `
import json, sys
from tokenizers import normalizers
texts = json.loads(sys.argv[2])
print(json.dumps([[eval(e).normalize_str(x) for x in texts] for e in json.loads(sys.argv[1])]))
`, &want, string(mustMarshal(t, exprs)), string(mustMarshal(t, texts)))
	for i, c := range configs {
		for j, text := range texts {
			if got := c.n.Normalize(text); got != want[i][j] {
				t.Errorf("%s(%q) = %q, the tokenizers library %q", c.name, text, got, want[i][j])
			}
		}
	}
}

// TestPreTokenizersMatchLibrary: BertPreTokenizer and ByteLevel (GPT-2's pattern, with and
// without the prefix space) cut texts into the words the tokenizers library's
// pre_tokenize_str gives.
func TestPreTokenizersMatchLibrary(t *testing.T) {
	t.Parallel() // most of its time is Python's
	py := testutil.NeedTransformers(t)
	texts := []string{"Hello, world! It's $5+3=8^2 `x` ~y|z", "  two  spaces \t\n end ", "don't we'll I'd THEY'RE", "3.14 $100 ½ ٣",
		"café 東京 🎉 a\u2028b\u00a0c\u3000d", "!!!? !!", "   ", "'s 'x", ""}
	configs := []struct {
		name string
		p    PreTokenizer
		py   string
	}{
		{"BertPreTokenizer", BertPreTokenizer{}, "pre_tokenizers.BertPreTokenizer()"},
		{"ByteLevel", ByteLevel{UseRegex: true}, "pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)"},
		{"ByteLevel with a prefix space", ByteLevel{AddPrefixSpace: true, UseRegex: true}, "pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)"},
		{"ByteLevel without the pattern", ByteLevel{AddPrefixSpace: true}, "pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=False)"},
	}
	exprs := make([]string, len(configs))
	for i, c := range configs {
		exprs[i] = c.py
	}
	var want [][][]string
	testutil.RunPythonJSON(t, "the library's pre-tokenizers", py, `
import json, sys
from tokenizers import pre_tokenizers
texts = json.loads(sys.argv[2])
print(json.dumps([[[w for w, _ in eval(e).pre_tokenize_str(x)] for x in texts] for e in json.loads(sys.argv[1])]))
`, &want, string(mustMarshal(t, exprs)), string(mustMarshal(t, texts)))
	for i, c := range configs {
		for j, text := range texts {
			var got []string
			for _, w := range c.p.PreTokenize([]Word{{Text: text, AtStart: true}}) {
				got = append(got, w.Text)
			}
			if !slices.Equal(got, want[i][j]) && len(got)+len(want[i][j]) > 0 {
				t.Errorf("%s(%q) = %q, the tokenizers library %q", c.name, text, got, want[i][j])
			}
		}
	}
}
