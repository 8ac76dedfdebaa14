package tokenizers

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
)

// truncPair is one input of the truncation and padding tests: a text, or a pair.
type truncPair struct {
	A string  `json:"a"`
	B *string `json:"b"`
}

func truncInputs() []truncPair {
	s := func(x string) *string { return &x }
	return []truncPair{
		{"the movie was great and fun to watch", nil},
		{"the movie was great and fun to watch", s("it was not fun to watch at all")},
		{"the movie was great and fun to watch", s("it was not")},
		{"short", s("the movie was great and fun to watch it was not fun")},
		{"a", s("")},
		{"", nil},
	}
}

// truncFolders are the folders the truncation and padding tests run on: BERT's layout of a
// pair (type id 1 on the second text) and RoBERTa's (two separators).
func truncFolders(t *testing.T) []string {
	return []string{filepath.Join("..", "models", "auto", "testdata", "ner_bert"),
		copyFolder(t, filepath.Join("..", "models", "bert", "testdata", "roberta_bpe"), []string{"tokenizer.json"},
			map[string]any{"tokenizer_class": "RobertaTokenizer"})}
}

// TestTruncationMatchesTransformers: EncodeTruncated gives the rows of transformers'
// tokenizer(a, b, truncation=strategy, max_length, stride, return_overflowing_tokens=True)
// (ids and type ids, in its order), or fails where it raises, for every strategy, strides 0,
// 1 and 3, and lengths from the special tokens up; below them, where transformers does not
// truncate at all, EncodeTruncated refuses.
func TestTruncationMatchesTransformers(t *testing.T) {
	t.Parallel() // most of its time is Python's
	py := testutil.NeedTransformers(t)
	type truncCase struct {
		Strategy string `json:"strategy"`
		MaxLen   int    `json:"max_length"`
		Stride   int    `json:"stride"`
	}
	var cases []truncCase
	for _, strategy := range []string{TruncateLongestFirst, TruncateOnlyFirst, TruncateOnlySecond} {
		for _, maxLen := range []int{3, 4, 5, 6, 10, 14, 40} {
			for _, stride := range []int{0, 1, 3} {
				cases = append(cases, truncCase{strategy, maxLen, stride})
			}
		}
	}
	inputs := truncInputs()
	folders := truncFolders(t)
	// want[folder][case][input]: the rows (ids, then type ids), nil when transformers raises.
	var want [][][]*[2][][]int32
	testutil.RunPythonJSON(t, "transformers' truncation", py, `
import json, sys
from transformers import AutoTokenizer
cases, inputs = json.loads(sys.argv[2]), json.loads(sys.argv[3])
out = []
for d in json.loads(sys.argv[1]):
    tok = AutoTokenizer.from_pretrained(d)
    rows = []
    for c in cases:
        r = []
        for x in inputs:
            try:
                e = tok(x["a"], x["b"], truncation=c["strategy"], max_length=c["max_length"], stride=c["stride"],
                        return_overflowing_tokens=True, return_token_type_ids=True)
                r.append([e["input_ids"], e["token_type_ids"]])
            except BaseException:  # the library's errors, and its panics (pyo3's PanicException)
                r.append(None)
        rows.append(r)
    out.append(rows)
print(json.dumps(out))
`, &want, string(mustMarshal(t, folders)), string(mustMarshal(t, cases)), string(mustMarshal(t, inputs)))
	for fi, dir := range folders {
		tok, err := FromFolder(dir)
		if err != nil {
			t.Fatal(err)
		}
		for ci, c := range cases {
			for ii, in := range inputs {
				var b []string
				if in.B != nil {
					b = []string{*in.B}
				}
				what := fmt.Sprintf("%s: %s max_length %d stride %d on %q %v", filepath.Base(dir), c.Strategy, c.MaxLen, c.Stride, in.A, b)
				got, err := tok.EncodeTruncated(Truncation{MaxLen: c.MaxLen, Strategy: c.Strategy, Stride: c.Stride}, in.A, b...)
				w := want[fi][ci][ii]
				pairAdded := tok.PostProcessor().Added(in.B != nil && *in.B != "")
				if c.MaxLen < pairAdded {
					// transformers then ignores max_length; EncodeTruncated refuses.
					if err == nil {
						t.Errorf("%s: %d rows, want an error (max length below the %d special tokens)", what, len(got), pairAdded)
					}
					continue
				}
				switch {
				case w == nil && err == nil:
					t.Errorf("%s: %d rows, transformers raises", what, len(got))
				case w == nil:
				case err != nil:
					t.Errorf("%s: %v; transformers gives %v", what, err, w[0])
				case len(got) != len(w[0]):
					t.Errorf("%s: %d rows, transformers %d: %v, want %v", what, len(got), len(w[0]), got, w[0])
				default:
					for r := range got {
						if !slices.Equal(got[r].IDs, w[0][r]) || !slices.Equal(got[r].TypeIDs, w[1][r]) {
							t.Errorf("%s: row %d = %v %v, transformers %v %v", what, r, got[r].IDs, got[r].TypeIDs, w[0][r], w[1][r])
						}
					}
				}
			}
		}
	}
}

