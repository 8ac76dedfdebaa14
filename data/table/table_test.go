package table

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/text"
	"github.com/gomlx/gomlx/core/tensors"
)

// TestCSV reads quoted fields (delimiters, quotes and line breaks inside), a byte order mark,
// CRLF line ends, two text columns joined with the delimiter and string labels numbered in
// sorted order; and a .tsv and a ';'-separated file with the same content.
func TestCSV(t *testing.T) {
	dir := t.TempDir()
	csv := writeFile(t, dir, "train.csv", "\ufeffid,premise,hypothesis,label\r\n"+
		"1,\"A man, a plan\",\"He said \"\"hi\"\"\",pos\r\n"+
		"2,plain,\"two\nlines\",neg\r\n"+
		"3,café,ünïcode,neutral\r\n")
	want := []text.Labeled{ex("A man, a plan | He said \"hi\"", 2), ex("plain | two\nlines", 0), ex("café | ünïcode", 1)}
	spec := Spec{TextColumns: []string{"premise", "hypothesis"}, LabelColumn: "label", TextDelimiter: " | "}
	tb, got := readAll(t, spec, csv)
	if !equalExamples(got, want) {
		t.Errorf("examples %+v, want %+v", got, want)
	}
	if names := tb.Labels().Names(); !slices.Equal(names, []string{"neg", "neutral", "pos"}) {
		t.Errorf("label map %q, want neg, neutral, pos (sorted)", names)
	}
	tsv := writeFile(t, dir, "train.tsv", "id\tpremise\thypothesis\tlabel\n1\tA man, a plan\t\"He said \"\"hi\"\"\"\tpos\n"+
		"2\tplain\t\"two\nlines\"\tneg\n3\tcafé\tünïcode\tneutral\n")
	if _, got := readAll(t, spec, tsv); !equalExamples(got, want) {
		t.Errorf(".tsv: examples %+v, want %+v", got, want)
	}
	semi := writeFile(t, dir, "semi.csv", "premise;hypothesis;label\n\"A man, a plan\";He said \"\"hi\"\";pos\n")
	spec.Comma = ';'
	if _, err := Open(spec, semi); err == nil || !strings.Contains(err.Error(), `bare "`) {
		t.Errorf("a bare quote: %v, want csv's error", err)
	}
	semi = writeFile(t, dir, "semi.csv", "premise;hypothesis;label\n\"A man, a plan\";\"He said \"\"hi\"\"\";pos\n")
	if _, got := readAll(t, spec, semi); len(got) != 1 || !reflect.DeepEqual(got[0], text.Labeled{Text: "A man, a plan | He said \"hi\"", Label: 0}) {
		t.Errorf("';'-separated: %+v", got)
	}
}

// TestJSONLines reads objects with integer labels (their own ids when 0..N-1), skipping blank
// lines; a text column joined with the default delimiter, a space.
func TestJSONLines(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "train.jsonl", `{"a": "first", "b": "x", "label": 1, "other": [1, 2]}`+"\n\n"+
		`{"label": 0, "a": "sec\"ond", "b": "y\u00e9"}`+"\r\n"+`{"a":"third","b":"z","label":2}`)
	tb, got := readAll(t, Spec{TextColumns: []string{"a", "b"}, LabelColumn: "label"}, path)
	want := []text.Labeled{ex("first x", 1), ex("sec\"ond yé", 0), ex("third z", 2)}
	if !equalExamples(got, want) || !slices.Equal(tb.Labels().Names(), []string{"0", "1", "2"}) {
		t.Errorf("examples %+v, labels %q; want %+v and 0, 1, 2", got, tb.Labels().Names(), want)
	}
}

