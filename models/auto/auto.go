package auto

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/goaccel/goaccel/models/lora"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// Classifier is a family's sequence classifier: its Store holds the weights (it is what
// accelerator.Prepare and trainer.New take), and it may implement the accelerator's
// optional interfaces (SetComputeDType for mixed precision).
type Classifier interface {
	model.StoreProvider
	// NumParameters counts the weights, head included.
	NumParameters() int
}

// Head is the task of the classifier's head (shared by the families).
type Head = hf.Head

// The heads Options.Head chooses, as transformers' Auto classes do.
const (
	// SequenceClassification: one vector of logits per text
	// (AutoModelForSequenceClassification), the zero value.
	SequenceClassification = hf.SequenceClassification
	// TokenClassification: one vector of logits per token (AutoModelForTokenClassification;
	// named entities).
	TokenClassification = hf.TokenClassification
	// ImageClassification: one vector of logits per image (AutoModelForImageClassification),
	// the one head of an image family, which reads SequenceClassification (the zero value)
	// as it.
	ImageClassification = hf.ImageClassification
)

// Options are Load's choices, applied before any variable of the head exists.
type Options struct {
	// Head is the head to build: SequenceClassification (the zero value) or
	// TokenClassification for a text family. Without LoadHead any checkpoint of the family
	// gives its encoder to either; with LoadHead the folder must have been saved with this
	// head. An image family builds ImageClassification (the zero value stands for it).
	Head Head
	// MaxLen is a text family's tokenizer's sequence length, special tokens included; 0: 128
	// (or the model's longest, when shorter). An image family refuses it.
	MaxLen int
	// ImageSize is an image family's image side in pixels, what its processor makes and
	// its model takes; 0: the folder's (preprocessor_config.json's size, else config.json's
	// image_size). A text family refuses it.
	ImageSize int
	// InterpolatePosEncoding lets a ViT take another ImageSize than its config.json's
	// image_size, with its position embeddings interpolated (bicubic) as transformers'
	// interpolate_pos_encoding=True; without it another size is an error. A text family
	// refuses it.
	InterpolatePosEncoding bool
	// NumLabels is the classifier's number of classes; 0: the folder's (num_labels, 2 by
	// default), or len(Labels) when Labels is given.
	NumLabels int
	// Labels names the classes (id2label); nil: the folder's names when it has NumLabels
	// of them, else unnamed (LABEL_0, LABEL_1, ...). When given with NumLabels, they agree.
	Labels []string
	// LoadHead loads the folder's classification head too (a folder a fine-tune wrote),
	// instead of a fresh one.
	LoadHead bool
	// Dropout, when not nil, is every dropout rate of the model (nil: the folder's).
	Dropout *float64
	// GradientCheckpointing recomputes each layer's activations in the backward pass
	// (every family's Config.GradientCheckpointing).
	GradientCheckpointing bool
	// ProblemType is what the head is trained for, as transformers' problem_type:
	// "single_label_classification", "multi_label_classification" or "regression" (with
	// NumLabels 1); it goes into the exported config.json, so that transformers computes
	// the same loss. Empty: the folder's (single-label when it says none).
	ProblemType string
	// LoRA, when not nil, attaches a LoRA adapter of this configuration (zero fields: PEFT's
	// defaults, see models/lora): the encoder is frozen, the adapter and the head train, and
	// SavePretrained writes the merged model with the adapter as PEFT's files in its
	// subfolder adapter/. Every family has it (see docs/lora.md for each one's defaults and
	// the head's tensors that train).
	LoRA *lora.Config
}

// labels returns the class names to use, one per class, given the folder's count and
// names: opts.Labels, else the folder's names when the counts agree, else "" each
// (unnamed).
func (o Options) labels(folderCount int, folderNames []string) ([]string, error) {
	n := o.NumLabels
	switch {
	case n < 0:
		return nil, fmt.Errorf("auto: NumLabels %d: must not be negative", n)
	case o.Labels != nil && n != 0 && len(o.Labels) != n:
		return nil, fmt.Errorf("auto: %d Labels %q but NumLabels %d: give as many names as classes", len(o.Labels), o.Labels, n)
	case o.Labels != nil:
		if err := hf.ValidateLabels(o.Labels, len(o.Labels)); err != nil {
			return nil, fmt.Errorf("auto: Labels: %w", err)
		}
		return o.Labels, nil
	case n == 0:
		n = folderCount
	}
	if o.ProblemType == "regression" {
		return make([]string, n), nil // a regression head's outputs have no class names
	}
	if len(folderNames) == n {
		return folderNames, nil
	}
	return make([]string, n), nil
}

