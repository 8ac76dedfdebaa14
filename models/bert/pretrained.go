package bert

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/goaccel/goaccel/checkpoint"
	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/internal/localpath"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
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
	if info, err := os.Stat(dir); err != nil {
		return nil, nil, fmt.Errorf("bert: model folder: %w", err)
	} else if !info.IsDir() {
		return nil, nil, fmt.Errorf("bert: model folder %s is not a directory", dir)
	}
	cfg, err := LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, nil, err
	}
	if err := CheckLoadHead(filepath.Join(dir, "config.json"), cfg.Architectures, opts.Head, opts.LoadHead); err != nil {
		return nil, nil, fmt.Errorf("bert: %w", err)
	}
	cfg.Head = opts.Head
	if opts.NumLabels < 0 {
		return nil, nil, fmt.Errorf("bert: NumLabels must not be negative, got %d", opts.NumLabels)
	} else if opts.NumLabels > 0 && opts.NumLabels != cfg.NumLabels {
		cfg.NumLabels, cfg.Labels = opts.NumLabels, nil
	}
	maxLen := opts.MaxLen
	if maxLen == 0 {
		maxLen = min(DefaultMaxLen, cfg.MaxPositionEmbeddings)
	}
	if err := cfg.CheckMaxLen(maxLen); err != nil {
		return nil, nil, fmt.Errorf("%w (model %s)", err, filepath.Join(dir, "config.json"))
	}
	tok, err := LoadTokenizer(dir, maxLen)
	if err != nil {
		return nil, nil, err
	}
	files, err := checkEncoderWeights(dir, cfg, opts.LoadHead)
	if err != nil {
		return nil, nil, err
	}
	if err := tok.CheckVocabSize(cfg.VocabSize, filepath.Join(dir, "config.json")); err != nil {
		return nil, nil, err
	}
	if store == nil {
		store = model.NewStore()
	}
	f, head := cfg.family(), headNames(cfg)
	varPath := func(name string) (string, bool) {
		name = f.canonicalName(name)
		if cfg.ignoredTensor(name, head) && !(opts.LoadHead && head[name]) {
			return "", false
		}
		return f.varPath(name)
	}
	for _, path := range files {
		if _, err := checkpoint.ImportWeights(path, store, varPath, toFloat32); err != nil {
			return nil, nil, err // names the file, tensor and variable
		}
	}
	clf, err := NewClassifier(cfg, store)
	if err != nil {
		return nil, nil, err
	}
	return clf, tok, nil
}

// toFloat32 converts F16, BF16 and F64 weights to the float32 variables of the model.
func toFloat32(name string, t *tensors.Tensor) (*tensors.Tensor, error) {
	return safetensors.ConvertFloat(t, dtypes.Float32)
}

// weightsFiles returns the safetensors files of a model folder, or an error saying why there
// is none.
func weightsFiles(dir string) ([]string, error) {
	single := filepath.Join(dir, "model.safetensors")
	if _, err := os.Stat(single); err == nil {
		return []string{single}, nil
	}
	index := filepath.Join(dir, "model.safetensors.index.json")
	if contents, err := os.ReadFile(index); err == nil {
		var doc struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(contents, &doc); err != nil {
			return nil, fmt.Errorf("bert: parsing %s: %w", index, err)
		}
		seen := map[string]bool{}
		var files []string
		for _, tensor := range slices.Sorted(maps.Keys(doc.WeightMap)) {
			f := doc.WeightMap[tensor]
			if seen[f] {
				continue
			}
			seen[f] = true
			path, err := localpath.Join(dir, f)
			if err != nil {
				return nil, fmt.Errorf("bert: %s: weight_map[%q]: %w", index, tensor, err)
			}
			files = append(files, path)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("bert: %s lists no weight files", index)
		}
		sort.Strings(files)
		return files, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("bert: reading %s: %w", index, err)
	}
	for _, other := range []string{"pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack", "model.ckpt.index"} {
		if _, err := os.Stat(filepath.Join(dir, other)); err == nil {
			return nil, fmt.Errorf("bert: model folder %s has weights only as %s; only safetensors is supported: "+
				"convert it once with python -c \"from transformers import AutoModelForSequenceClassification as M; M.from_pretrained('%s').save_pretrained('%s', safe_serialization=True)\"",
				dir, other, dir, dir)
		}
	}
	return nil, fmt.Errorf("bert: model folder %s has no weights file (model.safetensors)", dir)
}

// headNames is the set of cfg's classification-head tensor names.
func headNames(cfg Config) map[string]bool {
	names := map[string]bool{}
	for _, t := range cfg.HeadTensors() {
		names[t.Name] = true
	}
	return names
}

// checkEncoderWeights checks the encoder tensors of a model folder (and the head's, with
// withHead) against cfg, reading only the files' headers, and returns the weights files.
func checkEncoderWeights(dir string, cfg Config, withHead bool) ([]string, error) {
	files, err := weightsFiles(dir)
	if err != nil {
		return nil, err
	}
	type source struct {
		file   *safetensors.File
		stName string
		info   safetensors.TensorInfo
	}
	found := make(map[string]source) // canonical HF name -> where it is
	f, head := cfg.family(), headNames(cfg)
	var problems, unexpected []string
	var opened []*safetensors.File
	defer func() {
		for _, f := range opened {
			_ = f.Close()
		}
	}()
	for _, path := range files {
		// Only the headers are read here; LoadPretrained reads the tensors once everything
		// checks out.
		st, err := safetensors.Open(path)
		if err != nil {
			return nil, err // "safetensors: ... (file path)"
		}
		opened = append(opened, st)
		for _, info := range st.Header().Tensors {
			name := f.canonicalName(info.Name)
			if cfg.ignoredTensor(name, head) && !(withHead && head[name]) {
				continue
			}
			if prev, dup := found[name]; dup {
				return nil, fmt.Errorf("bert: %s: tensor %q appears twice (also as %q in %s)",
					path, name, prev.stName, prev.file.Path())
			}
			found[name] = source{st, info.Name, info}
		}
	}

	expected := cfg.EncoderTensors()
	if withHead {
		expected = cfg.Tensors()
	}
	expectedSet := make(map[string]bool, len(expected))
	var missing []string
	for _, spec := range expected {
		expectedSet[spec.Name] = true
		src, ok := found[spec.Name]
		if !ok {
			missing = append(missing, spec.Name)
			continue
		}
		if !slices.Equal(src.info.Dims, spec.Dims) {
			problems = append(problems, fmt.Sprintf("%s has shape %v, config wants %v", src.stName, src.info.Dims, spec.Dims))
		}
		switch src.info.DType {
		case dtypes.Float32, dtypes.Float16, dtypes.BFloat16, dtypes.Float64:
		default:
			dtype, _ := safetensors.DTypeName(src.info.DType)
			problems = append(problems, fmt.Sprintf("%s has dtype %s, want a float type (F32, F16, BF16, F64)", src.stName, dtype))
		}
	}
	for name, src := range found {
		if !expectedSet[name] {
			unexpected = append(unexpected, src.stName)
		}
	}
	if err := weightsMismatch(strings.Join(files, ", "), filepath.Join(dir, "config.json"), missing, problems, unexpected, cfg.NumHiddenLayers); err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	return files, nil
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

// listNames joins names for an error message, keeping it readable for long lists.
func listNames(names []string) string {
	const limit = 8
	if len(names) <= limit {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:limit], ", ") + fmt.Sprintf(", ... (%d more)", len(names)-limit)
}
