package modernbert

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/goaccel/goaccel/checkpoint"
	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/models/bert"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// LoadOptions configure LoadPretrained.
type LoadOptions struct {
	// NumLabels overrides the config's num_labels for a fresh classifier (0 keeps the
	// config's). Another count than the config's drops its label names (id2label).
	NumLabels int
	// LoadHead loads the classifier too (a fine-tuned sequence classifier, such as one
	// SavePretrained wrote), instead of initialising it fresh; the folder must then have
	// "classifier.weight" and "classifier.bias", shaped for num_labels.
	LoadHead bool
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
// folder, config.json or model.safetensors, a configuration this package cannot build,
// missing tensors, tensors whose shape or dtype differs from the config's, and tensors of
// another architecture (or more layers than num_hidden_layers).
func LoadPretrained(dir string, store *model.Store, opts LoadOptions) (*Classifier, error) {
	if info, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("modernbert: model folder: %w", err)
	} else if !info.IsDir() {
		return nil, fmt.Errorf("modernbert: model folder %s is not a directory", dir)
	}
	cfg, err := LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	if opts.NumLabels < 0 {
		return nil, fmt.Errorf("modernbert: NumLabels must not be negative, got %d", opts.NumLabels)
	} else if opts.NumLabels > 0 && opts.NumLabels != cfg.NumLabels {
		cfg.NumLabels, cfg.Labels = opts.NumLabels, nil
	}
	path := filepath.Join(dir, "model.safetensors")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("modernbert: model folder %s has no model.safetensors (only a single safetensors file is read): %w", dir, err)
	}
	load, err := checkWeights(path, cfg, opts.LoadHead)
	if err != nil {
		return nil, err
	}
	if store == nil {
		store = model.NewStore()
	}
	varPath := func(name string) (string, bool) {
		name = canonicalName(name)
		if !load[name] {
			return "", false
		}
		return VarPath(name), true
	}
	toFloat32 := func(name string, t *tensors.Tensor) (*tensors.Tensor, error) {
		return safetensors.ConvertFloat(t, dtypes.Float32)
	}
	if _, err := checkpoint.ImportWeights(path, store, varPath, toFloat32); err != nil {
		return nil, err // names the file, tensor and variable
	}
	return NewClassifier(cfg, store)
}

// checkWeights checks the tensors of a model.safetensors file against cfg, reading only its
// header, and returns the canonical names of the tensors to load.
func checkWeights(path string, cfg Config, withHead bool) (map[string]bool, error) {
	st, err := safetensors.Open(path)
	if err != nil {
		return nil, err // names the file
	}
	defer func() { _ = st.Close() }()
	found := map[string]safetensors.TensorInfo{}
	for _, info := range st.Header().Tensors {
		found[canonicalName(info.Name)] = info
	}
	required := cfg.EncoderTensors()
	optional := cfg.PredictionHeadTensors()
	if withHead {
		required = append(required, cfg.ClassifierTensors()...)
	} else {
		optional = append(optional, cfg.ClassifierTensors()...)
	}
	// The prediction head is loaded whole or not at all.
	headFound := 0
	for _, spec := range cfg.PredictionHeadTensors() {
		if _, ok := found[spec.Name]; ok {
			headFound++
		}
	}
	if headFound > 0 {
		required = append(required, cfg.PredictionHeadTensors()...)
	}
	load, known := map[string]bool{}, map[string]bool{}
	var missing, problems, unexpected []string
	for _, spec := range required {
		known[spec.Name] = true
		info, ok := found[spec.Name]
		if !ok {
			missing = append(missing, spec.Name)
			continue
		}
		load[spec.Name] = true
		if !slices.Equal(info.Dims, spec.Dims) {
			problems = append(problems, fmt.Sprintf("%s has shape %v, config wants %v", info.Name, info.Dims, spec.Dims))
		}
		if !info.DType.IsFloat() {
			dtype, _ := safetensors.DTypeName(info.DType)
			problems = append(problems, fmt.Sprintf("%s has dtype %s, want a float type (F32, F16, BF16, F64)", info.Name, dtype))
		}
	}
	for _, spec := range optional {
		known[spec.Name] = true
	}
	for name, info := range found {
		if !known[name] && !strings.HasPrefix(name, "decoder.") {
			unexpected = append(unexpected, info.Name)
		}
	}
	sort.Strings(missing)
	sort.Strings(unexpected)
	var msgs []string
	if len(missing) > 0 {
		msgs = append(msgs, fmt.Sprintf("%d missing tensors: %s", len(missing), bert.ListNames(missing)))
	}
	if len(problems) > 0 {
		msgs = append(msgs, fmt.Sprintf("%d tensors with the wrong shape or dtype: %s", len(problems), bert.ListNames(problems)))
	}
	if len(unexpected) > 0 {
		msgs = append(msgs, fmt.Sprintf("%d unexpected tensors (another architecture or configuration: biases, more layers than num_hidden_layers=%d): %s",
			len(unexpected), cfg.NumHiddenLayers, bert.ListNames(unexpected)))
	}
	if len(msgs) > 0 {
		return nil, fmt.Errorf("modernbert: weights in %s do not match %s: %s",
			path, filepath.Join(filepath.Dir(path), "config.json"), strings.Join(msgs, "; "))
	}
	return load, nil
}
