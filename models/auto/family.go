package auto

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/goaccel/goaccel/models/lora"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// A Family is a model family as Register takes it: what Load, NewBlank, `goaccel estimate`
// and `goaccel bench` need of an architecture, and nothing else. Load and NewBlank do the
// rest the same way for every family (Options' head, labels, problem type, dropout,
// gradient checkpointing and LoRA, the store check, Hub ids), so a family implements only
// reading its files and building its graph. Everything its methods take and return is
// exported by this package or models/lora (docs/families.md has the steps, and a toy family
// in package autotest implements it with public packages only).
type Family interface {
	// Name is the family's short name: the bench's work ("bert", "modernbert", "deberta").
	Name() string
	// ModelTypes are the config.json model_type values the family reads (the first is its
	// own; "" in a config.json counts as "bert").
	ModelTypes() []string
	// ParseConfig reads the contents of a config.json; name is the file, for errors.
	ParseConfig(contents []byte, name string) (Config, error)
	// Load reads folder dir (a local folder with config.json) into store, a Store without
	// variables: the config, the encoder's weights, the head's too with req.LoadHead (else
	// a head of req.NumLabels classes, 0: the config's, made fresh on first use), and the
	// input processor: a text family's tokenizer for sequences of req.MaxLen tokens, an
	// image family's image processor (preprocessor_config.json) for images of
	// req.ImageSize pixels a side.
	Load(dir string, store *model.Store, req LoadRequest) (Network, Processor, error)
	// Reference is the released model whose config the bench trains at any shape.
	Reference() Reference
}

// LoadRequest is what Load asks of Family.Load; the rest of Options is applied by Load to the
// Network returned.
type LoadRequest struct {
	// Head is the head to build: SequenceClassification or TokenClassification for a text
	// family; an image family builds ImageClassification, and reads the zero value
	// (SequenceClassification: what Options leaves it at) as ImageClassification too.
	Head Head
	// NumLabels is the fresh head's classes (0: the folder's).
	NumLabels int
	// LoadHead loads the folder's head too.
	LoadHead bool
	// MaxLen is a text family's sequence length, special tokens included (0: 128, or the
	// model's longest when shorter); Load refuses another value than 0 for an image family.
	MaxLen int
	// ImageSize is an image family's image side in pixels: the height and width its
	// processor makes and its Logits takes (0: the folder's, preprocessor_config.json's size,
	// else config.json's image_size); Load refuses another value than 0 for a text family.
	ImageSize int
	// InterpolatePosEncoding lets an image family with a position embedding per patch (ViT)
	// take images of another size than config.json's image_size, its position embeddings
	// resized by bicubic interpolation as transformers' interpolate_pos_encoding=True does;
	// without it such a size is an error. Families without position embeddings ignore it.
	InterpolatePosEncoding bool
}

// Config is a family's parsed config.json.
type Config interface {
	// Facts are the sizes the bench and estimate report.
	Facts() Facts
	// SetNumLabels gives the config a fresh head of n classes (n > 0), without names.
	SetNumLabels(n int)
	// CheckMaxLen refuses an input size the model cannot take: a text family's sequence
	// length in tokens; an image family's image side in pixels (Facts.Image).
	CheckMaxLen(maxLen int) error
	// ForwardFLOPs counts the floating-point operations of the matrix products (and
	// convolutions) of one forward pass over batch examples of seq tokens, or for an image
	// family of images seq pixels a side (2 per multiply-add; the bench counts a training
	// step as 3 of them).
	ForwardFLOPs(batch, seq int) float64
	// New builds the classifier of the config with fresh weights in store (nil: a new one).
	New(store *model.Store) (Network, error)
	// JSON is the config.json the family writes for the config.
	JSON() ([]byte, error)
}

// Shape is the size of a transformer classifier: the bench's knobs. An image transformer
// (ViT) has no vocabulary (Vocab 0); a convolutional family maps its own sizes onto these
// (its Reference says how) or leaves them 0.
type Shape struct {
	// Hidden is hidden_size, Layers num_hidden_layers, Heads num_attention_heads, FF
	// intermediate_size, Vocab vocab_size.
	Hidden, Layers, Heads, FF, Vocab int
}

// ImageFacts are what an image family's config says of its input.
type ImageFacts struct {
	// Size is the image side the model was trained at (config.json's image_size; the
	// processor's size when config.json has none), Channels num_channels (3: RGB).
	Size, Channels int
	// PatchSize is a transformer's patch side (patch_size), 0 for a convolutional family.
	PatchSize int
}

// Facts are what a config says of its classifier's size.
type Facts struct {
	// ModelType is config.json's model_type ("bert" when it says none).
	ModelType string
	Shape
	// MaxPositions is the longest sequence a text family takes (max_position_embeddings); 0
	// for an image family.
	MaxPositions int
	// Inputs is how many inputs Logits takes. A text family's are each int32 [batch, seq]:
	// the token ids, the attention mask and, when 3, the token types. An image family's is 1:
	// the pixels, float32 [batch, height, width, Image.Channels] (NHWC, docs/images.md) in
	// the units its processor makes (rescaled and normalised).
	Inputs int
	// Image describes an image family's input; nil for a text family.
	Image *ImageFacts
}

