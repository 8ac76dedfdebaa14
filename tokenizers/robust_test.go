package tokenizers

import (
	"encoding/json"
	"strings"
	"testing"
)

// These tests go through the package's exported API only (Load, Parse, WithMaxLen, Encode...),
// so that they hold whatever the code behind it becomes.

// parseDoc encodes doc and parses it as the file "edited.json".
func parseDoc(t *testing.T, doc map[string]json.RawMessage) (*Tokenizer, error) {
	t.Helper()
	contents, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return Parse(contents, "edited.json")
}

// noPanic runs f, failing t with what it names when f panics.
func noPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s panicked: %v", what, r)
		}
	}()
	f()
}

// TestTemplateSequenceB: a single template that names $B (there is no second text), or a
// pair template without $A or $B, is refused when the file is read, naming the file and the
// template.
func TestTemplateSequenceB(t *testing.T) {
	const specials = `"special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]}, "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}`
	const good = `[{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}]`
	for _, c := range []struct{ single, pair, want string }{
		{`[{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 0}}]`, good, "single"},
		{`[{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 0}}]`, good, "single"},
		{`[{"SpecialToken": {"id": "<s>", "type_id": 0}}]`, good, "single"},
		{`[{"Sequence": {"id": "A", "type_id": 0}}]`, `[{"Sequence": {"id": "A", "type_id": 0}}]`, "pair"},
		{`[{"Sequence": {"id": "A", "type_id": 0}}]`, `[{"Sequence": {"id": "B", "type_id": 0}}]`, "pair"},
	} {
		doc := xlmrDoc(t)
		doc["post_processor"] = json.RawMessage(`{"type": "TemplateProcessing", "single": ` + c.single + `, "pair": ` + c.pair + `, ` + specials + `}`)
		var err error
		noPanic(t, "Parse", func() {
			var tok *Tokenizer
			if tok, err = parseDoc(t, doc); err == nil {
				tok.Encode("hello")
				tok.EncodePair("hello", "world")
			}
		})
		if err == nil || !strings.Contains(err.Error(), "edited.json") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("single %s, pair %s: error %v, want one naming edited.json and the %s template", c.single, c.pair, err, c.want)
		}
	}
}

// TestWithMaxLenNoPostProcessor: a negative length is an error, not a panic, on a
// tokenizer without a post-processor too.
func TestWithMaxLenNoPostProcessor(t *testing.T) {
	doc := xlmrDoc(t)
	doc["post_processor"] = json.RawMessage(`null`)
	tok, err := parseDoc(t, doc)
	if err != nil {
		t.Fatal(err)
	}
	noPanic(t, "WithMaxLen(-1)", func() { _, err = tok.WithMaxLen(-1) })
	if err == nil || !strings.Contains(err.Error(), "-1") {
		t.Errorf("WithMaxLen(-1): error %v, want one naming -1", err)
	}
	if c, err := tok.WithMaxLen(3); err != nil || len(c.Encode("hello world, this is long").IDs) != 3 {
		t.Errorf("WithMaxLen(3): %v", err)
	}
}

// TestSpecialTokenIDs: every id the post-processor puts around the texts must be the id of
// the token it names in the vocabulary: an id past the vocabulary (which the embedding
// gather would clamp to its last row) or a token the vocabulary lacks is an error naming
// the token and the file.
func TestSpecialTokenIDs(t *testing.T) {
	const tpl = `"single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
		"pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 0}}]`
	for _, c := range []struct{ post, want string }{
		{`{"type": "TemplateProcessing", ` + tpl + `, "special_tokens": {"<s>": {"id": "<s>", "ids": [999999], "tokens": ["<s>"]}, "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}}`,
			`"<s>" id 999999`},
		{`{"type": "TemplateProcessing", ` + tpl + `, "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<cls>"]}, "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}}`,
			`"<cls>" (id 0) is not in the vocabulary`},
		{`{"type": "TemplateProcessing", ` + tpl + `, "special_tokens": {"<s>": {"id": "<s>", "ids": [], "tokens": []}, "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}}`,
			`"<s>" has 0 ids`},
		// Found by FuzzParse: a special token without ids was taken for the text $A.
		{`{"type": "TemplateProcessing", ` + tpl + `, "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]}, "</s>": {"id": "</s>", "tokens": ["</s>"]}}}`,
			`"</s>" has 0 ids`},
		{`{"type": "RobertaProcessing", "cls": ["<s>", 0], "sep": ["</s>", -3]}`, `"</s>" id -3`},
		{`{"type": "BertProcessing", "cls": ["[CLS]", 0], "sep": ["</s>", 2]}`, `"[CLS]" (id 0) is not in the vocabulary`},
	} {
		doc := xlmrDoc(t)
		doc["post_processor"] = json.RawMessage(c.post)
		_, err := parseDoc(t, doc)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "edited.json") {
			t.Errorf("post_processor %s:\nerror %v, want one naming edited.json and with %s", c.post, err, c.want)
		}
	}
}

// TestOffsetsInvalidUTF8: a byte that is not UTF-8 is a character of one byte: its tokens'
// offsets stay within the text (found by FuzzParse).
func TestOffsetsInvalidUTF8(t *testing.T) {
	tok, err := parseDoc(t, xlmrDoc(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"\xc4", "a\xffb", "é\xe2\x82"} {
		e, offs, err := tok.EncodeOffsets(text)
		if err != nil {
			t.Fatal(err)
		}
		if len(offs) != len(e.IDs) {
			t.Fatalf("EncodeOffsets(%q): %d offsets, %d ids", text, len(offs), len(e.IDs))
		}
		for _, o := range offs {
			if o.Start < 0 || o.Start > o.End || o.End > len(text) {
				t.Errorf("EncodeOffsets(%q): offset %v outside the %d bytes", text, o, len(text))
			}
		}
	}
}

// lowercaseCases are letters whose lowercase is special, with what the tokenizers library's
// Lowercase makes of them (0.23.3): İ becomes two characters, a final Σ is σ (the mapping is
// per character), and the letters of Unicode 16 (Go's tables are Unicode 15) have their pairs.
var lowercaseCases = map[string]string{
	"İstanbul": "i\u0307stanbul", "ΟΔΟΣ": "οδοσ", "ǅ": "ǆ", "ẞ": "ß", "\u212A": "k", "Ⅻ": "ⅻ", "ᾈ": "ᾀ",
	"\u1C89": "\u1C8A", "\uA7DC": "\u019B", "\uA7CB": "\u0264", "\U00010D50": "\U00010D70", "\U00016EA0": "\U00016EBB",
}

// TestLowercaseAsTheLibrary: Lowercase is the tokenizers library's, letter for letter.
func TestLowercaseAsTheLibrary(t *testing.T) {
	for in, want := range lowercaseCases {
		if got := (Lowercase{}).Normalize(in); got != want {
			t.Errorf("Lowercase(%q) = %q (%+q), want %q (%+q)", in, got, got, want, want)
		}
	}
}
