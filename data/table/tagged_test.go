package table

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data/text"
)

// TestLoadTaggedCoNLL: "word tag" lines and CoNLL-2003's four fields, sentences split by
// blank lines, -DOCSTART- skipped; the tag map is the sorted tags; an I- after O is read.
func TestLoadTaggedCoNLL(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "train.conll", "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\nGerman JJ B-NP B-MISC\n\n"+
		"Peter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n")
	b := writeFile(t, dir, "more.txt", "\ufeffin O\nParis I-LOC\n\n\n")
	got, labels, err := LoadTagged(a+","+b, TagSpec{})
	if err != nil {
		t.Fatal(err)
	}
	wantNames := []string{"B-MISC", "B-ORG", "B-PER", "I-LOC", "I-PER", "O"}
	if !slices.Equal(labels.Names(), wantNames) {
		t.Errorf("tag map %q, want %q", labels.Names(), wantNames)
	}
	want := []text.Tagged{{Words: []string{"EU", "rejects", "German"}, Tags: []int{1, 5, 0}},
		{Words: []string{"Peter", "Blackburn"}, Tags: []int{2, 4}}, {Words: []string{"in", "Paris"}, Tags: []int{5, 3}}}
	if !reflect.DeepEqual([]text.Tagged(got), want) {
		t.Errorf("sentences %+v, want %+v", got, want)
	}
}

// TestLoadTaggedJSONLines: tokens and ner_tags lists, tags as strings or as ids of a given
// map (a Hub data set's ClassLabel).
func TestLoadTaggedJSONLines(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "train.jsonl", `{"tokens": ["Go", "is", "from", "Google"], "ner_tags": ["B-MISC", "O", "O", "B-ORG"]}`+"\n")
	got, labels, err := LoadTagged(path, TagSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(labels.Names(), []string{"B-MISC", "B-ORG", "O"}) || !reflect.DeepEqual(got[0].Tags, []int{0, 2, 2, 1}) {
		t.Errorf("map %q, tags %v", labels.Names(), got[0].Tags)
	}
	names, err := NewLabels([]string{"O", "B-PER", "I-PER"})
	if err != nil {
		t.Fatal(err)
	}
	ids := writeFile(t, dir, "ids.jsonl", `{"words": ["Ada", "Lovelace", "wrote"], "tags": [1, 2, 0]}`)
	got, _, err = LoadTagged(ids, TagSpec{WordsColumn: "words", TagsColumn: "tags", Labels: names})
	if err != nil || !reflect.DeepEqual(got[0].Tags, []int{1, 2, 0}) {
		t.Errorf("integer tags with a map: %v, %+v", err, got)
	}
}

// TestLoadTaggedBadInput: every bad line is an error naming the file and the line.
func TestLoadTaggedBadInput(t *testing.T) {
	dir := t.TempDir()
	names, _ := NewLabels([]string{"O", "B-PER"})
	cases := []struct {
		name, file string
		spec       TagSpec
		want       string
	}{
		{"three fields", writeFile(t, dir, "three.conll", "a O\nb NN O\n"), TagSpec{}, `three.conll:2: 3 fields: want "word tag" (2)`},
		{"tag outside the scheme", writeFile(t, dir, "scheme.conll", "a O\nb PER\n"), TagSpec{},
			`scheme.conll:2: tag "PER" is not O, B-TYPE or I-TYPE`},
		{"E- tag", writeFile(t, dir, "e.conll", "a E-PER\n"), TagSpec{}, `e.conll:1: tag "E-PER" is not O`},
		{"length mismatch", writeFile(t, dir, "len.jsonl", `{"tokens": ["a", "b"], "ner_tags": ["O"]}`), TagSpec{},
			`len.jsonl:1: row 1, column "ner_tags": 1 tags for 2 words`},
		{"empty sentence", writeFile(t, dir, "empty.jsonl", `{"tokens": [], "ner_tags": []}`), TagSpec{},
			`empty.jsonl:1: row 1, column "tokens": an empty sentence`},
		{"integer tags without names", writeFile(t, dir, "int.jsonl", `{"tokens": ["a"], "ner_tags": [3]}`), TagSpec{},
			`int.jsonl:1: row 1, column "ner_tags": tag 3 is an integer: give the tag names`},
		{"tag id outside the map", writeFile(t, dir, "out.jsonl", `{"tokens": ["a"], "ner_tags": [2]}`), TagSpec{Labels: names},
			`tag id 2 is outside the 2 tags`},
		{"tag not in the map", writeFile(t, dir, "valid.conll", "a I-LOC\n"), TagSpec{Labels: names},
			`valid.conll:1: tag "I-LOC" of word "a" is not in the tag map`},
		{"not a list", writeFile(t, dir, "str.jsonl", `{"tokens": "a b", "ner_tags": ["O", "O"]}`), TagSpec{},
			`str.jsonl:1: row 1, column "tokens": a b is not a list`},
		{"CSV", writeFile(t, dir, "x.csv", "tokens,ner_tags\n"), TagSpec{}, `x.csv: unknown extension ".csv" for token classification`},
		{"no sentence", writeFile(t, dir, "blank.conll", "\n-DOCSTART- O\n\n"), TagSpec{}, `blank.conll: no sentences`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := LoadTagged(c.file, c.spec)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant one containing %q", err, c.want)
			}
		})
	}
}

// sentenceRow is a Parquet row of token classification, as the Hub's conversions of
// conll2003 store it: list columns.
type sentenceRow struct {
	Tokens []string `parquet:"tokens,list"`
	Tags   []string `parquet:"ner_tags,list"`
}

// TestLoadTaggedParquet: Parquet list columns read as JSON Lines lists, over row groups; an
// empty list and a length mismatch are named by row group and row.
func TestLoadTaggedParquet(t *testing.T) {
	dir := t.TempDir()
	rows := []sentenceRow{{[]string{"Ada", "Lovelace", "wrote"}, []string{"B-PER", "I-PER", "O"}},
		{[]string{"in", "London"}, []string{"O", "B-LOC"}}, {[]string{"x"}, []string{"O"}}}
	path := writeRows(t, dir, "train.parquet", rows, 2)
	got, labels, err := LoadTagged(path, TagSpec{})
	if err != nil {
		t.Fatal(err)
	}
	want := []text.Tagged{{Words: []string{"Ada", "Lovelace", "wrote"}, Tags: []int{1, 2, 3}},
		{Words: []string{"in", "London"}, Tags: []int{3, 0}}, {Words: []string{"x"}, Tags: []int{3}}}
	if !slices.Equal(labels.Names(), []string{"B-LOC", "B-PER", "I-PER", "O"}) || !reflect.DeepEqual([]text.Tagged(got), want) {
		t.Errorf("map %q, sentences %+v; want %+v", labels.Names(), got, want)
	}
	bad := writeRows(t, dir, "bad.parquet", []sentenceRow{{[]string{"a"}, []string{"O"}}, {[]string{"a", "b"}, []string{"O"}}})
	if _, _, err := LoadTagged(bad, TagSpec{}); err == nil || !strings.Contains(err.Error(), `bad.parquet: row group 0, row 2, column "ner_tags": 1 tags for 2 words`) {
		t.Errorf("a length mismatch: %v", err)
	}
	empty := writeRows(t, dir, "empty.parquet", []sentenceRow{{[]string{"a"}, []string{"O"}}, {nil, nil}})
	if _, _, err := LoadTagged(empty, TagSpec{}); err == nil || !strings.Contains(err.Error(), `empty.parquet: row group 0, row 2, column "tokens": an empty sentence`) {
		t.Errorf("an empty sentence: %v", err)
	}
}
