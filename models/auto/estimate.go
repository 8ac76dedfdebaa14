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
	// Inputs is how many inputs Logits takes (Facts.Inputs): a text family's each [batch,
	// seq] int32 (the token ids, the attention mask and, when 3, the token types); an image
	// family's one float32 [batch, side, side, channels].
	Inputs int
	// Logits is the classifier's graph (the same as Model.Logits after Load).
	Logits func(s *model.Scope, inputs []*Node) *Node
	// Facts are its config's sizes, and Config the config, for FLOPs (Config.ForwardFLOPs).
	Facts  Facts
	Config Config
	// Size is the input size it was checked for: the sequence length, or an image family's
	// image side.
	Size int
}

// NewBlank builds the classifier of a folder or Hub id (Resolve) from its config.json alone,
// for any family Load reads (Families), with numLabels classes (0: the config's) and checked
// for sequences of seqLen tokens (an image family: images seqLen pixels a side, see BlankOf).
// Errors name config.json; one for seqLen quotes it as "--seq_len N" (an image family's as
// "--image_size N"), the flags of goaccel estimate.
func NewBlank(nameOrDir string, numLabels, seqLen int) (*Blank, error) {
	cfg, path, err := ReadConfig(nameOrDir)
	if err != nil {
		return nil, err
	}
	return BlankOf(cfg, numLabels, seqLen, path)
}

// ReadConfig reads the config.json of a folder or Hub id (Resolve) with its family's
// ParseConfig, and returns it with the file's path; an unknown model_type is an error naming
// the supported ones.
func ReadConfig(nameOrDir string) (Config, string, error) {
	info, err := Inspect(nameOrDir)
	if err != nil {
		return nil, "", err
	}
	path := filepath.Join(info.Dir, "config.json")
	contents, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("auto: %w", err)
	}
	cfg, err := FamilyOf(info.ModelType).ParseConfig(contents, path)
	if err != nil {
		return nil, "", err
	}
	return cfg, path, nil
}

// BlankOf builds the classifier of a family's config with fresh weights, numLabels classes
// (0: the config's), checked for sequences of seqLen tokens, or for an image family
// (Facts.Image) for images of seqLen pixels a side (0: the config's image size); name is the
// config's file, for errors.
func BlankOf(cfg Config, numLabels, seqLen int, name string) (*Blank, error) {
	if numLabels > 0 {
		cfg.SetNumLabels(numLabels)
	}
	flag := "--seq_len"
	if img := cfg.Facts().Image; img != nil {
		flag = "--image_size"
		if seqLen == 0 {
			seqLen = img.Size
		}
	}
	if err := cfg.CheckMaxLen(seqLen); err != nil {
		return nil, fmt.Errorf("%s %d: %w (model %s)", flag, seqLen, err, name)
	}
	net, err := cfg.New(model.NewStore())
	if err != nil {
		return nil, err
	}
	facts := net.Config().Facts()
	return &Blank{Family: facts.ModelType, Classifier: net.Classifier(), Inputs: facts.Inputs, Logits: net.Logits,
		Facts: facts, Config: net.Config(), Size: seqLen}, nil
}
