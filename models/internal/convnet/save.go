package convnet

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// SaveFolder is a convolutional family's SavePretrained of the classifier of b: with a LoRA
// adapter, the adapter as PEFT's files into dir's hf.AdapterDir and the weights merged
// (PEFT's merge_and_unload); then config.json (configJSON) and model.safetensors
// (WriteFolder) with the tensors specs lists, kernel saying which are kernels.
func SaveFolder(family, dir string, b *hf.Base, specs []hf.TensorSpec, kernel func(name string) bool, configJSON func() ([]byte, error)) error {
	if b == nil || b.Store() == nil {
		return fmt.Errorf("%s: SavePretrained: nil classifier or classifier without a Store", family)
	}
	store := b.Store()
	if a := b.Adapter(); a != nil {
		if err := hf.SaveAdapter(filepath.Join(dir, hf.AdapterDir), b); err != nil {
			return fmt.Errorf("%s: SavePretrained: %w", family, err)
		}
		merged, err := a.Merged(store)
		if err != nil {
			return fmt.Errorf("%s: SavePretrained: %w", family, err)
		}
		// The adapter knows float tensors only: BatchNorm's num_batches_tracked comes from
		// the classifier's Store.
		for _, spec := range specs {
			if v := store.GetVariable(hf.VarPath(spec.Name)); isTracked(spec.Name) && v != nil && v.HasValue() {
				value, err := v.Value()
				if err != nil {
					return fmt.Errorf("%s: SavePretrained: reading %s: %w", family, spec.Name, err)
				}
				n := tensors.FromScalar(tensors.MustCopyFlatData[int64](value)[0])
				if _, err := merged.CreateVariable(v.Path(), n); err != nil {
					return fmt.Errorf("%s: SavePretrained: %w", family, err)
				}
			}
		}
		store = merged
	}
	contents, err := configJSON()
	if err != nil {
		return fmt.Errorf("%s: SavePretrained: encoding config: %w", family, err)
	}
	if err := WriteFolder(dir, store, specs, kernel, contents); err != nil {
		return fmt.Errorf("%s: SavePretrained: %w", family, err)
	}
	return nil
}

// Prefixed is a weight plan's Canonical for a family whose base model saves its tensors
// under prefix ("resnet."): the names of a bare base model's file (which start at one of
// tops, "embedder." or "encoder.") get the prefix.
func Prefixed(prefix string, tops ...string) func(name string) string {
	return func(name string) string {
		for _, top := range tops {
			if strings.HasPrefix(name, top) {
				return prefix + name
			}
		}
		return name
	}
}

// LoadOptions configure a convolutional family's LoadPretrained.
type LoadOptions struct {
	// NumLabels overrides the config's num_labels for a fresh classifier (0 keeps the
	// config's); another count than the config's drops its label names (id2label).
	NumLabels int
	// LoadHead loads the classifier too, for a fine-tuned classifier such as one
	// SavePretrained wrote, instead of initialising it fresh; the folder must then have it,
	// shaped for num_labels.
	LoadHead bool
}

// Folder is a convolutional family's side of LoadPretrained.
type Folder[C any] struct {
	// Family is the package name that prefixes errors ("resnet").
	Family string
	// LoadConfig reads and validates a config.json (the family's LoadConfig).
	LoadConfig func(path string) (C, error)
	// Labels points at c's num_labels and id2label names.
	Labels func(c *C) (*int, *[]string)
	// Plan is the weight plan of c: the base model's float tensors required, the
	// classifier's too with withHead (else skipped).
	Plan func(c C, withHead bool) hf.WeightPlan
	// Kernel reports which tensors are convolution kernels.
	Kernel func(name string) bool
}

// Load is a convolutional family's LoadPretrained up to building the classifier: the
// folder's config.json and weights files (hf.WeightFiles), a fresh head of opts.NumLabels
// classes when that is another count (the names dropped), and the tensors of the plan read into
// store (a new Store when nil) by LoadWeights, the head's with opts.LoadHead. Every error names what is wrong and stops the
// load before any variable is written.
func (f Folder[C]) Load(dir string, store *model.Store, opts LoadOptions) (C, *model.Store, error) {
	numLabels := opts.NumLabels
	var zero C
	configPath, files, err := hf.WeightFiles(dir)
	if err != nil {
		return zero, nil, fmt.Errorf("%s: %w", f.Family, err)
	}
	cfg, err := f.LoadConfig(configPath)
	if err != nil {
		return zero, nil, err
	}
	if numLabels < 0 {
		return zero, nil, fmt.Errorf("%s: NumLabels must not be negative, got %d", f.Family, numLabels)
	}
	if n, names := f.Labels(&cfg); numLabels > 0 && numLabels != *n {
		*n, *names = numLabels, nil
	}
	if store == nil {
		store = model.NewStore()
	}
	if err := LoadWeights(f.Family, files, store, f.Plan(cfg, opts.LoadHead), f.Kernel); err != nil {
		return zero, nil, err
	}
	return cfg, store, nil
}

// Plan is the weight plan of a family whose base model has the tensors base (float ones:
// Floats) and whose classifier has head: head required withHead, else skipped; canonical
// names a bare base model's tensors, layers is named in errors.
func Plan(base, head []hf.TensorSpec, withHead bool, canonical func(string) string, layers int) hf.WeightPlan {
	plan := hf.WeightPlan{Required: Floats(base), Canonical: canonical, Layers: layers}
	if withHead {
		plan.Required = append(plan.Required, head...)
	} else {
		plan.Skipped = head
	}
	return plan
}
