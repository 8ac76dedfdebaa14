package auto

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/goaccel/goaccel/internal/fsutil"
	"github.com/goaccel/goaccel/models/bert"
	"github.com/goaccel/goaccel/models/deberta"
	"github.com/goaccel/goaccel/models/lora"
	"github.com/goaccel/goaccel/models/modernbert"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// family is one line of the table: the model_type values a package reads, and its loader.
type family struct {
	types []string
	load  func(dir string, store *model.Store, opts Options) (*Model, error)
}

// families is the table, by model_type. A new family is its package and one line here.
var families = []family{
	{bert.Families(), loadBERT},
	{[]string{"modernbert"}, loadModernBERT},
	{[]string{"deberta-v2"}, loadDeBERTa},
}

// Families lists the model_type values Load accepts, sorted.
func Families() []string {
	var all []string
	for _, f := range families {
		all = append(all, f.types...)
	}
	slices.Sort(all)
	return all
}

// familyOf returns the table's line for a model_type, or nil.
func familyOf(modelType string) *family {
	for i := range families {
		if slices.Contains(families[i].types, modelType) {
			return &families[i]
		}
	}
	return nil
}

// loadBERT loads the BERT family (bert, roberta, xlm-roberta, distilbert, electra).
func loadBERT(dir string, store *model.Store, opts Options) (*Model, error) {
	clf, tok, err := bert.LoadPretrained(dir, store, bert.LoadOptions{MaxLen: opts.MaxLen, NumLabels: opts.NumLabels, LoadHead: opts.LoadHead, Head: opts.Head})
	if err != nil {
		return nil, err
	}
	m, err := bertModel(clf, tok, opts, dir)
	if err != nil {
		return nil, err
	}
	m.Dir = dir
	return m, nil
}

// BERT makes a Model of a BERT-family classifier and its tokenizer built in code (such as
// models/bert/sample's tiny one), with opts' head, labels, dropout and gradient checkpointing
// applied as Load applies them; opts.MaxLen and opts.LoadHead are not used. Call it before
// the classifier's head has variables.
func BERT(clf *bert.Classifier, tok *bert.Tokenizer, opts Options) (*Model, error) {
	return bertModel(clf, tok, opts, "")
}

// bertModel is BERT for a classifier loaded from dir ("" for one made in code), the base
// model an adapter names.
func bertModel(clf *bert.Classifier, tok *bert.Tokenizer, opts Options, dir string) (*Model, error) {
	if clf == nil || tok == nil {
		return nil, fmt.Errorf("auto: BERT: nil classifier or tokenizer")
	}
	cfg := &clf.Config
	if err := opts.Head.Validate(); err != nil {
		return nil, fmt.Errorf("auto: BERT: %w", err)
	}
	cfg.Head = opts.Head
	if err := opts.setHead(&cfg.NumLabels, &cfg.Labels, &cfg.ProblemType); err != nil {
		return nil, err
	}
	cfg.GradientCheckpointing = opts.GradientCheckpointing
	if opts.Dropout != nil {
		rate := *opts.Dropout
		cfg.HiddenDropoutProb, cfg.AttentionProbsDropoutProb, cfg.ClassifierDropout = rate, rate, &rate
	}
	if err := opts.attachLoRA(clf.AttachLoRA, dir); err != nil {
		return nil, err
	}
	return &Model{Family: cfg.Family(), Classifier: clf, Tokenizer: tok, logits: clf.Logits,
		labels: func() []string { return cfg.Labels }, numLabels: func() int { return cfg.NumLabels },
		problem: func() string { return cfg.ProblemType },
		save:    func(dir string) error { return bert.SavePretrained(dir, clf, tok) }}, nil
}

// loadModernBERT loads ModernBERT with the folder's tokenizer (tokenizer.json, or vocab.txt).
func loadModernBERT(dir string, store *model.Store, opts Options) (*Model, error) {
	clf, err := modernbert.LoadPretrained(dir, store, modernbert.LoadOptions{NumLabels: opts.NumLabels, LoadHead: opts.LoadHead, Head: opts.Head})
	if err != nil {
		return nil, err
	}
	cfg := &clf.Config
	cfg.GradientCheckpointing = opts.GradientCheckpointing
	tok, err := opts.tokenizer(dir, cfg.CheckMaxLen, cfg.VocabSize)
	if err != nil {
		return nil, err
	}
	if err := opts.setHead(&cfg.NumLabels, &cfg.Labels, &cfg.ProblemType); err != nil {
		return nil, err
	}
	if opts.Dropout != nil {
		rate := *opts.Dropout
		cfg.AttentionDropout, cfg.EmbeddingDropout, cfg.MLPDropout, cfg.ClassifierDropout = rate, rate, rate, rate
	}
	if err := opts.attachLoRA(clf.AttachLoRA, dir); err != nil {
		return nil, err
	}
	return &Model{Family: "modernbert", Dir: dir, Classifier: clf, Tokenizer: tok,
		logits:    func(s *model.Scope, inputs []*Node) *Node { return clf.Logits(s, inputs[:2]) }, // no token types
		labels:    func() []string { return cfg.Labels },
		numLabels: func() int { return cfg.NumLabels },
		problem:   func() string { return cfg.ProblemType },
		save: func(out string) error {
			if err := modernbert.SavePretrained(out, clf); err != nil {
				return err
			}
			return copyTokenizerFiles(dir, out)
		}}, nil
}

