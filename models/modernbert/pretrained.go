package modernbert

import (
	"fmt"
	"strings"

	"github.com/goaccel/goaccel/models/bert"
	"github.com/gomlx/gomlx/ml/model"
)

// LoadOptions configure LoadPretrained.
type LoadOptions struct {
	// NumLabels overrides the config's num_labels for a fresh classifier (0 keeps the
	// config's). Another count than the config's drops its label names (id2label).
	NumLabels int
	// LoadHead loads the classifier too (a fine-tuned classifier with the head Head, such as
	// one SavePretrained wrote), instead of initialising it fresh; the folder must then have
	// "classifier.weight" and "classifier.bias", shaped for num_labels, and its config.json's
	// architectures must not name the other head.
	LoadHead bool
	// Head is the head of the classifier returned (models/bert's Head):
	// SequenceClassification (the zero value) or TokenClassification, whatever the folder's
	// architectures say. Both heads have the same tensors: without LoadHead any checkpoint
	// gives either head its encoder and its prediction head (when it has one).
	Head bert.Head
}

// LoadPretrained loads a ModernBERT Hugging Face folder (config.json with model_type
// "modernbert", model.safetensors) into store, under the variable paths of Classifier
// (VarPath), and returns the classifier; the tokenizer is not this package's business.
//
// The encoder's tensors ("model.*", or without the prefix as a bare ModernBertModel saves
// them) must all be there. The prediction head ("head.dense", "head.norm") is loaded when
// the folder has it (masked-LM checkpoints such as answerdotai/ModernBERT-base do, and
// transformers starts a classifier from it) and initialised fresh otherwise; the classifier
// is loaded only with opts.LoadHead. The masked-LM decoder ("decoder.*") is ignored. F16,
// BF16 and F64 tensors are converted to float32.
//
// Errors, each naming what is wrong, stop the load before any variable is written: a missing
// folder, config.json or model.safetensors, LoadHead with a head the folder's architectures
// does not name, a configuration this package cannot build,
// missing tensors, tensors whose shape or dtype differs from the config's, and tensors of
// another architecture (or more layers than num_hidden_layers).
func LoadPretrained(dir string, store *model.Store, opts LoadOptions) (*Classifier, error) {
	configPath, weights, err := bert.FolderFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("modernbert: %w", err)
	}
	cfg, err := LoadConfig(configPath)
	if err != nil {
		return nil, err
	}
	if err := bert.CheckLoadHead(configPath, cfg.architectures, opts.Head, opts.LoadHead); err != nil {
		return nil, fmt.Errorf("modernbert: %w", err)
	}
	cfg.Head = opts.Head
	if opts.NumLabels < 0 {
		return nil, fmt.Errorf("modernbert: NumLabels must not be negative, got %d", opts.NumLabels)
	} else if opts.NumLabels > 0 && opts.NumLabels != cfg.NumLabels {
		cfg.NumLabels, cfg.Labels = opts.NumLabels, nil
	}
	if store == nil {
		store = model.NewStore()
	}
	if err := bert.LoadWeights(weights, store, cfg.weightPlan(opts.LoadHead), VarPath); err != nil {
		return nil, fmt.Errorf("modernbert: %w", err) // names the file, config.json and the tensors
	}
	return NewClassifier(cfg, store)
}

// weightPlan says which tensors LoadPretrained reads: the encoder, the prediction head when
// the file has it (whole), the classifier with withHead; the masked-LM decoder is passed over.
func (c Config) weightPlan(withHead bool) bert.WeightPlan {
	plan := bert.WeightPlan{Required: c.EncoderTensors(), Whole: [][]TensorSpec{c.PredictionHeadTensors()},
		Canonical: canonicalName, Layers: c.NumHiddenLayers,
		Ignore: func(name string) bool { return strings.HasPrefix(name, "decoder.") }}
	if withHead {
		plan.Required = append(plan.Required, c.ClassifierTensors()...)
	} else {
		plan.Skipped = c.ClassifierTensors()
	}
	return plan
}
