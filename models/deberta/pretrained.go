package deberta

import (
	"fmt"
	"slices"
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
	// architectures say. Without LoadHead any checkpoint gives either head its encoder; the
	// token classifier passes over a pooler.
	Head bert.Head
}

// LoadPretrained loads a DeBERTa-v2/v3 Hugging Face folder (config.json with model_type
// "deberta-v2", model.safetensors) into store, under the variable paths of Classifier
// (VarPath), and returns the classifier. The tokenizer is models/bert's LoadTokenizer, which
// reads a DeBERTa-v3 folder's spm.model.
//
// The encoder's tensors ("deberta.*", or without the prefix as a bare DebertaV2Model saves
// them) must all be there. The pooler ("pooler.dense") is loaded when the folder has it and
// initialised fresh otherwise; the classifier is loaded only with opts.LoadHead. A masked-LM
// or pre-training checkpoint loads its encoder with a fresh head: the heads of the other
// tasks ("cls.*", "lm_predictions.*", "mask_predictions.*", "qa_outputs.*") are passed
// over, and so is the absolute position table that DeBERTa-v3's checkpoints carry though
// position_biased_input is false (transformers ignores it too). F16, BF16 and F64 tensors
// are converted to float32.
//
// Errors, each naming what is wrong, stop the load before any variable is written: a missing
// folder, config.json or model.safetensors, LoadHead with a head the folder's architectures
// does not name, a configuration this package does not compute
// (naming config.json and the key), missing tensors, tensors whose shape or dtype differs
// from the config's, and tensors of another architecture (or more layers than
// num_hidden_layers).
func LoadPretrained(dir string, store *model.Store, opts LoadOptions) (*Classifier, error) {
	configPath, weights, err := bert.FolderFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("deberta: %w", err)
	}
	cfg, err := LoadConfig(configPath)
	if err != nil {
		return nil, err
	}
	if err := bert.CheckLoadHead(configPath, cfg.architectures, opts.Head, opts.LoadHead); err != nil {
		return nil, fmt.Errorf("deberta: %w", err)
	}
	cfg.Head = opts.Head
	if opts.NumLabels < 0 {
		return nil, fmt.Errorf("deberta: NumLabels must not be negative, got %d", opts.NumLabels)
	} else if opts.NumLabels > 0 && opts.NumLabels != cfg.NumLabels {
		cfg.NumLabels, cfg.Labels = opts.NumLabels, nil
	}
	if store == nil {
		store = model.NewStore()
	}
	if err := bert.LoadWeights(weights, store, cfg.weightPlan(opts.LoadHead), VarPath); err != nil {
		return nil, fmt.Errorf("deberta: %w", err)
	}
	return NewClassifier(cfg, store)
}

// weightPlan says which tensors LoadPretrained reads: the encoder, the pooler when the file
// has it (the sequence classifier's: the token classifier passes it over), the classifier
// with withHead; other heads and an unused position table are passed over.
func (c Config) weightPlan(withHead bool) bert.WeightPlan {
	plan := bert.WeightPlan{Required: c.EncoderTensors(), Whole: [][]TensorSpec{c.PoolerTensors()},
		Canonical: canonicalName, Layers: c.NumHiddenLayers}
	if c.Head == bert.TokenClassification {
		plan.Whole, plan.Skipped = nil, c.PoolerTensors()
	}
	if withHead {
		plan.Required = append(plan.Required, c.ClassifierTensors()...)
	} else {
		plan.Skipped = append(plan.Skipped, c.ClassifierTensors()...)
	}
	plan.Ignore = func(name string) bool {
		if !c.PositionBiasedInput && name == "deberta.embeddings.position_embeddings.weight" {
			return true
		}
		return slices.ContainsFunc(otherHeads, func(p string) bool { return strings.HasPrefix(name, p) })
	}
	return plan
}
