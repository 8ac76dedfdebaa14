package lora

import (
	"fmt"
	"strings"

	"github.com/gomlx/gomlx/ml/model"
)

// What a family's AttachLoRA, LoadAdapter and LoRABase share: the family describes its model
// (Base), these do the rest.

// Attach returns a new adapter of cfg on base (New) with the flags of store's variables set
// (Freeze): what a family's AttachLoRA does once it has described itself.
func Attach(cfg Config, base Base, store *model.Store) (*Adapter, error) {
	a, err := New(cfg, base)
	if err != nil {
		return nil, err
	}
	a.Freeze(store)
	return a, nil
}

// LoadFrom reads the adapter folder dir (PEFT's files) onto the model that base describes
// (given the folder's base_model_name_or_path) and writes its tensors into store: ReadConfig,
// New and Load, with their errors. Every frozen tensor of the base must have a value in store
// already: one that does not (a pooler the checkpoint lacks, which a fresh model would draw
// at random) is not in PEFT's files either, so the adapter could not give the model it was
// trained with, and the error names it. Nothing is written on error.
func LoadFrom(dir string, base func(nameOrPath string) Base, store *model.Store) (*Adapter, error) {
	saved, err := ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	b := base(saved.BaseModel)
	a, err := New(saved.Config, b)
	if err != nil {
		return nil, &adapterError{dir, err}
	}
	var absent []string
	for _, t := range b.Frozen {
		if v := store.GetVariable(varPath(t.Name)); v == nil || !v.HasValue() {
			absent = append(absent, t.Name)
		}
	}
	if len(absent) > 0 {
		return nil, fmt.Errorf("adapter %s: the base model has no %s: frozen while the adapter trained and not saved with it "+
			"(PEFT's modules_to_save does not name it), so it would start afresh and the model would not be the one trained: "+
			"load the merged folder SavePretrained wrote, or a base that has it", dir, listNames(absent))
	}
	if err := a.Load(dir, store); err != nil {
		return nil, err
	}
	return a, nil
}

// adapterError names the adapter folder whose configuration does not fit the base.
type adapterError struct {
	dir string
	err error
}

func (e *adapterError) Error() string { return "adapter " + e.dir + ": " + e.err.Error() }
func (e *adapterError) Unwrap() error { return e.err }

// DenseLayers returns the linear layers among a model's tensors: every two-dimensional
// "M.weight" ([out, in]) whose module's last part is not an embedding table (does not end
// with "embeddings", as "word_embeddings", "tok_embeddings" and "rel_embeddings" do), with
// or without a bias. It suits families whose only other 2-D tensors are embeddings.
func DenseLayers(tensors []Tensor) []Linear {
	var out []Linear
	for _, t := range tensors {
		module, ok := strings.CutSuffix(t.Name, ".weight")
		if !ok || len(t.Dims) != 2 {
			continue
		}
		if strings.HasSuffix(module[strings.LastIndex(module, ".")+1:], "embeddings") {
			continue
		}
		out = append(out, Linear{Module: module, In: t.Dims[1], Out: t.Dims[0]})
	}
	return out
}

// Slot is where a classifier of a family keeps its one adapter (nil: none), and what its
// AttachLoRA, LoadAdapter, SaveAdapter and SavePretrained's merge do with it; family (the
// package's name) starts their errors.
type Slot struct {
	adapter *Adapter
}

// Adapter returns the slot's adapter, nil when it has none (a nil Adapter's Linear and
// Freeze do nothing).
func (s *Slot) Adapter() *Adapter { return s.adapter }

// Attach puts a new adapter of cfg on base into the slot (Attach); the slot must be empty.
func (s *Slot) Attach(family string, cfg Config, base Base, store *model.Store) (*Adapter, error) {
	if s.adapter != nil {
		return nil, fmt.Errorf("%s: AttachLoRA: the classifier already has a LoRA adapter (targets %q)", family, s.adapter.Targets())
	}
	a, err := Attach(cfg, base, store)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", family, err)
	}
	s.adapter = a
	return a, nil
}

// Load puts the adapter saved in dir into the slot (LoadFrom); the slot must be empty.
func (s *Slot) Load(family, dir string, base func(nameOrPath string) Base, store *model.Store) (*Adapter, error) {
	if s.adapter != nil {
		return nil, fmt.Errorf("%s: LoadAdapter %s: the classifier already has a LoRA adapter", family, dir)
	}
	a, err := LoadFrom(dir, base, store)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", family, err)
	}
	s.adapter = a
	return a, nil
}

// Save writes the slot's adapter into dir as PEFT's files (Adapter.Save).
func (s *Slot) Save(family, dir string, store *model.Store) error {
	if s.adapter == nil {
		return fmt.Errorf("%s: SaveAdapter: the classifier has no LoRA adapter (AttachLoRA or LoadAdapter first)", family)
	}
	if err := s.adapter.Save(dir, store); err != nil {
		return fmt.Errorf("%s: %w", family, err)
	}
	return nil
}

// Merged writes the slot's adapter into adapterDir (Save) and returns a new Store with it
// folded into the base weights (Adapter.Merged), what SavePretrained writes; nil without an
// adapter.
func (s *Slot) Merged(family, adapterDir string, store *model.Store) (*model.Store, error) {
	if s.adapter == nil {
		return nil, nil
	}
	if err := s.Save(family, adapterDir, store); err != nil {
		return nil, err
	}
	merged, err := s.adapter.Merged(store)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", family, err)
	}
	return merged, nil
}
