package bert

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/goaccel/goaccel/checkpoint"
	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/internal/fsutil"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// The reading and writing of a Hugging Face folder's weights that the other model packages
// (models/modernbert, models/deberta) share: which tensors of model.safetensors a model reads,
// the check of the file's header against them before any variable is written, and the
// folder SavePretrained writes.

// FolderFiles returns the config.json and model.safetensors paths of a model folder, with an
// error when the folder or its model.safetensors (a single file; sharded weights are not
// read) is missing. config.json is read, and its absence reported, by the family's LoadConfig.
func FolderFiles(dir string) (config, weights string, err error) {
	if info, err := os.Stat(dir); err != nil {
		return "", "", fmt.Errorf("model folder: %w", err)
	} else if !info.IsDir() {
		return "", "", fmt.Errorf("model folder %s is not a directory", dir)
	}
	weights = filepath.Join(dir, "model.safetensors")
	if _, err := os.Stat(weights); err != nil {
		return "", "", fmt.Errorf("model folder %s has no model.safetensors (only a single safetensors file is read): %w", dir, err)
	}
	return filepath.Join(dir, "config.json"), weights, nil
}

// WeightPlan says which tensors of a model.safetensors file a model reads, by canonical name
// (Canonical applied).
type WeightPlan struct {
	// Required are read and must all be there, with these shapes (the encoder; the
	// classifier when it is loaded).
	Required []TensorSpec
	// Whole are groups read whole when any of their tensors is there (a head that a
	// masked-LM checkpoint has and a bare encoder lacks); half a group is missing tensors.
	Whole [][]TensorSpec
	// Skipped are known but not read (the classifier of a fine-tuned model when a fresh one
	// is wanted).
	Skipped []TensorSpec
	// Canonical maps a file's tensor name to the model's (a bare encoder's names without
	// the model prefix); nil keeps names as they are.
	Canonical func(name string) string
	// Ignore reports the canonical names passed over silently (other tasks' heads); nil
	// passes over none.
	Ignore func(name string) bool
	// Layers is num_hidden_layers, named in the message on unexpected tensors.
	Layers int
}

// canonical applies p.Canonical.
func (p WeightPlan) canonical(name string) string {
	if p.Canonical == nil {
		return name
	}
	return p.Canonical(name)
}

// LoadWeights reads the tensors of the model.safetensors file at path that plan says, into
// store under the variable paths varPath gives (by canonical name), as float32 (F16, BF16
// and F64 tensors are converted). It first checks the file's header against the plan, and
// stops before any variable is written with an error that names the file, its config.json
// and every missing tensor, tensor of the wrong shape or dtype, and unexpected tensor.
func LoadWeights(path string, store *model.Store, plan WeightPlan, varPath func(name string) string) error {
	load, err := checkWeights(path, plan)
	if err != nil {
		return err
	}
	mapping := func(name string) (string, bool) {
		name = plan.canonical(name)
		if !load[name] {
			return "", false
		}
		return varPath(name), true
	}
	toFloat32 := func(name string, t *tensors.Tensor) (*tensors.Tensor, error) {
		return safetensors.ConvertFloat(t, dtypes.Float32)
	}
	_, err = checkpoint.ImportWeights(path, store, mapping, toFloat32) // names the file, tensor and variable
	return err
}