// TestParquetShards reads a Parquet file written here, in several row groups, and two shards
// of it as one dataset; the same rows as CSV give the same examples.
func TestParquetShards(t *testing.T) {
	dir := t.TempDir()
	var rows []row
	var csv strings.Builder
	csv.WriteString("premise,hypothesis,label,label_name\n")
	for i := range 25 {
		r := row{Premise: fmt.Sprintf("premise %d", i), Hypothesis: fmt.Sprintf("hypothesis, %d", i), Label: int64(i % 3),
			Name: []string{"entailment", "neutral", "contradiction"}[i%3]}
		rows = append(rows, r)
		fmt.Fprintf(&csv, "%s,\"%s\",%d,%s\n", r.Premise, r.Hypothesis, r.Label, r.Name)
	}
	whole := writeParquet(t, dir, "all.parquet", rows, 7) // row groups of 7, 7, 7, 4
	shards := []string{writeParquet(t, dir, "train-00000-of-00002.parquet", rows[:10], 4),
		writeParquet(t, dir, "train-00001-of-00002.parquet", rows[10:], 100)}
	csvPath := writeFile(t, dir, "all.csv", csv.String())
	for _, label := range []string{"label", "label_name"} {
		spec := Spec{TextColumns: []string{"premise", "hypothesis"}, LabelColumn: label}
		tb, fromCSV := readAll(t, spec, csvPath)
		if len(fromCSV) != 25 || !reflect.DeepEqual(fromCSV[4], text.Labeled{Text: "premise 4 hypothesis, 4", Label: tb.Labels().ids[rows[4].Name]}) &&
			label == "label_name" {
			t.Fatalf("CSV: %+v", fromCSV)
		}
		_, fromParquet := readAll(t, spec, whole)
		globbed, err := Glob(filepath.Join(dir, "train-*-of-00002.parquet"))
		if err != nil || !slices.Equal(globbed, shards) {
			t.Fatalf("Glob: %v, %v; want %v", globbed, err, shards)
		}
		_, fromShards := readAll(t, spec, globbed...)
		if !equalExamples(fromParquet, fromCSV) || !equalExamples(fromShards, fromCSV) {
			t.Errorf("label %s: Parquet %+v\nshards %+v\nCSV %+v", label, fromParquet, fromShards, fromCSV)
		}
		wantNames := []string{"0", "1", "2"}
		if label == "label_name" {
			wantNames = []string{"contradiction", "entailment", "neutral"}
		}
		if !slices.Equal(tb.Labels().Names(), wantNames) {
			t.Errorf("label map %q, want %q", tb.Labels().Names(), wantNames)
		}
	}
}

// TestLabelOrder: integer labels sort as numbers, the others by code point; a validation
// file takes the training map, and a label it lacks is an error naming file, row and column.
func TestLabelOrder(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		labels []string
		want   []string
	}{
		{[]string{"10", "2", "1", "2"}, []string{"1", "2", "10"}},
		{[]string{"-3", "0", "7"}, []string{"-3", "0", "7"}},
		{[]string{"b", "B", "a", "é", "10", "9"}, []string{"10", "9", "B", "a", "b", "é"}},
		{[]string{"01", "1"}, []string{"01", "1"}}, // "01" is not written as an integer: both are strings
		{[]string{"true", "false"}, []string{"false", "true"}},
	} {
		var sb strings.Builder
		sb.WriteString("text,label\n")
		for _, l := range c.labels {
			fmt.Fprintf(&sb, "t,%s\n", l)
		}
		tb, _ := readAll(t, Spec{TextColumns: []string{"text"}, LabelColumn: "label"}, writeFile(t, dir, "l.csv", sb.String()))
		if got := tb.Labels().Names(); !slices.Equal(got, c.want) {
			t.Errorf("labels %q: map %q, want %q", c.labels, got, c.want)
		}
	}
	train, _ := readAll(t, Spec{TextColumns: []string{"text"}, LabelColumn: "label"},
		writeFile(t, dir, "train.jsonl", `{"text": "a", "label": 2}`+"\n"+`{"text": "b", "label": 10}`+"\n"))
	valid := writeFile(t, dir, "valid.csv", "text,label\nx,10\ny,2\nz,3\n")
	spec := Spec{TextColumns: []string{"text"}, LabelColumn: "label", Labels: train.Labels()}
	tb, err := Open(spec, valid)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for ex, err := range tb.All() {
		if err != nil {
			want := valid + `:4: row 3, column "label": label "3" is not in the label map (0="2" 1="10")`
			if err.Error() != want {
				t.Errorf("error %q\n want %q", err, want)
			}
			break
		}
		ids = append(ids, ex.Label)
	}
	if !slices.Equal(ids, []int{1, 0}) {
		t.Errorf("validation ids %v, want [1 0] (the training map)", ids)
	}
}

