package table

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/hub/hubtest"
)

func hubDatasets(t *testing.T) (*hubtest.Server, string) {
	t.Helper()
	s := hubtest.NewServer()
	t.Cleanup(s.Close)
	return s, s.Setenv(t)
}

// rel is each split's files relative to their snapshot folder, "split:a,b split:c".
func rel(t *testing.T, sp Splits) string {
	t.Helper()
	var out []string
	for _, split := range slices.Sorted(func(yield func(string) bool) {
		for k := range sp {
			if !yield(k) {
				return
			}
		}
	}) {
		var names []string
		for _, p := range sp[split] {
			i := strings.Index(p, "/snapshots/")
			names = append(names, filepath.ToSlash(p[i+len("/snapshots/")+41:]))
		}
		slices.Sort(names)
		out = append(out, split+":"+strings.Join(names, ","))
	}
	return strings.Join(out, " ")
}

const csvRows = "sentence,label\na fine film,pos\na dull film,neg\n"

// TestFromHubConventions: datasets' conventions find the splits: Parquet shards under data/,
// files named by split, folders named by split, and everything as train.
func TestFromHubConventions(t *testing.T) {
	s, _ := hubDatasets(t)
	ctx := context.Background()
	for _, c := range []struct {
		files []string
		want  string
	}{
		{[]string{"README.md", "data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet", "data/validation-00000-of-00001.parquet", ".gitattributes"},
			"train:data/train-00000-of-00002.parquet,data/train-00001-of-00002.parquet validation:data/validation-00000-of-00001.parquet"},
		{[]string{"train.csv", "dev.csv", "test.csv", "notes.txt"}, "test:test.csv train:train.csv validation:dev.csv"},
		{[]string{"data/training/a.jsonl", "data/training/b.jsonl", "data/eval/c.jsonl"}, "test:data/eval/c.jsonl train:data/training/a.jsonl,data/training/b.jsonl"},
		{[]string{"my_train_split.tsv", "my-valid-split.tsv"}, "train:my_train_split.tsv validation:my-valid-split.tsv"},
		{[]string{"reviews.jsonl", "more/reviews2.jsonl"}, "train:more/reviews2.jsonl,reviews.jsonl"},
	} {
		files := map[string][]byte{}
		for _, f := range c.files {
			files[f] = []byte(csvRows)
		}
		s.Commit("dataset", "org/d", files)
		sp, err := FromHub(ctx, HubDataset{Name: "org/d"})
		if err != nil {
			t.Fatalf("%v: %v", c.files, err)
		}
		if got := rel(t, sp); got != c.want {
			t.Errorf("%v: %s, want %s", c.files, got, c.want)
		}
	}
}

// TestFromHubReadmeConfigs: the README's configs decide (data_files by split, a pattern
// list, data_dir, the default flag, a config by name); a config it lacks and a pattern that
// matches nothing are errors naming what there is.
func TestFromHubReadmeConfigs(t *testing.T) {
	s, _ := hubDatasets(t)
	readme := `---
license: mit
configs:
- config_name: plain
  data_files:
  - split: train
    path: "plain/tr_*.csv"
  - split: test
    path:
    - plain/te.csv
  default: true
- config_name: other
  data_dir: other
  data_files: [x.csv]   # one pattern: train
dataset_info:
  features:
  - name: sentence
    dtype: string
---
# A card
`
	s.Commit("dataset", "org/cards", map[string][]byte{"README.md": []byte(readme), "plain/tr_1.csv": []byte(csvRows),
		"plain/tr_2.csv": []byte(csvRows), "plain/te.csv": []byte(csvRows), "other/x.csv": []byte(csvRows), "train.csv": []byte(csvRows)})
	ctx := context.Background()
	sp, err := FromHub(ctx, HubDataset{Name: "org/cards"})
	if err != nil {
		t.Fatal(err)
	}
	if got := rel(t, sp); got != "test:plain/te.csv train:plain/tr_1.csv,plain/tr_2.csv" {
		t.Errorf("default config: %s", got)
	}
	sp, err = FromHub(ctx, HubDataset{Name: "org/cards", Config: "other"})
	if err != nil || rel(t, sp) != "train:other/x.csv" {
		t.Errorf("config other: %v %v", sp, err)
	}
	if _, err := FromHub(ctx, HubDataset{Name: "org/cards", Config: "nope"}); err == nil || !strings.Contains(err.Error(), "plain, other") {
		t.Errorf("a config the card lacks: %v", err)
	}
	// The rows read through Open.
	sp, _ = FromHub(ctx, HubDataset{Name: "org/cards"})
	tb, err := Open(Spec{TextColumns: []string{"sentence"}, LabelColumn: "label"}, sp["train"]...)
	if err != nil || tb.Labels().Len() != 2 {
		t.Errorf("reading the train split: %v", err)
	}
	s.Commit("dataset", "org/cards", map[string][]byte{"README.md": []byte(strings.Replace(readme, "plain/tr_*.csv", "plain/none_*.csv", 1)), "plain/te.csv": []byte(csvRows)})
	if _, err := FromHub(ctx, HubDataset{Name: "org/cards"}); err == nil || !strings.Contains(err.Error(), "plain/none_*.csv") || !strings.Contains(err.Error(), "plain/te.csv") {
		t.Errorf("a pattern that matches nothing: %v", err)
	}
}

// TestFromHubScriptOnlyReadsTheParquetConversion: a repository holding only a loading script is
// read at refs/convert/parquet, {config}/{split}/NNNN.parquet; offline, the same splits come
// from the cache with no request.
func TestFromHubScriptOnlyReadsTheParquetConversion(t *testing.T) {
	s, _ := hubDatasets(t)
	conv := s.Commit("dataset", "org/old", map[string][]byte{"default/train/0000.parquet": []byte("PAR1"),
		"default/train/0001.parquet": []byte("PAR1"), "default/test/0000.parquet": []byte("PAR1"), "other/train/0000.parquet": []byte("PAR1")})
	s.Ref("dataset", "org/old", "refs/convert/parquet", conv)
	s.Commit("dataset", "org/old", map[string][]byte{"old.py": []byte("import datasets"), "README.md": []byte("# old\n")})
	ctx := context.Background()
	sp, err := FromHub(ctx, HubDataset{Name: "org/old"})
	if err != nil {
		t.Fatal(err)
	}
	if got := rel(t, sp); got != "test:default/test/0000.parquet train:default/train/0000.parquet,default/train/0001.parquet" {
		t.Errorf("parquet conversion: %s", got)
	}
	t.Setenv("HF_HUB_OFFLINE", "1")
	n := len(s.Requests())
	again, err := FromHub(ctx, HubDataset{Name: "org/old"})
	if err != nil || rel(t, again) != rel(t, sp) || len(s.Requests()) != n {
		t.Errorf("offline: %v %v, %d requests", again, err, len(s.Requests())-n)
	}
	t.Setenv("HF_HUB_OFFLINE", "")
	s.Commit("dataset", "org/empty", map[string][]byte{"README.md": []byte("# nothing\n"), "image.png": []byte("x")})
	if _, err := FromHub(ctx, HubDataset{Name: "org/empty"}); err == nil || !strings.Contains(err.Error(), "image.png") {
		t.Errorf("no data files: %v", err)
	}
}
