package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/hub/hubtest"
)

// TestModelAndDatasetByHubID: --model_name_or_path org/name and --dataset_name org/name from
// a Hub (the stand-in): the first run downloads the model's files and the data set's splits,
// the second runs offline (HF_HUB_OFFLINE=1) from the cache with no request.
func TestModelAndDatasetByHubID(t *testing.T) {
	s := hubtest.NewServer()
	defer s.Close()
	cache := s.Setenv(t)
	_, folder := modernBERTCache(t)
	if _, err := s.Folder("model", "org/tiny-modernbert", folder); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	all := shuffledSample()
	writeCSV(t, filepath.Join(dir, "train.csv"), all[:700], [2]string{"negative", "positive"})
	writeCSV(t, filepath.Join(dir, "validation.csv"), all[700:], [2]string{"negative", "positive"})
	files := map[string][]byte{"README.md": []byte("# polarity\n")}
	for _, n := range []string{"train.csv", "validation.csv"} {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		files["data/"+n] = b
	}
	s.Commit("dataset", "org/polarity", files)

	for i, offline := range []string{"", "1"} {
		t.Setenv("HF_HUB_OFFLINE", offline)
		before := len(s.Requests())
		o := defaultOptions()
		o.Backend, o.ModelDir, o.DatasetName, o.OutputDir = "go", "org/tiny-modernbert", "org/polarity", filepath.Join(dir, "run", string(rune('a'+i)))
		o.Epochs, o.MaxSteps, o.BatchSize, o.MaxLen, o.Workers = 1, 2, 8, 24, 0
		var out bytes.Buffer
		res, _, err := run(o, &out)
		if err != nil {
			t.Fatalf("offline=%q: %v\n%s", offline, err, out.String())
		}
		if res.Steps != 2 || !strings.Contains(out.String(), "training on 700 sentences, testing on 100") {
			t.Errorf("offline=%q: %d steps:\n%s", offline, res.Steps, out.String())
		}
		if n := len(s.Requests()) - before; (offline == "1") != (n == 0) {
			t.Errorf("offline=%q: %d requests to the Hub", offline, n)
		}
	}
	if _, err := os.Stat(filepath.Join(cache, "datasets--org--polarity", "refs", "main")); err != nil {
		t.Errorf("the data set's ref: %v", err)
	}
}
