package convnext

import (
	"github.com/goaccel/goaccel/models/internal/convnet"
	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/goaccel/goaccel/models/lora"
	"github.com/gomlx/gomlx/ml/model"
)

// LoadOptions configure LoadPretrained: NumLabels for a fresh classifier of another count
// of classes, LoadHead to load the folder's classifier too.
type LoadOptions = convnet.LoadOptions

// LoadPretrained loads a ConvNeXt or ConvNeXt-V2 Hugging Face folder (config.json with
// model_type "convnext" or "convnextv2", model.safetensors or a sharded index) into store,
// under the variable paths of Classifier, and returns the classifier. The image processor
// is not this package's business.
//
// The base model's tensors ("convnext.*" or "convnextv2.*", or without the prefix as a bare
// ConvNextModel saves them) must all be there; the classifier is loaded only with
// opts.LoadHead. Kernels are transposed to HWIO once, here; F16, BF16 and F64 tensors are
// converted to float32. Errors, each naming what is wrong, stop the load before any variable
// is written: a missing folder, config.json or weights, a configuration this package cannot
// build (naming the config.json key), missing tensors, tensors whose shape or dtype differs
// from the config's, and tensors of another architecture.
func LoadPretrained(dir string, store *model.Store, opts LoadOptions) (*Classifier, error) {
	cfg, store, err := folder.Load(dir, store, opts)
	if err != nil {
		return nil, err
	}
	return NewClassifier(cfg, store)
}

// folder is the package's side of LoadPretrained.
var folder = convnet.Folder[Config]{Family: "convnext", LoadConfig: LoadConfig, Kernel: isKernel,
	Labels: func(c *Config) (*int, *[]string) { return &c.NumLabels, &c.Labels },
	Plan: func(c Config, withHead bool) hf.WeightPlan {
		return convnet.Plan(c.EncoderTensors(), c.ClassifierTensors(), withHead, convnet.Prefixed(c.prefix(), "embeddings.", "encoder.", "layernorm."), c.NumStages)
	}}

// SavePretrained writes the classifier as a Hugging Face folder of
// ConvNextForImageClassification (ConvNextV2ForImageClassification for V2) that
// LoadPretrained (with LoadHead) and transformers' from_pretrained read: config.json
// (Config.JSON) and model.safetensors with HF tensor names and PyTorch's layouts, float32.
// All of the classifier's variables must have values (run the model once, or load it,
// first). Each file is written atomically.
//
// A classifier with a LoRA adapter is written merged (each targeted weight W +
// (alpha/r)·B·A, PEFT's merge_and_unload), and its adapter is written too, as PEFT's files,
// into the subfolder "adapter".
func SavePretrained(dir string, c *Classifier) error {
	if c == nil {
		return convnet.SaveFolder("convnext", dir, nil, nil, nil, nil)
	}
	return convnet.SaveFolder("convnext", dir, &c.Base, c.Config.Tensors(), isKernel, c.Config.JSON)
}

// LoRABase describes the classifier to models/lora: its linear layers (each block's
// pwconv1 and pwconv2: PEFT 0.21 has no default targets for ConvNeXt, and its convolutions
// are not given to the adapter (lora.Adapter.Conv), so models/lora's default targets are
// these two), its head for PEFT (the classifier, which trains and is saved with the
// adapter) and its other tensors, frozen.
func (c Config) LoRABase(baseNameOrPath string) lora.Base {
	return hf.LoRABaseOf(c.ModelType, baseNameOrPath, hf.ImageClassification, convnet.StoreLayout(c.Tensors(), isKernel), c.ClassifierTensors())
}

// LoadAdapter attaches to the classifier the LoRA adapter saved in dir (PEFT's
// adapter_config.json and adapter_model.safetensors) and loads its tensors and the
// classifier's into the classifier's Store; nothing is attached or written on error.
func LoadAdapter(dir string, c *Classifier) (*lora.Adapter, error) {
	return hf.LoadAdapter(dir, &c.Base)
}

// SaveAdapter writes the classifier's LoRA adapter into dir as PEFT's files, which
// peft.PeftModel.from_pretrained reads onto the base model (PEFT has no task type for image
// classification: none is written, and modules_to_save is the classifier).
func SaveAdapter(dir string, c *Classifier) error { return hf.SaveAdapter(dir, &c.Base) }

// AdapterDir is the subfolder of a SavePretrained folder that holds a LoRA classifier's
// adapter, as PEFT's files.
const AdapterDir = hf.AdapterDir