// loadDeBERTa loads DeBERTa-v2 and -v3 with the folder's tokenizer (spm.model, or
// tokenizer.json).
func loadDeBERTa(dir string, store *model.Store, opts Options) (*Model, error) {
	clf, err := deberta.LoadPretrained(dir, store, deberta.LoadOptions{NumLabels: opts.NumLabels, LoadHead: opts.LoadHead, Head: opts.Head})
	if err != nil {
		return nil, err
	}
	cfg := &clf.Config
	cfg.GradientCheckpointing = opts.GradientCheckpointing
	tok, err := opts.tokenizer(dir, cfg.CheckMaxLen, cfg.VocabSize)
	if err != nil {
		return nil, err
	}
	if err := opts.setHead(&cfg.NumLabels, &cfg.Labels, &cfg.ProblemType); err != nil {
		return nil, err
	}
	if opts.Dropout != nil {
		rate := *opts.Dropout
		cfg.HiddenDropoutProb, cfg.AttentionProbsDropoutProb, cfg.PoolerDropout, cfg.ClsDropout = rate, rate, rate, &rate
	}
	if err := opts.attachLoRA(clf.AttachLoRA, dir); err != nil {
		return nil, err
	}
	return &Model{Family: "deberta-v2", Dir: dir, Classifier: clf, Tokenizer: tok, logits: clf.Logits,
		labels:    func() []string { return cfg.Labels },
		numLabels: func() int { return cfg.NumLabels },
		problem:   func() string { return cfg.ProblemType },
		save: func(out string) error {
			if err := deberta.SavePretrained(out, clf); err != nil {
				return err
			}
			return copyTokenizerFiles(dir, out)
		}}, nil
}

// attachLoRA attaches opts.LoRA's adapter, when there is one, by the family's attach (after
// the head's classes are set: the classifier's shape is part of the adapter).
func (o Options) attachLoRA(attach func(cfg lora.Config, baseNameOrPath string) (*lora.Adapter, error), dir string) error {
	if o.LoRA == nil {
		return nil
	}
	if _, err := attach(*o.LoRA, dir); err != nil {
		return fmt.Errorf("auto: LoRA: %w", err)
	}
	return nil
}

// tokenizer loads the folder's tokenizer at opts.MaxLen (default bert.DefaultMaxLen),
// checked against the model's longest sequence and vocabulary.
func (o Options) tokenizer(dir string, checkMaxLen func(int) error, vocabSize int) (*bert.Tokenizer, error) {
	maxLen := o.MaxLen
	if maxLen == 0 {
		maxLen = bert.DefaultMaxLen
	}
	if err := checkMaxLen(maxLen); err != nil {
		return nil, fmt.Errorf("auto: %s: %w", dir, err)
	}
	tok, err := bert.LoadTokenizer(dir, maxLen)
	if err != nil {
		return nil, err
	}
	if err := fitsVocab(dir, tok, vocabSize); err != nil {
		return nil, err
	}
	return tok, nil
}

// setHead gives a family's config the head opts asks for: the number of classes and their
// names (see labels), and the problem type (kept when opts says none).
func (o Options) setHead(numLabels *int, names *[]string, problem *string) error {
	labels, err := o.labels(*numLabels, *names)
	if err != nil {
		return err
	}
	*numLabels, *names = len(labels), named(labels)
	if o.ProblemType != "" {
		if err := bert.ValidateProblemType(o.ProblemType); err != nil {
			return fmt.Errorf("auto: ProblemType: %w", err)
		}
		*problem = o.ProblemType
	}
	return nil
}

// fitsVocab refuses a tokenizer whose ids reach past the model's embedding table (a
// gather there would read a clamped row: a silent wrong answer), by the rule every family
// follows (bert.Tokenizer.CheckVocabSize: at most vocab_size tokens).
func fitsVocab(dir string, tok *bert.Tokenizer, vocabSize int) error {
	if err := tok.CheckVocabSize(vocabSize, filepath.Join(dir, "config.json")); err != nil {
		return fmt.Errorf("auto: %w", err)
	}
	return nil
}

// tokenizerFiles are the files a tokenizer's folder may hold, as transformers' tokenizers
// save them.
var tokenizerFiles = []string{"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
	"added_tokens.json", "vocab.txt", "spm.model", "sentencepiece.bpe.model", "merges.txt", "vocab.json"}

// copyTokenizerFiles copies the tokenizer files of folder src that exist into dst, so that
// the exported folder tokenizes as the one the model came from.
func copyTokenizerFiles(src, dst string) error {
	for _, name := range tokenizerFiles {
		b, err := os.ReadFile(filepath.Join(src, name))
		if os.IsNotExist(err) {
			continue
		} else if err != nil {
			return fmt.Errorf("auto: copying the tokenizer: %w", err)
		}
		if err := fsutil.WriteFileAtomic(filepath.Join(dst, name), b); err != nil {
			return fmt.Errorf("auto: copying the tokenizer: %w", err)
		}
	}
	return nil
}
