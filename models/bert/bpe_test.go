package bert

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestByteLevelBPEMerges checks the merge loop and the byte mapping on a hand-made
// tokenizer.json: merges apply by rank, everywhere in a word, and a space becomes "Ġ".
func TestByteLevelBPEMerges(t *testing.T) {
	dir := t.TempDir()
	doc := `{
	  "added_tokens": [{"id": 0, "content": "<s>", "special": true}, {"id": 1, "content": "<pad>", "special": true},
	                   {"id": 2, "content": "</s>", "special": true}, {"id": 3, "content": "<mask>", "lstrip": true, "special": true}],
	  "normalizer": null,
	  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
	  "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0], "trim_offsets": true, "add_prefix_space": false},
	  "model": {"type": "BPE", "dropout": null, "unk_token": null, "vocab": {"<s>": 0, "<pad>": 1, "</s>": 2, "<mask>": 3,
	    "a": 4, "b": 5, "c": 6, "Ġ": 7, "ab": 8, "abc": 9, "Ġa": 10, "aa": 11},
	    "merges": [["a", "b"], ["ab", "c"], "Ġ a", "a a"]}
	}`
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := LoadTokenizer(dir, 16)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		text string
		want []string
	}{
		{"abc", []string{"abc"}},
		{"ab abc", []string{"ab", "Ġ", "abc"}}, // "a b" ranks before "Ġ a", so Ġa never forms
		{"ab a", []string{"ab", "Ġa"}},
		{"aaa", []string{"aa", "a"}},
		{"cab", []string{"c", "ab"}},
		{"a <mask>b", []string{"a", "<mask>", "b"}}, // <mask> swallows the space before it
		{"xa", []string{"a"}},                       // no unk_token: unknown bytes are dropped
	}
	for _, c := range cases {
		if got := tok.Tokenize(c.text); !slices.Equal(got, c.want) {
			t.Errorf("Tokenize(%q) = %q, want %q", c.text, got, c.want)
		}
	}
	if got := tok.Encode("abc"); !slices.Equal(got, []int32{0, 9, 2}) {
		t.Errorf("Encode = %v, want <s> abc </s> = [0 9 2]", got)
	}
	ids, types := tok.EncodePair("abc", "c")
	if !slices.Equal(ids, []int32{0, 9, 2, 2, 6, 2}) || !slices.Equal(types, make([]int32, 6)) {
		t.Errorf("EncodePair = %v %v, want <s> abc </s></s> c </s> with type ids 0", ids, types)
	}
	if tok.PadID() != 1 || tok.VocabSize() != 12 || tok.Kind() != "BPE" {
		t.Errorf("PadID %d, VocabSize %d, Kind %s; want 1, 12, BPE", tok.PadID(), tok.VocabSize(), tok.Kind())
	}

	// What is not supported is refused, naming the file and the setting.
	for _, bad := range []struct{ edit, want string }{
		{`"dropout": null`, `"dropout": 0.1`},
		{`"type": "RobertaProcessing"`, `"type": "TemplateProcessing"`},
		{`"normalizer": null`, `"normalizer": {"type": "Replace"}`},
	} {
		broken := strings.Replace(doc, bad.edit, bad.want, 1)
		if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(broken), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadTokenizer(dir, 16)
		if err == nil || !strings.Contains(err.Error(), "tokenizer.json") {
			t.Errorf("with %s: error %v, want one naming tokenizer.json", bad.want, err)
		} else {
			t.Logf("with %s: %v", bad.want, err)
		}
	}
}

// TestBPETemplateProcessing: a byte-level BPE tokenizer.json whose post-processor is a
// TemplateProcessing (answerdotai/ModernBERT-base's is: [CLS] $A [SEP], pairs [CLS] $A [SEP]
// $B:1 [SEP]:1) encodes as the BertProcessing or RobertaProcessing it spells, texts and pairs
// with their type ids; a template of another layout is refused, shown as written.
func TestBPETemplateProcessing(t *testing.T) {
	src := filepath.Join("testdata", "roberta_bpe")
	raw, err := os.ReadFile(filepath.Join(src, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	special := func(name string, typeID int) map[string]any {
		return map[string]any{"SpecialToken": map[string]any{"id": name, "type_id": typeID}}
	}
	seq := func(name string, typeID int) map[string]any {
		return map[string]any{"Sequence": map[string]any{"id": name, "type_id": typeID}}
	}
	template := func(single, pair []map[string]any) map[string]any {
		return map[string]any{"type": "TemplateProcessing", "single": single, "pair": pair,
			"special_tokens": map[string]any{"<s>": map[string]any{"id": "<s>", "ids": []int{0}, "tokens": []string{"<s>"}},
				"</s>": map[string]any{"id": "</s>", "ids": []int{2}, "tokens": []string{"</s>"}}}}
	}
	// folder writes the fixture's tokenizer.json with another post-processor.
	folder := func(pp map[string]any) string {
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		doc["post_processor"] = pp
		dir := t.TempDir()
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	single := []map[string]any{special("<s>", 0), seq("A", 0), special("</s>", 0)}
	for _, c := range []struct {
		name     string
		template map[string]any
		like     map[string]any
	}{
		{"RoBERTa's layout", template(single, []map[string]any{special("<s>", 0), seq("A", 0), special("</s>", 0), special("</s>", 0), seq("B", 0), special("</s>", 0)}),
			map[string]any{"type": "RobertaProcessing", "sep": []any{"</s>", 2}, "cls": []any{"<s>", 0}}},
		{"BERT's layout", template(single, []map[string]any{special("<s>", 0), seq("A", 0), special("</s>", 0), seq("B", 1), special("</s>", 1)}),
			map[string]any{"type": "BertProcessing", "sep": []any{"</s>", 2}, "cls": []any{"<s>", 0}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := LoadTokenizer(folder(c.template), 16)
			if err != nil {
				t.Fatal(err)
			}
			want, err := LoadTokenizer(folder(c.like), 16)
			if err != nil {
				t.Fatal(err)
			}
			for _, text := range []string{"the movie was great", "GoAccel is fun", ""} {
				if g, w := got.Encode(text), want.Encode(text); !slices.Equal(g, w) {
					t.Errorf("Encode(%q) = %v, want %v", text, g, w)
				}
			}
			gi, gt := got.EncodePair("a fine movie", "was it?")
			wi, wt := want.EncodePair("a fine movie", "was it?")
			if !slices.Equal(gi, wi) || !slices.Equal(gt, wt) {
				t.Errorf("EncodePair = %v %v, want %v %v", gi, gt, wi, wt)
			}
		})
	}
	// Another layout is laid out as it says: <s> A B </s>.
	odd := template(single, []map[string]any{special("<s>", 0), seq("A", 0), seq("B", 0), special("</s>", 0)})
	tok, err := LoadTokenizer(folder(odd), 16)
	if err != nil {
		t.Fatal(err)
	}
	a, b := tok.Tokenize("a fine movie"), tok.Tokenize("was it?")
	ids, types := tok.EncodePair("a fine movie", "was it?")
	want := []int32{0}
	for _, s := range append(a, b...) {
		id, _ := tok.ID(s)
		want = append(want, id)
	}
	if want = append(want, 2); !slices.Equal(ids, want) || !slices.Equal(types, make([]int32, len(want))) {
		t.Errorf("EncodePair with pair <s> $A $B </s> = %v %v, want %v with type ids 0", ids, types, want)
	}
}
