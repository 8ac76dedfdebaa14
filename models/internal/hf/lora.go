package hf

import "github.com/goaccel/goaccel/models/lora"

// AdapterDir is the subfolder of a SavePretrained folder that holds a LoRA classifier's
// adapter, as PEFT's files, in every family. (Not the folder itself: transformers, finding
// adapter_config.json in a folder, would load the base model it names instead of the merged
// weights.)
const AdapterDir = "adapter"

// LoRATask is the PEFT task type of a classifier with head h.
func LoRATask(h Head) string {
	switch h {
	case TokenClassification:
		return lora.TokenCls
	case ImageClassification:
		return lora.ImageCls
	}
	return lora.SeqCls
}

// LoRABaseOf is the lora.Base of a classifier whose head for PEFT is its final classifier
// and whose linear layers are its 2-D weights that are not embeddings (lora.DenseLayers):
// model_type modelType, the task type of head, all the classifier's tensors, the
// classifier's own tensors (trained and saved with the adapter, as PEFT's modules_to_save
// "classifier" and "score", matched as name suffixes) and every other tensor frozen, a
// prediction head or pooler before the classifier included (PEFT does not name them).
func LoRABaseOf(modelType, nameOrPath string, head Head, all, classifier []TensorSpec) lora.Base {
	b := lora.Base{ModelType: modelType, NameOrPath: nameOrPath, TaskType: LoRATask(head), Dropout: dropout}
	isHead := map[string]bool{}
	for _, t := range classifier {
		isHead[t.Name] = true
		b.Head = append(b.Head, lora.Tensor{Name: t.Name, Dims: t.Dims})
	}
	for _, t := range all {
		if !isHead[t.Name] {
			b.Frozen = append(b.Frozen, lora.Tensor{Name: t.Name, Dims: t.Dims})
		}
	}
	b.Linears = lora.DenseLayers(b.Frozen)
	return b
}
