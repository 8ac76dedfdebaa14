package deberta

import (
	"slices"
	"strings"

	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/gomlx/gomlx/ml/model"
)

// LoadOptions configure LoadPretrained: NumLabels for a fresh classifier, LoadHead to load
// the classifier too ("classifier.weight" and "classifier.bias"), and Head, the head of the
// classifier returned, whatever the folder's architectures say (without LoadHead any
// checkpoint gives either head its encoder; the token classifier passes over a pooler).
type LoadOptions = hf.LoadOptions

// LoadPretrained loads a DeBERTa-v2/v3 Hugging Face folder (config.json with model_type
// "deberta-v2", model.safetensors) into store, under the variable paths of Classifier
// (VarPath), and returns the classifier. The tokenizer is read apart, by auto.LoadTokenizer
// or tokenizers.FromFolder, which read a DeBERTa-v3 folder's spm.model.
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
	cfg, store, err := folder.Load(dir, store, opts)
	if err != nil {
		return nil, err
	}
	return NewClassifier(cfg, store)
}

// folder is DeBERTa's side of LoadPretrained and SavePretrained.
var folder = hf.Folder[Config]{Family: "deberta", LoadConfig: LoadConfig, WeightPlan: Config.weightPlan,
	Tensors: Config.Tensors, JSON: Config.JSON, Task: func(c *Config) hf.TaskFields {
		return hf.TaskFields{NumLabels: &c.NumLabels, Labels: &c.Labels, Head: &c.Head, Architectures: c.architectures}
	}}

// weightPlan says which tensors LoadPretrained reads: the encoder, the pooler when the file
// has it (the sequence classifier's: the token classifier passes it over), the classifier
// with withHead; other heads and an unused position table are passed over.
func (c Config) weightPlan(withHead bool) hf.WeightPlan {
	plan := hf.WeightPlan{Required: c.EncoderTensors(), Whole: [][]TensorSpec{c.PoolerTensors()},
		Canonical: canonicalName, Layers: c.NumHiddenLayers}
	if c.Head == hf.TokenClassification {
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