// checkWeights checks the tensors of a model.safetensors file against plan, reading only its
// header, and returns the canonical names of the tensors to load.
func checkWeights(path string, plan WeightPlan) (map[string]bool, error) {
	st, err := safetensors.Open(path)
	if err != nil {
		return nil, err // names the file
	}
	defer func() { _ = st.Close() }()
	found := map[string]safetensors.TensorInfo{}
	for _, info := range st.Header().Tensors {
		found[plan.canonical(info.Name)] = info
	}
	required := slices.Clone(plan.Required)
	known := map[string]bool{}
	for _, group := range plan.Whole {
		present := false
		for _, spec := range group {
			known[spec.Name] = true
			_, ok := found[spec.Name]
			present = present || ok
		}
		if present {
			required = append(required, group...)
		}
	}
	for _, spec := range plan.Skipped {
		known[spec.Name] = true
	}
	load := map[string]bool{}
	var missing, problems, unexpected []string
	for _, spec := range required {
		known[spec.Name] = true
		info, ok := found[spec.Name]
		if !ok {
			missing = append(missing, spec.Name)
			continue
		}
		load[spec.Name] = true
		if !slices.Equal(info.Dims, spec.Dims) {
			problems = append(problems, fmt.Sprintf("%s has shape %v, config wants %v", info.Name, info.Dims, spec.Dims))
		}
		if !info.DType.IsFloat() {
			dtype, _ := safetensors.DTypeName(info.DType)
			problems = append(problems, fmt.Sprintf("%s has dtype %s, want a float type (F32, F16, BF16, F64)", info.Name, dtype))
		}
	}
	for name, info := range found {
		if !known[name] && (plan.Ignore == nil || !plan.Ignore(name)) {
			unexpected = append(unexpected, info.Name)
		}
	}
	if err := weightsMismatch(path, filepath.Join(filepath.Dir(path), "config.json"), missing, problems, unexpected, plan.Layers); err != nil {
		return nil, err
	}
	return load, nil
}

// weightsMismatch is the error on weights files that do not match their config.json: the
// missing tensors, those of the wrong shape or dtype and the unexpected ones, each list
// sorted and shortened; nil when all three are empty.
func weightsMismatch(files, configPath string, missing, problems, unexpected []string, layers int) error {
	sort.Strings(missing)
	sort.Strings(unexpected)
	var msgs []string
	if len(missing) > 0 {
		msgs = append(msgs, fmt.Sprintf("%d missing tensors: %s", len(missing), listNames(missing)))
	}
	if len(problems) > 0 {
		msgs = append(msgs, fmt.Sprintf("%d tensors with the wrong shape or dtype: %s", len(problems), listNames(problems)))
	}
	if len(unexpected) > 0 {
		msgs = append(msgs, fmt.Sprintf("%d unexpected tensors (another architecture or configuration, such as biases or more layers than num_hidden_layers=%d): %s",
			len(unexpected), layers, listNames(unexpected)))
	}
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("weights in %s do not match %s: %s", files, configPath, strings.Join(msgs, "; "))
}

// WriteFolder writes a Hugging Face model folder into dir: config.json (configJSON) and
// model.safetensors with the tensors specs lists, read from store's variables at varPath
// (by HF name), float32, sorted by name, with the metadata {"format": "pt"} transformers
// wants. Every variable must have a value of the spec's shape. Each file is written
// atomically.
func WriteFolder(dir string, store *model.Store, specs []TensorSpec, varPath func(name string) string, configJSON []byte) error {
	var list []safetensors.Named
	for _, spec := range specs {
		path := varPath(spec.Name)
		v := store.GetVariable(path)
		if v == nil || !v.HasValue() {
			return fmt.Errorf("variable %s (%s) has no value yet", path, spec.Name)
		}
		if !slices.Equal(v.Shape().Dimensions, spec.Dims) || v.Shape().DType != dtypes.Float32 {
			return fmt.Errorf("variable %s is %s, config wants float32 %v", path, v.Shape(), spec.Dims)
		}
		value, err := v.Value()
		if err != nil {
			return fmt.Errorf("reading variable %s: %w", path, err)
		}
		list = append(list, safetensors.Named{Name: spec.Name, Tensor: value})
	}
	slices.SortFunc(list, func(a, b safetensors.Named) int { return strings.Compare(a.Name, b.Name) })
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, "config.json"), append(slices.Clone(configJSON), '\n')); err != nil {
		return err
	}
	return fsutil.WriteAtomic(filepath.Join(dir, "model.safetensors"), func(w io.Writer) error {
		_, err := safetensors.Write(w, list, map[string]string{"format": "pt"})
		return err
	})
}

// PyFloat is a float64 that JSON writes as Python reads a float, with a decimal point or an
// exponent: 2 is written 2.0. transformers 5's configurations are strict dataclasses, which
// refuse an int where a float is declared.
type PyFloat float64

// MarshalJSON writes f with a decimal point or an exponent.
func (f PyFloat) MarshalJSON() ([]byte, error) {
	out, err := json.Marshal(float64(f))
	if err == nil && !strings.ContainsAny(string(out), ".eE") {
		out = append(out, ".0"...)
	}
	return out, err
}
