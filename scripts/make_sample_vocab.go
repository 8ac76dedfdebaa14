//go:build ignore

// make_sample_vocab writes models/bert/sample/vocab.txt, the vocabulary of the tiny
// randomly initialised BERT used by `make run`, from the built-in sentiment sentences
// (sample.pos and sample.neg) with bert.BuildVocab. Run from the repository root:
//
//	go run scripts/make_sample_vocab.go
//
// models/bert's tests check that the committed file equals what this produces.
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/goaccel/goaccel/models/bert"
)

func main() {
	dir := filepath.Join("models", "bert", "sample")
	var texts []string
	for _, name := range []string{"sample.pos", "sample.neg"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			fmt.Fprintln(os.Stderr, "make_sample_vocab:", err)
			os.Exit(1)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" {
				texts = append(texts, line)
			}
		}
		_ = f.Close()
		if err := sc.Err(); err != nil {
			fmt.Fprintln(os.Stderr, "make_sample_vocab:", err)
			os.Exit(1)
		}
	}
	vocab := bert.BuildVocab(texts, bert.DefaultVocabWords)
	tok, err := bert.NewTokenizerFromVocab(vocab, 2)
	if err == nil {
		err = tok.WriteVocab(filepath.Join(dir, "vocab.txt"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "make_sample_vocab:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s: %d tokens from %d sentences\n", filepath.Join(dir, "vocab.txt"), len(vocab), len(texts))
}
