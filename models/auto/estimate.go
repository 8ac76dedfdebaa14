package auto

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/goaccel/goaccel/models/bert"
	"github.com/goaccel/goaccel/models/deberta"
	"github.com/goaccel/goaccel/models/modernbert"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// Blank is the classifier that a folder's config.json describes, built with fresh weights
// and nothing else read (no weights file, no tokenizer): what a memory plan compiles.
type Blank struct {
	// Family is config.json's model_type.
	Family string
	// Classifier holds the fresh weights, in a Store of its own.
	Classifier Classifier
	// Inputs is how many inputs Logits takes, each [batch, seq] int32: the token ids, the
	// attention mask and, when 3, the token types.
	Inputs int
	// Logits is the classifier's graph (the same as Model.Logits after Load).
	Logits func(s *model.Scope, inputs []*Node) *Node
}

// blankBuilders build a Blank per line of the families table (families.go), by the same
// model_type values; TestEveryFamilyHasABlank holds them together.
var blankBuilders = []struct {
	types []string
	build func(config string, numLabels, seqLen int) (*Blank, error)
}{
	{bert.Families(), blankFamily[bert.Config, *bert.Classifier]{3, bert.LoadConfig, bert.Config.Family,
		func(c *bert.Config) (*int, *[]string) { return &c.NumLabels, &c.Labels }, bert.Config.CheckMaxLen, bert.NewClassifier}.build},
	{[]string{"modernbert"}, blankFamily[modernbert.Config, *modernbert.Classifier]{2, modernbert.LoadConfig,
		func(modernbert.Config) string { return "modernbert" },
		func(c *modernbert.Config) (*int, *[]string) { return &c.NumLabels, &c.Labels }, modernbert.Config.CheckMaxLen, modernbert.NewClassifier}.build},
	{[]string{"deberta-v2"}, blankFamily[deberta.Config, *deberta.Classifier]{3, deberta.LoadConfig,
		func(deberta.Config) string { return "deberta-v2" },
		func(c *deberta.Config) (*int, *[]string) { return &c.NumLabels, &c.Labels }, deberta.Config.CheckMaxLen, deberta.NewClassifier}.build},
}

// blankFamily is what building a Blank needs of a family whose config is C and classifier K.
type blankFamily[C any, K interface {
	Classifier
	Logits(s *model.Scope, inputs []*Node) *Node
}] struct {
	inputs      int
	load        func(path string) (C, error)
	family      func(C) string
	labels      func(*C) (numLabels *int, names *[]string)
	checkMaxLen func(C, int) error
	newClf      func(C, *model.Store) (K, error)
}

// build reads config, sets numLabels (dropping the config's label names) and checks seqLen.
func (f blankFamily[C, K]) build(config string, numLabels, seqLen int) (*Blank, error) {
	cfg, err := f.load(config)
	if err != nil {
		return nil, err
	}
	if numLabels > 0 {
		n, names := f.labels(&cfg)
		*n, *names = numLabels, nil
	}
	if err := f.checkMaxLen(cfg, seqLen); err != nil {
		return nil, fmt.Errorf("--seq_len %d: %w (model %s)", seqLen, err, config)
	}
	clf, err := f.newClf(cfg, model.NewStore())
	if err != nil {
		return nil, err
	}
	return &Blank{Family: f.family(cfg), Classifier: clf, Inputs: f.inputs, Logits: clf.Logits}, nil
}

// NewBlank builds the classifier of a folder or Hub id (Resolve) from its config.json alone,
// for any family Load reads (Families), with numLabels classes (0: the config's) and checked
// for sequences of seqLen tokens. Errors name config.json; one for seqLen quotes it as
// "--seq_len N", the flag of goaccel estimate.
func NewBlank(nameOrDir string, numLabels, seqLen int) (*Blank, error) {
	info, err := Inspect(nameOrDir)
	if err != nil {
		return nil, err
	}
	for _, b := range blankBuilders {
		for _, t := range b.types {
			if t == info.ModelType {
				return b.build(filepath.Join(info.Dir, "config.json"), numLabels, seqLen)
			}
		}
	}
	return nil, fmt.Errorf("auto: %s: model_type %q has no blank classifier (supported: %s)",
		filepath.Join(info.Dir, "config.json"), info.ModelType, strings.Join(Families(), ", "))
}