// named returns labels, or nil when they are unnamed.
func named(labels []string) []string {
	for _, l := range labels {
		if l != "" {
			return labels
		}
	}
	return nil
}

// Model is a loaded classifier of any family with its input processor.
type Model struct {
	// Family is config.json's model_type ("bert" when it has none).
	Family string
	// Dir is the folder it was loaded from ("" for a model made in code).
	Dir string
	// Classifier is the model the accelerator prepares (the family's own classifier).
	Classifier Classifier
	// Processor makes the inputs of Logits from raw inputs: for a text family a Tokenizer
	// (see Model.Tokenizer).
	Processor Processor

	net Network
}

// Tokenizer is the model's Processor when it is a text tokenizer, else nil.
func (m *Model) Tokenizer() Tokenizer {
	t, _ := m.Processor.(Tokenizer)
	return t
}

// Network is the family's classifier behind the model, as its Family made it.
func (m *Model) Network() Network { return m.net }

// ProblemType is what the head is trained for, as transformers' problem_type:
// "single_label_classification" (also when the folder says none), "multi_label_classification"
// or "regression".
func (m *Model) ProblemType() string {
	_, _, p := m.net.HeadFields()
	return hf.ProblemTypeOrDefault(*p)
}

// Logits builds the forward pass: inputs are what the Processor makes (for text, [input_ids,
// attention_mask, token_type_ids], int32 [B, L]; a family without token types ignores the
// third; for images, [pixel_values], float32 [B, H, W, 3] NHWC), the result the float32
// logits: [B, NumLabels], or [B, L, NumLabels] with the token-classification head. It panics on bad inputs, as GoMLX
// graph functions do (the accelerator turns the panic into an error).
func (m *Model) Logits(s *model.Scope, inputs []*Node) *Node { return m.net.Logits(s, inputs) }

// NumLabels is the number of classes.
func (m *Model) NumLabels() int {
	n, _, _ := m.net.HeadFields()
	return *n
}

// Labels are the class names by class id (id2label), nil when unnamed.
func (m *Model) Labels() []string {
	_, l, _ := m.net.HeadFields()
	return *l
}

// SavePretrained writes a Hugging Face folder that Load (with Options.LoadHead) and
// transformers' AutoModelForSequenceClassification and AutoTokenizer read (an image family's:
// AutoModelForImageClassification and AutoImageProcessor): config.json with the labels,
// model.safetensors, and the processor's files. Every variable must have a value
// (run the model once, or load it, first).
func (m *Model) SavePretrained(dir string) error { return m.net.SavePretrained(dir, m.Processor) }

// Info is what config.json says of a folder before it is loaded.
type Info struct {
	// Dir is the folder (a Hub id resolved to its snapshot).
	Dir string
	// ModelType is config.json's model_type ("bert" when it has none).
	ModelType string
	// NumLabels is num_labels, else the count of id2label, else 2 (transformers' default).
	NumLabels int
	// Labels are id2label's names by class id, nil when the folder names none (or only
	// transformers' LABEL_i defaults).
	Labels []string
}

// Inspect reads the config.json of a folder or Hub id (see Resolve): its family and its
// classes. An unknown model_type is an error naming the supported ones.
func Inspect(nameOrDir string) (Info, error) {
	dir, err := Resolve(nameOrDir)
	if err != nil {
		return Info{}, err
	}
	path := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return Info{}, fmt.Errorf("auto: %s has no config.json: %w", nameOrDir, err)
	}
	var keys struct {
		ModelType string         `json:"model_type"`
		NumLabels *int           `json:"num_labels"`
		ID2Label  map[string]any `json:"id2label"`
		Label2ID  map[string]any `json:"label2id"`
	}
	if err := json.Unmarshal(b, &keys); err != nil {
		return Info{}, fmt.Errorf("auto: parsing %s: %w", path, err)
	}
	info := Info{Dir: dir, ModelType: keys.ModelType, NumLabels: 2}
	if info.ModelType == "" {
		info.ModelType = "bert"
	}
	if FamilyOf(info.ModelType) == nil {
		return Info{}, unsupported(path, info.ModelType)
	}
	if info.Labels, err = hf.ParseLabels(keys.ID2Label, keys.Label2ID); err != nil {
		return Info{}, fmt.Errorf("auto: %s: %w", path, err)
	}
	switch {
	case keys.NumLabels != nil:
		info.NumLabels = *keys.NumLabels
	case len(keys.ID2Label) > 0:
		info.NumLabels = len(keys.ID2Label)
	}
	if info.NumLabels < 1 {
		return Info{}, fmt.Errorf("auto: %s: num_labels %s: want at least 1", path, strconv.Itoa(info.NumLabels))
	}
	return info, nil
}

