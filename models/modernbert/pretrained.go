package modernbert

import (
	"strings"

	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/gomlx/gomlx/ml/model"
)

// LoadOptions configure LoadPretrained: NumLabels for a fresh classifier, LoadHead to load
// the classifier too ("classifier.weight" and "classifier.bias"), and Head, the head of the
// classifier returned, whatever the folder's architectures say (both heads have the same
// tensors: without LoadHead any checkpoint gives either head its encoder and its prediction
// head, when it has one).
type LoadOptions = hf.LoadOptions

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
	cfg, store, err := folder.Load(dir, store, opts)
	if err != nil {
		return nil, err
	}
	return NewClassifier(cfg, store)
}

// folder is ModernBERT's side of LoadPretrained and SavePretrained.
var folder = hf.Folder[Config]{Family: "modernbert", LoadConfig: LoadConfig, WeightPlan: Config.weightPlan,
	Tensors: Config.Tensors, JSON: Config.JSON, Task: func(c *Config) hf.TaskFields {
		return hf.TaskFields{NumLabels: &c.NumLabels, Labels: &c.Labels, Head: &c.Head, Architectures: c.architectures}
	}}

// weightPlan says which tensors LoadPretrained reads: the encoder, the prediction head when
// the file has it (whole), the classifier with withHead; the masked-LM decoder is passed over.
func (c Config) weightPlan(withHead bool) hf.WeightPlan {
	plan := hf.WeightPlan{Required: c.EncoderTensors(), Whole: [][]TensorSpec{c.PredictionHeadTensors()},
		Canonical: canonicalName, Layers: c.NumHiddenLayers,
		Ignore: func(name string) bool { return strings.HasPrefix(name, "decoder.") }}
	if withHead {
		plan.Required = append(plan.Required, c.ClassifierTensors()...)
	} else {
		plan.Skipped = c.ClassifierTensors()
	}
	return plan
}