// Reference is the released model of a family that the bench trains at any shape.
type Reference struct {
	// Name is its Hub id ("answerdotai/ModernBERT-base").
	Name string
	// Shape is its size.
	Shape Shape
	// Config is its config.json at another shape, for sequences of up to maxLen tokens (an
	// image family: for images maxLen pixels a side), with 2 labels; nil when the family has
	// no reference.
	Config func(shape Shape, maxLen int) (Config, error)
}

// Network is a family's classifier as Load and NewBlank hand it over: the Classifier the
// accelerator prepares, its graph and the settings Options changes.
type Network interface {
	// Classifier is the family's own classifier (*bert.Classifier...): its Store holds the
	// weights, and it may implement the accelerator's optional interfaces.
	Classifier() Classifier
	// Logits is the forward pass on the processor's inputs (Model.Logits; Facts.Inputs).
	Logits(s *model.Scope, inputs []*Node) *Node
	// Config is the classifier's configuration.
	Config() Config
	// HeadFields are the config's num_labels, id2label names (nil: unnamed) and
	// problem_type ("" when the folder says none), for Load to set.
	HeadFields() (numLabels *int, labels *[]string, problemType *string)
	// SetDropout sets every dropout rate of the model.
	SetDropout(rate float64)
	// SetGradientCheckpointing turns the recomputation of each layer in the backward pass
	// on or off.
	SetGradientCheckpointing(on bool)
	// LoRATargets are the default LoRA target modules (Options.LoRA without
	// TargetModules).
	LoRATargets() []string
	// AttachLoRA attaches a LoRA adapter of cfg; base is the folder the model came from.
	AttachLoRA(cfg lora.Config, base string) (*lora.Adapter, error)
	// SavePretrained writes a Hugging Face folder of the classifier and its processor p.
	SavePretrained(dir string, p Processor) error
}

// registry is the table of families, in the order they were registered.
var registry struct {
	sync.RWMutex
	families []Family
}

// Register adds a family to the table Load, Inspect, NewBlank, Families and the bench read,
// as transformers' AutoModel.register: a program's own package calls it (in an init
// function, or before Load). A model_type that a registered family reads already, a family
// without model types or name, or a name taken, is an error.
func Register(f Family) error {
	if f == nil {
		return fmt.Errorf("auto: Register: nil family")
	}
	types := f.ModelTypes()
	if f.Name() == "" || len(types) == 0 {
		return fmt.Errorf("auto: Register: family %T has no name or no model_type", f)
	}
	registry.Lock()
	defer registry.Unlock()
	for _, g := range registry.families {
		if g.Name() == f.Name() {
			return fmt.Errorf("auto: Register: family name %q is taken (by %T)", f.Name(), g)
		}
		for _, t := range types {
			if slices.Contains(g.ModelTypes(), t) {
				return fmt.Errorf("auto: Register: model_type %q is read by family %q already", t, g.Name())
			}
		}
	}
	registry.families = append(registry.families, f)
	return nil
}

// mustRegister registers a built-in family (families.go).
func mustRegister(f Family) {
	if err := Register(f); err != nil {
		panic(err)
	}
}

// Registered returns the families of the table, in the order they were registered.
func Registered() []Family {
	registry.RLock()
	defer registry.RUnlock()
	return slices.Clone(registry.families)
}

// Families lists the model_type values Load accepts, sorted.
func Families() []string {
	var all []string
	for _, f := range Registered() {
		all = append(all, f.ModelTypes()...)
	}
	slices.Sort(all)
	return all
}

// FamilyOf returns the family that reads a model_type ("" is "bert"), or nil.
func FamilyOf(modelType string) Family {
	if modelType == "" {
		modelType = "bert"
	}
	for _, f := range Registered() {
		if slices.Contains(f.ModelTypes(), modelType) {
			return f
		}
	}
	return nil
}

// FamilyNamed returns the family of a Name, or nil.
func FamilyNamed(name string) Family {
	for _, f := range Registered() {
		if f.Name() == name {
			return f
		}
	}
	return nil
}

// unsupported is the error of a model_type no family reads, at path.
func unsupported(path, modelType string) error {
	return fmt.Errorf("auto: %s: model_type %q is not supported: the supported families are %s",
		path, modelType, strings.Join(Families(), ", "))
}

// newModel applies opts (head, labels, problem type, gradient checkpointing, dropout, LoRA,
// in that order) to a family's network and wraps it with its processor; dir is the folder it
// came from ("" for one made in code).
func newModel(net Network, proc Processor, opts Options, dir string) (*Model, error) {
	if net == nil || proc == nil {
		return nil, fmt.Errorf("auto: nil network or processor")
	}
	n, names, problem := net.HeadFields()
	if err := opts.setHead(n, names, problem); err != nil {
		return nil, err
	}
	net.SetGradientCheckpointing(opts.GradientCheckpointing)
	if opts.Dropout != nil {
		net.SetDropout(*opts.Dropout)
	}
	if opts.LoRA != nil {
		cfg := *opts.LoRA
		if len(cfg.TargetModules) == 0 {
			cfg.TargetModules = net.LoRATargets()
		}
		if _, err := net.AttachLoRA(cfg, dir); err != nil {
			return nil, fmt.Errorf("auto: LoRA: %w", err)
		}
	}
	return &Model{Family: net.Config().Facts().ModelType, Dir: dir, Classifier: net.Classifier(), Processor: proc, net: net}, nil
}
