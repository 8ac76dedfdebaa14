package hf

import (
	"fmt"

	"github.com/goaccel/goaccel/models/internal/half"
	"github.com/goaccel/goaccel/models/lora"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/ml/model"
)

// ClassifierConfig is what Base asks of a family's configuration.
type ClassifierConfig interface {
	// Tensors lists every tensor of the classifier.
	Tensors() []TensorSpec
	// LoRABase describes the classifier to models/lora.
	LoRABase(baseNameOrPath string) lora.Base
}

// Base is the part of a family's classifier that every family has: the Store of its
// variables, the dtype of its matrix products (half.Compute) and its LoRA adapter (a
// lora.Slot). Embedded in the family's Classifier, it gives it Store, SetComputeDType,
// ComputeDType, NumParameters, AttachLoRA and Adapter; the family's layers reach the compute
// dtype and the adapter through Compute and Slot.
type Base struct {
	family  string
	store   *model.Store
	compute half.Compute
	slot    lora.Slot
	config  func() ClassifierConfig
}

// NewBase is the Base of a classifier of family (the package name, which starts errors) whose
// variables live in store (a new Store when nil) and whose configuration config returns
// (the Classifier's Config field, read when a method needs it).
func NewBase(family string, store *model.Store, config func() ClassifierConfig) Base {
	if store == nil {
		store = model.NewStore()
	}
	return Base{family: family, store: store, config: config}
}

// Store returns the model.Store that holds the classifier's variables.
func (b *Base) Store() *model.Store { return b.store }

// SetComputeDType selects the dtype of the matrix products: Float32 (the default), or
// BFloat16 / Float16 for mixed precision. Variables stay float32 (the master weights the
// optimizer updates) and are converted where used; the products return float32, and what the
// layers keep for the backward pass between them is in the compute dtype, while LayerNorm,
// the softmax, the activations and the residual stream stay float32 (as torch.autocast
// computes them). Encoder and Logits return float32. Call it before building any graph.
func (b *Base) SetComputeDType(dtype dtypes.DType) error { return b.compute.Set(b.family, dtype) }

// ComputeDType returns the dtype of the matrix products (Float32 unless SetComputeDType
// changed it).
func (b *Base) ComputeDType() dtypes.DType { return b.compute.DType() }

// NumParameters is the number of scalar weights of the classifier.
func (b *Base) NumParameters() int {
	n := 0
	for _, t := range b.config().Tensors() {
		n += shapes.Make(dtypes.Float32, t.Dims...).Size()
	}
	return n
}

// AttachLoRA attaches a new LoRA adapter of cfg (zero fields: PEFT's defaults for the
// family, see lora.DefaultTargetModules) to the classifier: from then on the targeted linear
// layers compute W + (alpha/r)·B·A, the adapter's A and B and the classifier train, and every
// other variable is frozen (no gradient, no optimizer state), a pooler or prediction head
// before the classifier included: PEFT's sequence and token classifiers train the modules
// named "classifier" and "score" only (the Config's LoRABase). baseNameOrPath is written into
// adapter_config.json as base_model_name_or_path ("" writes null). A target module that names
// none of the linear layers is an error that lists them. Call it before any graph of the
// classifier is built; a classifier has at most one adapter.
func (b *Base) AttachLoRA(cfg lora.Config, baseNameOrPath string) (*lora.Adapter, error) {
	return b.slot.Attach(b.family, cfg, b.config().LoRABase(baseNameOrPath), b.store)
}

// Adapter returns the classifier's LoRA adapter, nil when it has none.
func (b *Base) Adapter() *lora.Adapter { return b.slot.Adapter() }

// Compute is b's compute dtype, for the family's layers.
func Compute(b *Base) *half.Compute { return &b.compute }

// LoadAdapter attaches to the classifier of b the LoRA adapter saved in dir (PEFT's
// adapter_config.json and adapter_model.safetensors) and loads its tensors and the head's
// into the classifier's Store; nothing is attached or written on error.
func LoadAdapter(dir string, b *Base) (*lora.Adapter, error) {
	return b.slot.Load(b.family, dir, b.config().LoRABase, b.store)
}

// SaveAdapter writes the LoRA adapter of the classifier of b into dir as PEFT's files.
func SaveAdapter(dir string, b *Base) error { return b.slot.Save(b.family, dir, b.store) }

// SaveFolder is SavePretrained of the classifier of b whose configuration is cfg (see
// Folder.Save); b nil is an error.
func SaveFolder[C any](f Folder[C], dir string, cfg C, b *Base) error {
	if b == nil {
		return fmt.Errorf("%s: SavePretrained: nil classifier or classifier without a Store", f.Family)
	}
	return f.Save(dir, cfg, b.store, &b.slot)
}
