//go:build ignore

// write_tasks writes the synthetic data of the three task shapes beyond single-label
// classification, as the examples' tests make them, split into training and validation
// files so that goaccel (--train_file, --validation_file) and another framework
// (scripts/compare_tasks_torch.py) train and evaluate on exactly the same examples:
//
//   - scores_train.csv, scores_valid.csv: regression (examples/bert_classify's
//     writeRegression): the built-in sentences shuffled with PCG(1, 2), column "score" 1.0
//     for a positive sentence and -1.0 for a negative one, plus 0.5 above 8 words;
//   - tags_train.jsonl, tags_valid.jsonl: multi-label (writeMultiLabel): column "tags" a list,
//     "positive" or "negative", and "long" above 8 words;
//   - ner_train.conll, ner_valid.conll: token classification (examples/ner's writeCoNLL):
//     sample.Entities(--ner_train, 1) and sample.Entities(--ner_valid, 2), "word tag" lines.
//
// The sentences are split with data.Split(--test_size, --seed), the split the programs make
// themselves without --validation_file. Run from the repository root:
//
//	go run scripts/write_tasks.go --out /tmp/tasks
package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/text"
	"github.com/goaccel/goaccel/models/bert/sample"
)

func main() {
	out := flag.String("out", "", "folder to write the files into")
	seed := flag.Int64("seed", 42, "seed of the train/validation split of the sentences")
	testSize := flag.Float64("test_size", 0.2, "fraction of the sentences held out for validation")
	nerTrain := flag.Int("ner_train", 600, "training sentences of the entity task (seed 1)")
	nerValid := flag.Int("ner_valid", 150, "validation sentences of the entity task (seed 2)")
	flag.Parse()
	if err := run(*out, *seed, *testSize, *nerTrain, *nerValid); err != nil {
		fmt.Fprintln(os.Stderr, "write_tasks:", err)
		os.Exit(1)
	}
}

func run(out string, seed int64, testSize float64, nerTrain, nerValid int) error {
	if out == "" {
		return fmt.Errorf("--out is required")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	all := sample.Polarity() // the tests' shuffledSample
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	train, valid, err := data.Split[text.Labeled](all, testSize, seed)
	if err != nil {
		return err
	}
	for _, part := range []struct {
		name string
		set  data.Subset[text.Labeled]
	}{{"train", train}, {"valid", valid}} {
		var examples []text.Labeled
		for i := range part.set.Len() {
			ex, err := part.set.Get(i)
			if err != nil {
				return err
			}
			examples = append(examples, ex)
		}
		if err := writeRegression(filepath.Join(out, "scores_"+part.name+".csv"), examples); err != nil {
			return err
		}
		if err := writeMultiLabel(filepath.Join(out, "tags_"+part.name+".jsonl"), examples); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name string
		n    int
		seed uint64
	}{{"ner_train.conll", nerTrain, 1}, {"ner_valid.conll", nerValid, 2}} {
		if err := writeCoNLL(filepath.Join(out, f.name), f.n, f.seed); err != nil {
			return err
		}
	}
	fmt.Printf("wrote %d training and %d validation sentences (seed %d), %d and %d entity sentences to %s\n",
		train.Len(), valid.Len(), seed, nerTrain, nerValid, out)
	return nil
}

// long is the second synthetic feature: a sentence of more than 8 words.
func long(s string) bool { return len(strings.Fields(s)) > 8 }

func writeRegression(path string, examples []text.Labeled) error {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"sentence", "score"})
	for _, ex := range examples {
		score := 2*float64(ex.Label) - 1
		if long(ex.Text) {
			score += 0.5
		}
		_ = w.Write([]string{ex.Text, strconv.FormatFloat(score, 'f', 1, 64)})
	}
	if w.Flush(); w.Error() != nil {
		return w.Error()
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func writeMultiLabel(path string, examples []text.Labeled) error {
	var b bytes.Buffer
	for _, ex := range examples {
		labels := []string{[]string{"negative", "positive"}[ex.Label]}
		if long(ex.Text) {
			labels = append(labels, "long")
		}
		line, err := json.Marshal(map[string]any{"sentence": ex.Text, "tags": labels})
		if err != nil {
			return err
		}
		b.Write(append(line, '\n'))
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func writeCoNLL(path string, n int, seed uint64) error {
	var b strings.Builder
	b.WriteString("-DOCSTART- O\n\n")
	tags := sample.EntityTags()
	for _, s := range sample.Entities(n, seed) {
		for i, w := range s.Words {
			b.WriteString(w + " " + tags[s.Tags[i]] + "\n")
		}
		b.WriteString("\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
