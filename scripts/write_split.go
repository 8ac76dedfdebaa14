//go:build ignore

// write_split writes the train/test split that examples/bert_classify trains and tests on
// (text.LoadPolarity, then data.Split with --test_size and --seed) as two JSON-lines files,
// train.jsonl and test.jsonl, one {"text": ..., "label": ...} object per line in the split's
// order, so that another framework (scripts/finetune_torch.py) uses exactly the same examples.
// With --model_dir each object also has "ids": the example's token ids from the model's
// tokenizer (bert.LoadTokenizer, [CLS] and [SEP] included, truncated to --max_len, no padding),
// which finetune_torch.py --check_tokens compares with Hugging Face's. Run from the repository
// root:
//
//	go run scripts/write_split.go --data_dir ../shared/data/rt-polarity --seed 42 --out /tmp/split-42
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/text"
	"github.com/goaccel/goaccel/models/bert"
)

func main() {
	dataDir := flag.String("data_dir", "", "folder with exactly one *.pos and one *.neg file")
	seed := flag.Int64("seed", 42, "seed of the split (the example's --seed)")
	testSize := flag.Float64("test_size", 0.1, "fraction held out for testing (the example's --test_size)")
	out := flag.String("out", "", "folder to write train.jsonl and test.jsonl into")
	modelDir := flag.String("model_dir", "", "Hugging Face BERT folder: also write each example's token ids")
	maxLen := flag.Int("max_len", 64, "tokens per sentence with --model_dir, [CLS] and [SEP] included")
	flag.Parse()
	var tok *bert.Tokenizer
	if *modelDir != "" {
		var err error
		if tok, err = bert.LoadTokenizer(*modelDir, *maxLen); err != nil {
			fmt.Fprintln(os.Stderr, "write_split: --model_dir:", err)
			os.Exit(1)
		}
	}
	if err := run(*dataDir, *seed, *testSize, *out, tok); err != nil {
		fmt.Fprintln(os.Stderr, "write_split:", err)
		os.Exit(1)
	}
}

func run(dataDir string, seed int64, testSize float64, out string, tok *bert.Tokenizer) error {
	if dataDir == "" || out == "" {
		return fmt.Errorf("--data_dir and --out are required")
	}
	pos, _ := filepath.Glob(filepath.Join(dataDir, "*.pos"))
	neg, _ := filepath.Glob(filepath.Join(dataDir, "*.neg"))
	if len(pos) != 1 || len(neg) != 1 {
		return fmt.Errorf("--data_dir %s: want exactly one *.pos and one *.neg file, found %d and %d", dataDir, len(pos), len(neg))
	}
	all, err := text.LoadPolarity(pos[0], neg[0])
	if err != nil {
		return err
	}
	train, test, err := data.Split(all, testSize, seed)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, part := range []struct {
		name string
		set  data.Subset[text.Labeled]
	}{{"train.jsonl", train}, {"test.jsonl", test}} {
		if err := writeJSONL(filepath.Join(out, part.name), part.set, tok); err != nil {
			return err
		}
	}
	fmt.Printf("wrote %d train and %d test examples (seed %d) to %s\n", train.Len(), test.Len(), seed, out)
	return nil
}

func writeJSONL(path string, set data.Subset[text.Labeled], tok *bert.Tokenizer) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for i := range set.Len() {
		ex, err := set.Get(i)
		if err != nil {
			return fmt.Errorf("%s: example %d: %w", path, i, err)
		}
		rec := map[string]any{"text": ex.Text, "label": ex.Label}
		if tok != nil {
			rec["ids"] = tok.Encode(ex.Text)
		}
		if err := enc.Encode(rec); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}
