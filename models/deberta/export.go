package deberta

import "github.com/goaccel/goaccel/models/internal/hf"

// SavePretrained writes the classifier as a Hugging Face folder of
// DebertaV2ForSequenceClassification (DebertaV2ForTokenClassification with Config.Head
// TokenClassification) that LoadPretrained (with LoadOptions.LoadHead and Head) and
// transformers' from_pretrained read: config.json (Config.JSON: id2label, label2id) and
// model.safetensors with HF tensor names, float32. All of the classifier's variables must
// have values (run the model once, or load it, first). Each file is written atomically. The
// tokenizer's files (spm.model) are not this package's business: copy them from the folder
// the model came from.
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
