package hf

import (
	"fmt"
	"path/filepath"

	"github.com/goaccel/goaccel/models/lora"
	"github.com/gomlx/gomlx/ml/model"
)

// LoadOptions configure a family's LoadPretrained (models/deberta's and models/modernbert's
// are this type; models/bert's has its tokenizer's MaxLen too).
type LoadOptions struct {
	// NumLabels overrides the config's num_labels for a fresh classifier (0 keeps the
	// config's). Another count than the config's drops its label names (id2label), which
	// named the classes of another head: set the new ones in the Classifier's Config.Labels.
	NumLabels int
	// LoadHead loads the classifier too (a fine-tuned classifier with the head Head, such as
	// one SavePretrained wrote), instead of initialising it fresh; the folder must then have
	// the head's tensors, shaped for num_labels, and its config.json's architectures must not
	// name the other head.
	LoadHead bool
	// Head is the head of the classifier returned: SequenceClassification (the zero value)
	// or TokenClassification, whatever the folder's architectures say. Without LoadHead any
	// checkpoint of the family gives either head its encoder; the tensors only the other head
	// has are passed over.
	Head Head
}

// Apply checks o against a folder's config.json (at configPath, whose architectures named
// the head of the checkpoint) and sets the head to build, and the class count with
// NumLabels (a new count drops the class names), in the configuration's task fields.
func (o LoadOptions) Apply(configPath string, t TaskFields) error {
	if err := o.Head.Validate(); err != nil { // a text family's heads
		return fmt.Errorf("LoadOptions.Head: %w", err)
	}
	if err := CheckLoadHead(configPath, t.Architectures, o.Head, o.LoadHead); err != nil {
		return err
	}
	if o.NumLabels < 0 {
		return fmt.Errorf("NumLabels must not be negative, got %d", o.NumLabels)
	}
	*t.Head = o.Head
	if o.NumLabels > 0 && o.NumLabels != *t.NumLabels {
		*t.NumLabels, *t.Labels = o.NumLabels, nil
	}
	return nil
}

// TaskFields points at the task fields of a family's configuration, for LoadOptions.Apply.
type TaskFields struct {
	// NumLabels, Labels and Head are the configuration's fields.
	NumLabels *int
	// Labels: see NumLabels.
	Labels *[]string
	// Head: see NumLabels.
	Head *Head
	// Architectures is config.json's architectures as the family's ParseConfig read it.
	Architectures []string
}

// Folder is a family's side of the steps its LoadPretrained and SavePretrained share with
// every family whose tokenizer is not its business: where its configuration's task lies,
// which tensors a load reads, and how the configuration is written.
type Folder[C any] struct {
	// Family is the package name that prefixes errors ("deberta").
	Family string
	// LoadConfig reads and validates a config.json (the family's LoadConfig).
	LoadConfig func(path string) (C, error)
	// Task points at c's task fields.
	Task func(c *C) TaskFields
	// WeightPlan says which tensors a load of c reads, with the head (LoadOptions.LoadHead)
	// or without.
	WeightPlan func(c C, withHead bool) WeightPlan
	// Tensors lists every tensor of the classifier of c, as SavePretrained writes them.
	Tensors func(c C) []TensorSpec
	// JSON is c's config.json.
	JSON func(c C) ([]byte, error)
}

// Load is a family's LoadPretrained up to building the classifier: the folder's config.json
// (WeightFiles, LoadConfig), opts applied to it (LoadOptions.Apply), and the tensors of the
// weight plan read into store (a new Store when nil) by LoadWeights. Every error names what is
// wrong and stops the load before any variable is written.
func (f Folder[C]) Load(dir string, store *model.Store, opts LoadOptions) (C, *model.Store, error) {
	return f.load(dir, store, opts.LoadHead, func(configPath string, t TaskFields) error { return opts.Apply(configPath, t) })
}

// LoadImage is Load for an image family, whose one head is ImageClassification: a folder
// whose architectures names another head is refused with loadHead, and numLabels (> 0)
// gives a fresh head of that many classes (another count than the config's drops its
// names). The configuration's TaskFields.Head may be nil.
func (f Folder[C]) LoadImage(dir string, store *model.Store, numLabels int, loadHead bool) (C, *model.Store, error) {
	return f.load(dir, store, loadHead, func(configPath string, t TaskFields) error {
		if err := CheckLoadHead(configPath, t.Architectures, ImageClassification, loadHead); err != nil {
			return err
		}
		if numLabels < 0 {
			return fmt.Errorf("NumLabels must not be negative, got %d", numLabels)
		}
		if numLabels > 0 && numLabels != *t.NumLabels {
			*t.NumLabels, *t.Labels = numLabels, nil
		}
		return nil
	})
}

// load is Load and LoadImage, apply setting the head of the config read at configPath.
func (f Folder[C]) load(dir string, store *model.Store, withHead bool, apply func(configPath string, t TaskFields) error) (C, *model.Store, error) {
	var zero C
	configPath, files, err := WeightFiles(dir)
	if err != nil {
		return zero, nil, fmt.Errorf("%s: %w", f.Family, err)
	}
	cfg, err := f.LoadConfig(configPath)
	if err != nil {
		return zero, nil, err
	}
	if err := apply(configPath, f.Task(&cfg)); err != nil {
		return zero, nil, fmt.Errorf("%s: %w", f.Family, err)
	}
	if store == nil {
		store = model.NewStore()
	}
	if err := LoadWeights(files, store, f.WeightPlan(cfg, withHead), VarPath); err != nil {
		return zero, nil, fmt.Errorf("%s: %w", f.Family, err) // names the files, config.json and the tensors
	}
	return cfg, store, nil
}

// Save is a family's SavePretrained of the classifier of cfg whose variables are in store:
// with an adapter in slot, the adapter as PEFT's files into dir's AdapterDir and the
// classifier merged (PEFT's merge_and_unload); then config.json and model.safetensors
// (WriteFolder).
func (f Folder[C]) Save(dir string, cfg C, store *model.Store, slot *lora.Slot) error {
	if store == nil {
		return fmt.Errorf("%s: SavePretrained: nil classifier or classifier without a Store", f.Family)
	}
	merged, err := slot.Merged(f.Family, filepath.Join(dir, AdapterDir), store)
	if err != nil {
		return fmt.Errorf("%s: SavePretrained: %w", f.Family, err)
	}
	if merged != nil {
		store = merged
	}
	cfgJSON, err := f.JSON(cfg)
	if err != nil {
		return fmt.Errorf("%s: SavePretrained: encoding config: %w", f.Family, err)
	}
	if err := WriteFolder(dir, store, f.Tensors(cfg), VarPath, cfgJSON); err != nil {
		return fmt.Errorf("%s: SavePretrained: %w", f.Family, err)
	}
	return nil
}
