// Package sample is the built-in sentiment data of goaccel's examples and tests: 800 short
// lower-case movie-review sentences written for this project (scripts/make_sample_data.py),
// half positive, half negative, and the vocabulary of a tiny random BERT that covers them
// (scripts/make_sample_vocab.go), so that a program trains a real classifier with nothing to
// download:
//
//	all := sample.Polarity()
//	clf, tok, err := sample.TinyClassifier(model.NewStore(), 64)
package sample

import (
	"embed"
	"fmt"
	"strings"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/text"
	"github.com/goaccel/goaccel/models/bert"
	"github.com/gomlx/gomlx/ml/model"
)

//go:embed sample.pos sample.neg vocab.txt
var files embed.FS

// Polarity returns the sentences as text.LoadPolarity reads a pair of files: the positive
// ones (label 1) in file order, then the negative ones (label 0).
func Polarity() data.Slice[text.Labeled] {
	var all data.Slice[text.Labeled]
	for _, f := range []struct {
		name  string
		label int
	}{{"sample.pos", 1}, {"sample.neg", 0}} {
		for _, line := range lines(f.name) {
			all = append(all, text.Labeled{Text: strings.TrimSpace(line), Label: f.label})
		}
	}
	return all
}

// Vocab is the tiny BERT's vocabulary: one token per id.
func Vocab() []string { return lines("vocab.txt") }

// TinyClassifier builds a randomly initialised bert.TinyConfig classifier with two labels
// over Vocab, its variables in store, and its tokenizer of maxLen tokens ([CLS] and [SEP]
// included).
func TinyClassifier(store *model.Store, maxLen int) (*bert.Classifier, *bert.Tokenizer, error) {
	tok, err := bert.NewTokenizerFromVocab(Vocab(), maxLen)
	if err != nil {
		return nil, nil, fmt.Errorf("sample: TinyClassifier: %w", err)
	}
	cfg := bert.TinyConfig(tok.VocabSize())
	if err := cfg.CheckMaxLen(maxLen); err != nil {
		return nil, nil, fmt.Errorf("sample: TinyClassifier: %w", err)
	}
	clf, err := bert.NewClassifier(cfg, store)
	if err != nil {
		return nil, nil, fmt.Errorf("sample: TinyClassifier: %w", err)
	}
	return clf, tok, nil
}

// lines are the lines of an embedded file (they end with LF; the files are checked in).
func lines(name string) []string {
	raw, err := files.ReadFile(name)
	if err != nil {
		panic("sample: " + err.Error()) // embedded at build time: cannot happen
	}
	return strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
}
