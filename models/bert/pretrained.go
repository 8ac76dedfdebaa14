package bert

import (
	"fmt"
	"strings"

	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/gomlx/gomlx/ml/model"
)

// LoadOptions configure LoadPretrained.
type LoadOptions struct {
	// MaxLen is the tokenizer's sequence length ([CLS] and [SEP] included); it must not be
	// above the model's max_position_embeddings. 0 means 128 (or max_position_embeddings
	// when smaller).
	MaxLen int
	// NumLabels overrides the config's num_labels for the fresh classification head
	// (0 keeps the config's, which defaults to 2). Another count than the config's drops its
	// label names (id2label), which named the classes of another head: set the new ones in
	// the Classifier's Config.Labels.
	NumLabels int
	// LoadHead loads the classification head too (a fine-tuned classifier with the head
	// Head, such as one SavePretrained wrote), instead of leaving it to be initialised fresh;
	// the folder must then have the head's tensors, shaped for num_labels, and its
	// config.json's architectures must not name the other head.
	LoadHead bool
	// Head is the head of the classifier returned: SequenceClassification (the zero value)
	// or TokenClassification, whatever the folder's architectures say (its Config.Head).
	// Without LoadHead, any checkpoint of the family gives its encoder to either head (a
	// base model, a masked-LM, a sequence or a token classifier): the other head's tensors
	// and a pooler the token classifier has no use for are passed over.
	Head Head
}

// DefaultMaxLen is the sequence length used when LoadOptions.MaxLen is 0.
const DefaultMaxLen = 128

// LoadPretrained loads a Hugging Face model folder of the BERT family (config.json, whose
// model_type picks bert, roberta, xlm-roberta, distilbert or electra; vocab.txt and/or tokenizer.json;
// model.safetensors or a sharded model.safetensors.index.json) into store, under the
// variable paths of Classifier (see VarPath), and returns the classifier (with the head
// opts.Head) and its tokenizer. The classification head is not loaded unless opts.LoadHead:
// it is initialised fresh on first use.
// The classifier's Config.Labels are the folder's class names (config.json's id2label), or
// nil when it names none.
//
// Tensor names may carry the family's prefix ("bert.", "roberta.", ...: sequence classifier
// and masked-LM checkpoints such as bert-base-uncased or roberta-base) or not (BertModel and
// sentence-transformers folders); F16 and BF16 tensors are converted to float32.
// Pre-training heads ("cls.*", "lm_head.*", DistilBERT's "vocab_*", ELECTRA's
// "discriminator_predictions.*"), the "position_ids" and "token_type_ids" buffers and a
// previous classification head are ignored.
//
// Errors, each naming what is wrong, stop the load before any variable is written: a
// missing folder or config.json, LoadHead with a head the folder's architectures does not
// name (a token classifier's folder loaded for a sequence classifier, or the other way round), a weights file in another format than safetensors, a
// configuration this package cannot build, missing tensors, tensors whose shape differs
// from the config, extra encoder tensors (another architecture, more layers), a model_type
// outside the families (the error lists them), a vocabulary
// whose size differs from the word embeddings, and MaxLen above max_position_embeddings.
// The tensors are then read and set by checkpoint.ImportWeights, file by file: of a sharded
// model, a file that fails to read or does not fit store's existing variables leaves the
// files before it loaded.
func LoadPretrained(dir string, store *model.Store, opts LoadOptions) (*Classifier, *Tokenizer, error) {
	configPath, files, err := hf.WeightFiles(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("bert: %w", err)
	}
	cfg, err := LoadConfig(configPath)
	if err != nil {
		return nil, nil, err
	}
	task := hf.LoadOptions{NumLabels: opts.NumLabels, LoadHead: opts.LoadHead, Head: opts.Head}
	if err := task.Apply(configPath, hf.TaskFields{NumLabels: &cfg.NumLabels, Labels: &cfg.Labels, Head: &cfg.Head, Architectures: cfg.Architectures}); err != nil {
		return nil, nil, fmt.Errorf("bert: %w", err)
	}
	maxLen := opts.MaxLen
	if maxLen == 0 {
		maxLen = min(DefaultMaxLen, cfg.MaxPositionEmbeddings)
	}
	if err := cfg.CheckMaxLen(maxLen); err != nil {
		return nil, nil, fmt.Errorf("%w (model %s)", err, configPath)
	}
	tok, err := LoadTokenizer(dir, maxLen)
	if err != nil {
		return nil, nil, err
	}
	if err := tok.CheckVocabSize(cfg.VocabSize, configPath); err != nil {
		return nil, nil, err
	}
	if store == nil {
		store = model.NewStore()
	}
	if err := hf.LoadWeights(files, store, cfg.weightPlan(opts.LoadHead), hf.VarPath); err != nil {
		return nil, nil, fmt.Errorf("bert: %w", err) // names the files, config.json and the tensors
	}
	clf, err := NewClassifier(cfg, store)
	if err != nil {
		return nil, nil, err
	}
	return clf, tok, nil
}

// weightPlan says which tensors LoadPretrained reads: the encoder (Canonical: with the
// family's prefix, LayerNorm's weight and bias), and the head with withHead; other tasks'
// heads, buffers and a pooler the model has no use for are passed over (ignoredTensor).
func (c Config) weightPlan(withHead bool) hf.WeightPlan {
	plan := hf.WeightPlan{Required: c.EncoderTensors(), Canonical: c.family().canonicalName, Layers: c.NumHiddenLayers}
	head := headNames(c)
	if withHead {
		plan.Required = c.Tensors()
	}
	plan.Ignore = func(name string) bool { return c.ignoredTensor(name, head) && !(withHead && head[name]) }
	return plan
}

// headNames is the set of cfg's classification-head tensor names.
func headNames(cfg Config) map[string]bool {
	names := map[string]bool{}
	for _, t := range cfg.HeadTensors() {
		names[t.Name] = true
	}
	return names
}

// ignoredTensor reports whether a checkpoint tensor (canonical name) is deliberately not
// loaded: pre-training heads, the position_ids and token_type_ids buffers, a pooler in a
// model that has none (RobertaModel checkpoints have one; so do BERT's sequence classifiers,
// read for a token classifier), and a classification head of either kind (head: the
// configuration's head tensors; a head is initialised fresh unless LoadOptions.LoadHead).
func (c Config) ignoredTensor(name string, head map[string]bool) bool {
	f := c.family()
	for _, prefix := range []string{"cls.", "lm_head.", "classifier.", "pre_classifier.", "vocab_transform.",
		"vocab_layer_norm.", "vocab_projector.", "discriminator_predictions.", "generator_"} {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	if !c.hasPooler() && strings.HasPrefix(name, f.prefix+".pooler.") {
		return true
	}
	return head[name] || strings.HasSuffix(name, "position_ids") || strings.HasSuffix(name, "embeddings.token_type_ids")
}
