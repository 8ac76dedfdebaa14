// Package hf is what every Hugging Face model family of goaccel shares (models/bert,
// models/deberta, models/modernbert, and a user's own family through models/auto): reading a
// config.json's task keys (id2label, label2id, num_labels, problem_type, architectures) and
// writing them back, floats as Python reads them (PyFloat); the heads (Head); the weights of
// a folder (model.safetensors or a sharded model.safetensors.index.json) read against a
// WeightPlan and written back by WriteFolder; the variable-name convention (VarPath, HFName);
// dropout as torch.nn.Dropout (Dropout); the activations config.json names (Activate); the
// LoRA description of a classifier (LoRABaseOf); and the steps of a family's LoadPretrained
// and SavePretrained (Folder).
//
// No family imports another: each imports this package. It is internal to models/, so
// models/auto re-exports what a family outside this module needs.
package hf
