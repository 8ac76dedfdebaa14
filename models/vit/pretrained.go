package vit

import (
	"strings"

	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/goaccel/goaccel/models/lora"
	"github.com/gomlx/gomlx/ml/model"
)

// LoadOptions configure LoadPretrained.
type LoadOptions struct {
	// NumLabels overrides the config's num_labels for a fresh classifier (0 keeps the
	// config's). Another count than the config's drops its label names (id2label), which
	// named the classes of another head.
	NumLabels int
	// LoadHead loads the classifier too (a fine-tuned ViTForImageClassification, such as one
	// SavePretrained wrote), instead of initialising it fresh; the folder must then have
	// "classifier.weight" and "classifier.bias" shaped for num_labels.
	LoadHead bool
}

// LoadPretrained loads a ViT Hugging Face folder (config.json with model_type "vit",
// model.safetensors or a sharded index) into store, under the variable paths of Classifier
// (VarPath), and returns the classifier; the image processor is not this package's business.
//
// The encoder's tensors ("vit.*", or without the prefix as a bare ViTModel saves them) must
// all be there; the classifier is loaded only with opts.LoadHead. ViTModel's pooler and the
// masked-image-modeling decoder are passed over. F16, BF16 and F64 tensors are converted to
// float32.
//
// Errors, each naming what is wrong, stop the load before any variable is written: a missing
// folder, config.json or weights file, a configuration this package cannot build (naming the
// config.json key), missing tensors, tensors whose shape or dtype differs from the config's,
// and tensors of another architecture (or more layers than num_hidden_layers).
func LoadPretrained(dir string, store *model.Store, opts LoadOptions) (*Classifier, error) {
	cfg, store, err := folder.LoadImage(dir, store, opts.NumLabels, opts.LoadHead)
	if err != nil {
		return nil, err
	}
	return NewClassifier(cfg, store)
}

// weightPlan says which tensors LoadPretrained reads: the encoder, and the classifier with
// withHead; the pooler and the other heads' tensors are passed over.
func (c Config) weightPlan(withHead bool) hf.WeightPlan {
	plan := hf.WeightPlan{Required: c.EncoderTensors(), Canonical: c.canonicalName, Ignore: c.ignoredTensor, Layers: c.NumHiddenLayers}
	if withHead {
		plan.Required = append(plan.Required, c.ClassifierTensors()...)
	} else {
		plan.Skipped = c.ClassifierTensors()
	}
	return plan
}

// folder is ViT's side of LoadPretrained and SavePretrained.
var folder = hf.Folder[Config]{Family: "vit", LoadConfig: LoadConfig, WeightPlan: Config.weightPlan,
	Tensors: Config.Tensors, JSON: Config.JSON, Task: func(c *Config) hf.TaskFields {
		return hf.TaskFields{NumLabels: &c.NumLabels, Labels: &c.Labels, Architectures: c.architectures}
	}}

// SavePretrained writes the classifier as a Hugging Face folder of ViTForImageClassification
// that LoadPretrained (with LoadOptions.LoadHead) and transformers'
// AutoModelForImageClassification read: config.json (Config.JSON: id2label, label2id,
// problem_type) and model.safetensors with HF tensor names, float32. All of the classifier's
// variables must have values (run the model once, or load it, first). Each file is written
// atomically. The image processor's file is not this package's business.
//
// A classifier with a LoRA adapter is written merged (each targeted weight W +
// (alpha/r)·B·A, PEFT's merge_and_unload), and its adapter is written too, as PEFT's files,
// into the subfolder "adapter" (AdapterDir), which peft.PeftModel.from_pretrained reads onto
// the base model.
func SavePretrained(dir string, c *Classifier) error {
	if c == nil {
		return hf.SaveFolder(folder, dir, Config{}, nil)
	}
	return hf.SaveFolder(folder, dir, c.Config, &c.Base)
}

// AdapterDir is the subfolder of a SavePretrained folder that holds a LoRA classifier's
// adapter, as PEFT's files.
const AdapterDir = hf.AdapterDir

// LoRABase describes the classifier of c to models/lora: its model_type, PEFT's task type
// of an image classifier (none: task_type null, a PeftModel), its linear layers (each layer's
// query, key, value, attention.output.dense, intermediate.dense and output.dense; the patch
// embedding's convolution is not one) with their names in transformers 5.25's modules for
// PEFT (q_proj, k_proj, v_proj, o_proj, mlp.fc1, mlp.fc2: a target may name either, and
// adapter_config.json and the adapter's tensors use these), its head for PEFT (the
// classifier, modules_to_save, trained and saved with the adapter) and its other tensors,
// frozen.
func (c Config) LoRABase(baseNameOrPath string) lora.Base {
	b := hf.LoRABaseOf(c.ModelType, baseNameOrPath, hf.ImageClassification, c.Tensors(), c.ClassifierTensors())
	b.PEFTModule = peftModule
	return b
}

// peftModules are the modules of a ViT layer whose names transformers 5.25 changed: its
// ViTForImageClassification loads the tensors of "vit.encoder.layer.N.<legacy>" into
// "vit.layers.N.<module>", and PEFT names the modules.
var peftModules = map[string]string{
	"attention.attention.query": "attention.q_proj", "attention.attention.key": "attention.k_proj",
	"attention.attention.value": "attention.v_proj", "attention.output.dense": "attention.o_proj",
	"intermediate.dense": "mlp.fc1", "output.dense": "mlp.fc2",
}

// peftDINOv2Modules are DINOv2's: its layers keep "dinov2.encoder.layer.N.", and SwiGLU's
// weights_out is down_proj (weights_in is split into gate_proj and up_proj, so an adapter on
// it has no PEFT module: the name is kept).
var peftDINOv2Modules = map[string]string{
	"attention.attention.query": "attention.q_proj", "attention.attention.key": "attention.k_proj",
	"attention.attention.value": "attention.v_proj", "attention.output.dense": "attention.o_proj",
	"mlp.weights_out": "mlp.down_proj",
}

// peftModule is a linear layer's module name as PEFT sees it in transformers 5.25's ViT and
// DINOv2 (lora.Base.PEFTModule): "vit.encoder.layer.3.attention.attention.query" is
// "vit.layers.3.attention.q_proj", "dinov2.encoder.layer.3.attention.attention.query"
// "dinov2.encoder.layer.3.attention.q_proj"; other names are kept.
func peftModule(module string) string {
	for _, m := range []struct {
		from, to string
		renamed  map[string]string
	}{{"vit.encoder.layer.", "vit.layers.", peftModules}, {"dinov2.encoder.layer.", "dinov2.encoder.layer.", peftDINOv2Modules}} {
		rest, ok := strings.CutPrefix(module, m.from)
		if !ok {
			continue
		}
		index, legacy, ok := strings.Cut(rest, ".")
		if renamed, known := m.renamed[legacy]; ok && known {
			return m.to + index + "." + renamed
		}
	}
	return module
}

// LoadAdapter attaches to the classifier the LoRA adapter saved in dir (PEFT's
// adapter_config.json and adapter_model.safetensors) and loads its tensors and the
// classifier's into the classifier's Store; nothing is attached or written on error.
func LoadAdapter(dir string, c *Classifier) (*lora.Adapter, error) {
	return hf.LoadAdapter(dir, &c.Base)
}

// SaveAdapter writes the classifier's LoRA adapter into dir as PEFT's files
// (adapter_config.json, adapter_model.safetensors: A and B of the targeted layers and the
// classifier), which peft.PeftModel.from_pretrained reads onto the base model.
func SaveAdapter(dir string, c *Classifier) error { return hf.SaveAdapter(dir, &c.Base) }