// TestPaddingMatchesTransformers: Pad of a batch's encodings gives transformers'
// tokenizer(batch, padding=..., max_length, pad_to_multiple_of, padding_side) ids, attention
// mask and type ids.
func TestPaddingMatchesTransformers(t *testing.T) {
	t.Parallel() // most of its time is Python's
	py := testutil.NeedTransformers(t)
	type padCase struct {
		Padding    any    `json:"padding"`
		MaxLen     *int   `json:"max_length"`
		MultipleOf *int   `json:"pad_to_multiple_of"`
		Side       string `json:"padding_side"`
	}
	n := func(v int) *int { return &v }
	cases := []padCase{{true, nil, nil, "right"}, {true, nil, n(8), "right"}, {true, nil, n(8), "left"}, {"max_length", n(24), nil, "right"},
		{"max_length", n(20), n(16), "left"}, {"max_length", n(4), nil, "right"}}
	inputs := truncInputs()
	folders := truncFolders(t)
	var want [][][3][][]int32
	testutil.RunPythonJSON(t, "transformers' padding", py, `
import json, sys
from transformers import AutoTokenizer
cases, inputs = json.loads(sys.argv[2]), json.loads(sys.argv[3])
out = []
for d in json.loads(sys.argv[1]):
    tok = AutoTokenizer.from_pretrained(d)
    rows = []
    for c in cases:
        tok.padding_side = c["padding_side"]
        # An empty second text is no pair (as tokenizer(a, "") takes it; a batch of pairs would not).
        singles = [x["a"] for x in inputs if not x["b"]]
        pairs = [(x["a"], x["b"]) for x in inputs if x["b"]]
        kw = dict(padding=c["padding"], max_length=c["max_length"], pad_to_multiple_of=c["pad_to_multiple_of"], return_token_type_ids=True)
        s = tok(singles, **kw)
        p = tok([a for a, _ in pairs], [b for _, b in pairs], **kw)
        rows.append([s["input_ids"] + p["input_ids"], s["attention_mask"] + p["attention_mask"], s["token_type_ids"] + p["token_type_ids"]])
    out.append(rows)
print(json.dumps(out))
`, &want, string(mustMarshal(t, folders)), string(mustMarshal(t, cases)), string(mustMarshal(t, inputs)))
	for fi, dir := range folders {
		tok, err := FromFolder(dir)
		if err != nil {
			t.Fatal(err)
		}
		padName, ok := tok.SpecialToken("pad_token")
		if !ok {
			padName = "<pad>" // RobertaTokenizer's default; the fixture's tokenizer.json names none
		}
		padID, ok := tok.ID(padName)
		if !ok {
			t.Fatalf("%s: no padding token", dir)
		}
		var singles, pairs []Encoding
		for _, in := range inputs {
			if in.B == nil || *in.B == "" {
				singles = append(singles, tok.Encode(in.A))
			} else {
				e, err := tok.EncodeTruncated(Truncation{MaxLen: 1 << 20}, in.A, *in.B)
				if err != nil {
					t.Fatal(err)
				}
				pairs = append(pairs, e[0])
			}
		}
		for ci, c := range cases {
			p := Padding{Left: c.Side == "left", ID: padID}
			if c.MaxLen != nil && c.Padding == "max_length" {
				p.Length = *c.MaxLen
			}
			if c.MultipleOf != nil {
				p.MultipleOf = *c.MultipleOf
			}
			got := append(Pad(singles, p), Pad(pairs, p)...)
			w := want[fi][ci]
			for r := range got {
				if !slices.Equal(got[r].IDs, w[0][r]) || !slices.Equal(got[r].AttentionMask, w[1][r]) || !slices.Equal(got[r].TypeIDs, w[2][r]) {
					t.Errorf("%s %+v: row %d = %v %v %v, transformers %v %v %v", filepath.Base(dir), c, r,
						got[r].IDs, got[r].AttentionMask, got[r].TypeIDs, w[0][r], w[1][r], w[2][r])
				}
			}
		}
	}
}
