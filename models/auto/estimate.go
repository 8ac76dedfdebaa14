package auto

import (
	"fmt"
	"os"
	"path/filepath"

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
	// Facts are its config's sizes, and Config the config, for FLOPs (Config.ForwardFLOPs).
	Facts  Facts
	Config Config
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
	path := filepath.Join(info.Dir, "config.json")
	contents, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auto: %w", err)
	}
	cfg, err := FamilyOf(info.ModelType).ParseConfig(contents, path)
	if err != nil {
		return nil, err
	}
	return BlankOf(cfg, numLabels, seqLen, path)
}

// BlankOf builds the classifier of a family's config with fresh weights, numLabels classes
// (0: the config's), checked for sequences of seqLen tokens; name is the config's file, for
// errors.
func BlankOf(cfg Config, numLabels, seqLen int, name string) (*Blank, error) {
	if numLabels > 0 {
		cfg.SetNumLabels(numLabels)
	}
	if err := cfg.CheckMaxLen(seqLen); err != nil {
		return nil, fmt.Errorf("--seq_len %d: %w (model %s)", seqLen, err, name)
	}
	net, err := cfg.New(model.NewStore())
	if err != nil {
		return nil, err
	}
	facts := net.Config().Facts()
	return &Blank{Family: facts.ModelType, Classifier: net.Classifier(), Inputs: facts.Inputs, Logits: net.Logits,
		Facts: facts, Config: net.Config()}, nil
}
