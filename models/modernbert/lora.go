package modernbert

import (
	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/goaccel/goaccel/models/lora"
)

// LoRA in ModernBERT: the classifier describes itself to models/lora once (LoRABase) and its
// linear-layer function hands each layer's output to the attached adapter, as in every family.
// Classifier.AttachLoRA's defaults are r 8, lora_alpha 8, no dropout and the target module
// Wqkv (lora.DefaultTargetModules); the linear layers a target may name are Wqkv, Wo, Wi and
// head.dense. Attach an adapter before building any graph.

// LoRABase describes the classifier of c to models/lora: model_type "modernbert", the task
// type of its Head, its linear layers (each layer's attn.Wqkv, attn.Wo, mlp.Wi and mlp.Wo,
// and head.dense; with or without biases), its head for PEFT (the classifier, which trains
// and is saved with the adapter) and its other tensors, frozen: as PEFT's modules_to_save
// ("classifier", "score", matched as name suffixes) does not name head.dense and head.norm,
// they stay as loaded (or as first initialised, for a checkpoint without them).
func (c Config) LoRABase(baseNameOrPath string) lora.Base {
	return hf.LoRABaseOf("modernbert", baseNameOrPath, c.Head, c.Tensors(), c.ClassifierTensors())
}

// LoadAdapter attaches to the classifier the LoRA adapter saved in dir (PEFT's
// adapter_config.json and adapter_model.safetensors, as SaveAdapter or PEFT's save_pretrained
// write them) and loads its tensors and the classifier's into the classifier's Store. Errors
// name what does not fit (another task type, a target module ModernBERT lacks, tensors of
// other names or shapes, a configuration goaccel does not compute); nothing is attached or
// written on error.
func LoadAdapter(dir string, c *Classifier) (*lora.Adapter, error) {
	return hf.LoadAdapter(dir, &c.Base)
}

// AdapterDir is the subfolder of a SavePretrained folder that holds a LoRA classifier's
// adapter, as PEFT's files.
const AdapterDir = hf.AdapterDir

// SaveAdapter writes the classifier's LoRA adapter into dir as PEFT's files
// (adapter_config.json, adapter_model.safetensors: A and B of the targeted layers and the
// classifier), which peft.PeftModel.from_pretrained reads onto the base model. The
// classifier must have an adapter and values for its variables.
func SaveAdapter(dir string, c *Classifier) error { return hf.SaveAdapter(dir, &c.Base) }