// Load loads the classifier and tokenizer of a Hugging Face folder, or of a Hub id found in
// the local cache (Resolve), into store, choosing the family by config.json's model_type
// (Families). The encoder's weights are the folder's; the classification head is fresh
// unless opts.LoadHead. Errors name the folder and what is wrong: an unknown model_type, a
// missing or misshapen tensor, a tokenizer component that is not supported, a tokenizer
// whose ids do not fit the model's vocabulary.
//
// Each model has a store of its own: nil makes a new one; a store given must hold no
// variable yet but GoMLX's own (the random state SetRNGStateFromSeed sets, named "#..."). A
// store that holds another model's is refused: loading would write this folder's weights
// under that model and every Predictor built on it, whose answers would change unannounced.
func Load(nameOrDir string, store *model.Store, opts Options) (*Model, error) {
	info, err := Inspect(nameOrDir)
	if err != nil {
		return nil, err
	}
	if store == nil {
		store = model.NewStore()
	} else if err := unused(store); err != nil {
		return nil, fmt.Errorf("auto: Load %s: %w", nameOrDir, err)
	}
	if err := opts.Head.Known(); err != nil {
		return nil, fmt.Errorf("auto: Load %s: %w", nameOrDir, err)
	}
	net, proc, err := FamilyOf(info.ModelType).Load(info.Dir, store,
		LoadRequest{Head: opts.Head, NumLabels: opts.NumLabels, LoadHead: opts.LoadHead, MaxLen: opts.MaxLen,
			ImageSize: opts.ImageSize, InterpolatePosEncoding: opts.InterpolatePosEncoding})
	if err != nil {
		return nil, err
	}
	if err := opts.checkInput(net.Config().Facts()); err != nil {
		return nil, fmt.Errorf("auto: Load %s: %w", nameOrDir, err)
	}
	return newModel(net, proc, opts, info.Dir)
}

// checkInput refuses the options of the other kind of input than the family's: MaxLen for
// an image family, ImageSize and InterpolatePosEncoding for a text family.
func (o Options) checkInput(f Facts) error {
	switch {
	case f.Image != nil && o.MaxLen != 0:
		return fmt.Errorf("Options.MaxLen %d: model_type %q is an image family, whose inputs are images (Options.ImageSize)", o.MaxLen, f.ModelType)
	case f.Image == nil && o.ImageSize != 0:
		return fmt.Errorf("Options.ImageSize %d: model_type %q is a text family (Options.MaxLen)", o.ImageSize, f.ModelType)
	case f.Image == nil && o.InterpolatePosEncoding:
		return fmt.Errorf("Options.InterpolatePosEncoding: model_type %q is a text family, without image position embeddings", f.ModelType)
	}
	return nil
}

// unused refuses a store that holds variables other than GoMLX's own ("#rngState"...).
func unused(store *model.Store) error {
	var held []string
	for v := range store.IterVariables() {
		if !strings.HasPrefix(v.Name(), "#") {
			held = append(held, v.Path())
		}
	}
	if len(held) == 0 {
		return nil
	}
	slices.Sort(held)
	return fmt.Errorf("the store already holds %d variables of a model (%s, ...): loading would replace its weights "+
		"under it and its predictors; give each model its own store (nil: a new one)", len(held), held[0])
}

// setHead gives a family's config the head opts asks for: the number of classes and their
// names (see labels), and the problem type (kept when opts says none).
func (o Options) setHead(numLabels *int, names *[]string, problem *string) error {
	labels, err := o.labels(*numLabels, *names)
	if err != nil {
		return err
	}
	*numLabels, *names = len(labels), named(labels)
	if o.ProblemType != "" {
		if err := hf.ValidateProblemType(o.ProblemType); err != nil {
			return fmt.Errorf("auto: ProblemType: %w", err)
		}
		*problem = o.ProblemType
	}
	return nil
}
