package hf

import "strings"

// Variable names follow Hugging Face's tensor names one to one in every family: the tensor
// "deberta.encoder.layer.3.attention.self.query_proj.weight" is the model.Store variable
// "/deberta/encoder/layer/3/attention/self/query_proj/weight" (dots become scope
// separators), and dense weights keep PyTorch's [out, in] layout, so no tensor is transposed
// or renamed on the way in or out. Each family's VarPath and HFName have the shape of Names'
// methods: a path or a name, and whether it is one of the family's.

// VarPath is the model.Store variable path (with a leading "/") of a HF tensor name, its dots
// made scope separators: "model.final_norm.weight" -> "/model/final_norm/weight".
func VarPath(hfName string) string { return "/" + strings.ReplaceAll(hfName, ".", "/") }

// HFName is the inverse of VarPath, for a path with or without the leading "/"; false for a
// path that no tensor name gives (empty, an empty scope, or a scope with a dot).
func HFName(varPath string) (string, bool) {
	p := strings.TrimPrefix(varPath, "/")
	if p == "" || strings.Contains(p, ".") || strings.Contains(p, "//") || strings.HasSuffix(p, "/") {
		return "", false
	}
	return strings.ReplaceAll(p, "/", "."), true
}

// Names is the naming of a family whose classifier's tensors all lie under a few top-level
// modules (models/deberta: "deberta", "pooler", "classifier").
type Names struct {
	// Modules are the first parts of the family's tensor names.
	Modules []string
}

// owns reports whether the HF tensor name lies under one of n's modules.
func (n Names) owns(name string) bool {
	top, _, ok := strings.Cut(name, ".")
	if !ok {
		return false
	}
	for _, m := range n.Modules {
		if top == m {
			return true
		}
	}
	return false
}

// VarPath returns the model.Store variable path of a HF tensor name (see the package's
// VarPath); false for a name outside the family's modules or one no path gives (an empty
// part, a "/").
func (n Names) VarPath(hfName string) (string, bool) {
	if !n.owns(hfName) || strings.Contains(hfName, "/") || strings.Contains(hfName, "..") || strings.HasSuffix(hfName, ".") {
		return "", false
	}
	return VarPath(hfName), true
}

// HFName is the inverse of VarPath: the HF tensor name of a variable path, with or without
// the leading "/"; false for a path outside the family's modules (optimizer state, the random
// state, another model's variables).
func (n Names) HFName(varPath string) (string, bool) {
	name, ok := HFName(varPath)
	if !ok || !n.owns(name) {
		return "", false
	}
	return name, true
}