// TestBadInput: each kind of bad input is an error naming the file, the row (or row group)
// and the column, as the package doc promises.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	text1 := Spec{TextColumns: []string{"text"}, LabelColumn: "label"}
	good := []row{{Premise: "p1", Hypothesis: "h1", Label: 0, Name: "a"}, {Premise: "p2", Hypothesis: "h2", Label: 1, Name: "b"},
		{Premise: "p3", Hypothesis: "h3", Label: 1, Name: "b"}}
	pq := writeParquet(t, dir, "good.parquet", good, 2)
	raw, err := os.ReadFile(pq)
	if err != nil {
		t.Fatal(err)
	}
	truncated := writeFile(t, dir, "truncated.parquet", string(raw[:len(raw)/2]))
	long := slices.Clone(raw)
	long[len(long)-5] ^= 0xff // the footer length's high byte: parquet-go would allocate ~4 GiB
	longFooter := writeFile(t, dir, "footer.parquet", string(long))
	note := "  "
	blank := writeParquet(t, dir, "blank.parquet", append(slices.Clone(good), row{Premise: "p4", Hypothesis: "h4", Note: &note}), 2)
	tagged := writeRows(t, dir, "tagged.parquet", []tagRow{{"p", []string{"a", "b"}, 0.5}})
	pqSpec := Spec{TextColumns: []string{"premise", "note"}, LabelColumn: "label"}
	cases := []struct {
		name  string
		spec  Spec
		files []string
		want  string
	}{
		{"missing CSV column", Spec{TextColumns: []string{"txt"}, LabelColumn: "label"},
			[]string{writeFile(t, dir, "a.csv", "text,label\nx,1\n")}, `a.csv: no column "txt" (the file has 2: "text", "label")`},
		{"missing JSON column", text1, []string{writeFile(t, dir, "a.jsonl", `{"sentence": "x", "label": 1}`)},
			`a.jsonl: no column "text" (the file has 2: "label", "sentence")`},
		{"JSON row without the column", text1,
			[]string{writeFile(t, dir, "b.jsonl", `{"text": "x", "label": 1}`+"\n\n"+`{"txt": "y", "label": 0}`)},
			`b.jsonl:3: row 2, column "text": the row lacks this column (it has: "label", "txt")`},
		{"missing Parquet column", Spec{TextColumns: []string{"sentence"}, LabelColumn: "label"}, []string{pq},
			`good.parquet: no column "sentence" (the file has 5: "premise", "hypothesis", "label", "label_name", "note")`},
		{"CSV row with a field too many", text1, []string{writeFile(t, dir, "c.csv", "text,label\nx,1\n\"y\",2,3\n")},
			`c.csv:3: row 2 has 3 fields, the header has 2 ("text", "label")`},
		{"CSV row with a field too few", text1, []string{writeFile(t, dir, "d.csv", "text,label\nx,1\n\"y\nz\"\n")},
			`d.csv:3: row 2 has 1 fields, the header has 2`},
		{"empty CSV text", text1, []string{writeFile(t, dir, "e.csv", "text,label\nx,1\n  ,0\n")},
			`e.csv:3: row 2, column "text": empty text`},
		{"empty JSON text", text1, []string{writeFile(t, dir, "e.jsonl", `{"text": "x", "label": 1}`+"\n"+`{"text": "", "label": 1}`)},
			`e.jsonl:2: row 2, column "text": empty text`},
		{"null JSON text", text1, []string{writeFile(t, dir, "n.jsonl", `{"text": null, "label": 1}`)},
			`n.jsonl:1: row 1, column "text": the text is null`},
		{"number as text", text1, []string{writeFile(t, dir, "m.jsonl", `{"text": 12, "label": 1}`)},
			`m.jsonl:1: row 1, column "text": 12 is not a text (a string)`},
		{"float label, single-label", Spec{TextColumns: []string{"text"}, LabelColumn: "label", Problem: SingleLabel},
			[]string{writeFile(t, dir, "f.jsonl", `{"text": "x", "label": 0.5}`)},
			`f.jsonl:1: row 1, column "label": label 0.5 is not an integer, a string or a boolean`},
		{"empty CSV label", text1, []string{writeFile(t, dir, "l.csv", "text,label\nx,\n")},
			`l.csv:2: row 1, column "label": empty label`},
		{"JSON array", text1, []string{writeFile(t, dir, "arr.json", `[{"text": "x", "label": 1}]`)},
			`arr.json:1: a JSON array: want JSON Lines`},
		{"not an object", text1, []string{writeFile(t, dir, "o.jsonl", `{"text": "x", "label": 1}`+"\n"+`{"text": "x",`)},
			`o.jsonl:2: row 2 is not a JSON object`},
		{"invalid UTF-8", text1, []string{writeFile(t, dir, "u.csv", "text,label\ncaf\xe9,1\n")},
			`u.csv:2: row 1, column "text": the text is not valid UTF-8`},
		{"unclosed quote", Spec{TextColumns: []string{"text"}, LabelColumn: "label", MaxRowBytes: 1000},
			[]string{writeFile(t, dir, "q.csv", "text,label\nx,1\n\"open,1\n"+strings.Repeat("y,0\n", 2000))},
			`q.csv:3: row 2 is longer than 1000 bytes (a quote left open?)`},
		{"unknown extension", text1, []string{writeFile(t, dir, "x.txt", "text,label\n")}, `x.txt: unknown extension ".txt"`},
		{"empty CSV", text1, []string{writeFile(t, dir, "empty.csv", "")}, `empty.csv: empty file: want a header row`},
		{"truncated Parquet", pqSpec, []string{truncated}, `truncated.parquet: not a readable Parquet file (truncated or corrupt?)`},
		{"footer length past the end", pqSpec, []string{longFooter}, `footer.parquet: not a readable Parquet file ` +
			`(truncated or corrupt?): its footer would be`},
		{"blank Parquet text", pqSpec, []string{blank}, `blank.parquet: row group 0, row 1, column "note": the text is null`},
		{"null Parquet label", Spec{TextColumns: []string{"premise"}, LabelColumn: "note"}, []string{blank},
			`blank.parquet: row group 0, row 1, column "note": the label is null`},
		{"float Parquet label, single-label", Spec{TextColumns: []string{"premise"}, LabelColumn: "score", Problem: SingleLabel},
			[]string{tagged}, `tagged.parquet: row group 0, row 1, column "score": label 0.5 is not an integer, a string or a boolean`},
		{"second file bad", text1, []string{writeFile(t, dir, "ok.csv", "text,label\nx,1\n"), writeFile(t, dir, "bad.csv", "text\nx\n")},
			`bad.csv: no column "label" (the file has 1: "text")`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := openAndRead(c.spec, c.files...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v\nwant one containing %q", err, c.want)
			}
			t.Logf("error as expected: %v", err)
		})
	}
}

