package tokenizers

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
)

// TestAddedIDRuleMatchesLibrary: for each list of added tokens, the tokenizers library reads
// the file and gives each token an id; where every id is the file's, Load gives the same ids,
// and where one differs, Load refuses the file naming the first such token (in file order).
func TestAddedIDRuleMatchesLibrary(t *testing.T) {
	t.Parallel() // most of its time is Python's
	py := testutil.NeedTransformers(t)
	vocab := map[string]int{"[UNK]": 0, "a": 1, "b": 2, "c": 3, "d": 4}
	type added struct {
		Content string
		ID      int
	}
	cases := [][]added{
		{{"XX", 5}, {"YY", 6}},
		{{"XX", 7}},
		{{"b", 1}},
		{{"XX", 6}, {"YY", 5}},
		{{"b", 2}, {"XX", 5}, {"ZZ", 6}},
		{{"XX", 5}, {"b", 2}, {"YY", 6}},
		{{"XX", 5}, {"XX", 5}},
		{{"XX", 5}, {"XX", 6}},
		{{"XX", 5}, {"ZZ", 7}},
		{{"[UNK]", 0}, {"XX", 5}},
	}
	docs := make([]string, len(cases))
	for i, c := range cases {
		list := make([]map[string]any, len(c))
		for j, a := range c {
			list[j] = map[string]any{"id": a.ID, "content": a.Content, "single_word": false, "lstrip": false, "rstrip": false,
				"normalized": false, "special": true}
		}
		doc, err := json.Marshal(map[string]any{"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": list,
			"normalizer": nil, "pre_tokenizer": map[string]any{"type": "WhitespaceSplit"}, "post_processor": nil, "decoder": nil,
			"model": map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
				"max_input_chars_per_word": 100, "vocab": vocab}})
		if err != nil {
			t.Fatal(err)
		}
		docs[i] = string(doc)
	}
	arg, err := json.Marshal(docs)
	if err != nil {
		t.Fatal(err)
	}
	var library [][]int
	testutil.RunPythonJSON(t, "the library's added ids", py, `
import json, sys
from tokenizers import Tokenizer
out = []
for doc in json.loads(sys.argv[1]):
    tok = Tokenizer.from_str(doc)
    out.append([tok.token_to_id(a["content"]) for a in json.loads(doc)["added_tokens"]])
print(json.dumps(out))
`, &library, string(arg))
	for i, c := range cases {
		var doc map[string]json.RawMessage
		if err := json.Unmarshal([]byte(docs[i]), &doc); err != nil {
			t.Fatal(err)
		}
		tok, err := Load(writeDoc(t, doc))
		first := -1
		for j, a := range c {
			if library[i][j] != a.ID {
				first = j
				break
			}
		}
		switch {
		case first < 0 && err != nil:
			t.Errorf("%v: the library gives the file's ids, Load refuses: %v", c, err)
		case first < 0:
			for _, a := range c {
				if id, ok := tok.ID(a.Content); !ok || int(id) != a.ID {
					t.Errorf("%v: ID(%q) = %d, %v; the library gives %d", c, a.Content, id, ok, a.ID)
				}
			}
		case err == nil:
			t.Errorf("%v: the library gives %q id %d, not the file's %d, and Load accepts the file", c, c[first].Content, library[i][first], c[first].ID)
		case !strings.Contains(err.Error(), fmt.Sprintf("added token %q has id %d, but the tokenizers library gives it id %d", c[first].Content, c[first].ID, library[i][first])):
			t.Errorf("%v: error %v does not name %q with ids %d and %d", c, err, c[first].Content, c[first].ID, library[i][first])
		}
	}
}