// openAndRead opens files and reads one pass; it returns the first error.
func openAndRead(spec Spec, files ...string) error {
	tb, err := Open(spec, files...)
	if err != nil {
		return err
	}
	for _, err := range tb.All() {
		if err != nil {
			return err
		}
	}
	return nil
}

func ex(s string, label int) text.Labeled { return text.Labeled{Text: s, Label: label} }

// TestLabelsJSON: a map is saved as its names in id order and read back the same; a list with
// a name twice is refused.
func TestLabelsJSON(t *testing.T) {
	l, err := NewLabels([]string{"neg", "pos", "10"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(l)
	if err != nil || string(b) != `["neg","pos","10"]` {
		t.Fatalf("json %s, %v", b, err)
	}
	var back Labels
	if err := json.Unmarshal(b, &back); err != nil || !slices.Equal(back.Names(), l.Names()) {
		t.Fatalf("read back %v, %v", back.Names(), err)
	}
	if id, ok := back.ID("10"); !ok || id != 2 || l.String() != `0="neg" 1="pos" 2="10"` {
		t.Errorf("ID(10) = %d, %v; String %s", id, ok, l)
	}
	if err := json.Unmarshal([]byte(`["a","b","a"]`), &back); err == nil || !strings.Contains(err.Error(), `label "a" is both 0 and 2`) {
		t.Errorf("a name twice: %v", err)
	}
}

// TestStreamLoaderServesTable: a Table of two shards in two formats is a data.Stream that
// data.NewStreamLoader deals over 2 replicas, each example exactly once, in file order.
func TestStreamLoaderServesTable(t *testing.T) {
	dir := t.TempDir()
	var rows []row
	for i := range 13 {
		rows = append(rows, row{Premise: fmt.Sprintf("p%d", i), Hypothesis: "h", Label: int64(i % 2), Name: "x"})
	}
	pq := writeParquet(t, dir, "a.parquet", rows[:9], 4)
	var sb strings.Builder
	sb.WriteString(`{"premise": "p9", "label": 1}` + "\n")
	for i := 10; i < 13; i++ {
		fmt.Fprintf(&sb, `{"premise": "p%d", "label": %d}`+"\n", i, i%2)
	}
	tb, err := Open(Spec{TextColumns: []string{"premise"}, LabelColumn: "label"}, pq, writeFile(t, dir, "b.jsonl", sb.String()))
	if err != nil {
		t.Fatal(err)
	}
	collate := func(ex []text.Labeled) ([]*tensors.Tensor, *tensors.Tensor, error) {
		labels := make([]int32, len(ex))
		for i, e := range ex {
			labels[i] = int32(e.Label)
		}
		return []*tensors.Tensor{tensors.FromValue(labels)}, tensors.FromValue(labels), nil
	}
	l, err := data.NewStreamLoader[text.Labeled](tb, data.LoaderConfig[text.Labeled]{BatchSize: 3, Collate: collate})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Distribute(2, []int{0, 1}); err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for gb, err := range l.Epoch() {
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range gb.Shards {
			for k, p := range b.Positions {
				if b.Real[k] {
					seen[p]++
				}
			}
		}
	}
	if len(seen) != 13 {
		t.Errorf("positions seen %v, want 0..12 once each", seen)
	}
	for p, n := range seen {
		if n != 1 || p < 0 || p >= 13 {
			t.Errorf("position %d seen %d times", p, n)
		}
	}
}
