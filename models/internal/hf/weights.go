package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/goaccel/goaccel/checkpoint"
	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/internal/fsutil"
	"github.com/goaccel/goaccel/internal/localpath"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// TensorSpec names one tensor of a model in Hugging Face layout.
type TensorSpec struct {
	// Name is the HF tensor name, e.g. "bert.encoder.layer.0.output.dense.weight".
	Name string
	// Dims is the tensor's shape (PyTorch layout: dense weights are [out, in]).
	Dims []int
}

// TensorList collects the tensors of a model in Hugging Face layout, as the families'
// EncoderTensors and the like list them.
type TensorList []TensorSpec

// Add appends the tensor name of shape dims.
func (l *TensorList) Add(name string, dims ...int) { *l = append(*l, TensorSpec{name, dims}) }

// Linear appends a torch.nn.Linear's weight [out, in] and, with bias, its bias [out].
func (l *TensorList) Linear(name string, out, in int, bias bool) {
	l.Add(name+".weight", out, in)
	if bias {
		l.Add(name+".bias", out)
	}
}

// Norm appends a LayerNorm's weight [width] and, with bias, its bias.
func (l *TensorList) Norm(name string, width int, bias bool) {
	l.Add(name+".weight", width)
	if bias {
		l.Add(name+".bias", width)
	}
}

// WeightFiles returns the config.json path and the safetensors files of a model folder:
// model.safetensors, or the files a sharded model.safetensors.index.json's weight_map names
// (sorted, each inside dir). The error names the folder, the index file and its entry, or
// says that the folder has its weights in another format only (with the command that
// converts them) or none at all. config.json is read, and its absence reported, by the
// family's LoadConfig.
func WeightFiles(dir string) (config string, files []string, err error) {
	if info, err := os.Stat(dir); err != nil {
		return "", nil, fmt.Errorf("model folder: %w", err)
	} else if !info.IsDir() {
		return "", nil, fmt.Errorf("model folder %s is not a directory", dir)
	}
	config = filepath.Join(dir, "config.json")
	single := filepath.Join(dir, "model.safetensors")
	if _, err := os.Stat(single); err == nil {
		return config, []string{single}, nil
	}
	index := filepath.Join(dir, "model.safetensors.index.json")
	contents, err := os.ReadFile(index)
	if err == nil {
		files, err := shardFiles(dir, index, contents)
		return config, files, err
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", nil, fmt.Errorf("reading %s: %w", index, err)
	}
	for _, other := range []string{"pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack", "model.ckpt.index"} {
		if _, err := os.Stat(filepath.Join(dir, other)); err == nil {
			return "", nil, fmt.Errorf("model folder %s has weights only as %s; only safetensors is supported: "+
				"convert it once with python -c \"from transformers import AutoModelForSequenceClassification as M; M.from_pretrained('%s').save_pretrained('%s', safe_serialization=True)\"",
				dir, other, dir, dir)
		}
	}
	return "", nil, fmt.Errorf("model folder %s has no weights file: no model.safetensors, nor a sharded model.safetensors.index.json", dir)
}

// shardFiles reads a model.safetensors.index.json (contents, at index): the files of its
// weight_map, sorted, each inside dir.
func shardFiles(dir, index string, contents []byte) ([]string, error) {
	var doc struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(contents, &doc); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", index, err)
	}
	seen := map[string]bool{}
	var files []string
	for _, tensor := range slices.Sorted(maps.Keys(doc.WeightMap)) {
		f := doc.WeightMap[tensor]
		if seen[f] {
			continue
		}
		seen[f] = true
		path, err := localpath.Join(dir, f)
		if err != nil {
			return nil, fmt.Errorf("%s: weight_map[%q]: %w", index, tensor, err)
		}
		files = append(files, path)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s lists no weight files", index)
	}
	sort.Strings(files)
	return files, nil
}

// WeightPlan says which tensors of a model's safetensors files a model reads, by canonical
// name (Canonical applied).
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
	// Ignore reports the canonical names passed over silently (other tasks' heads, buffers);
	// nil passes over none.
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

// ignored applies p.Ignore.
func (p WeightPlan) ignored(name string) bool { return p.Ignore != nil && p.Ignore(name) }

// LoadWeights reads the tensors that plan says of the safetensors files (WeightFiles: one, or
// the shards of one model), into store under the variable paths varPath gives (by canonical
// name), as float32 (F16, BF16 and F64 tensors are converted). It first checks the files'
// headers against the plan, and stops before any variable is written with an error that names
// the files, their config.json and every missing tensor, tensor of the wrong shape or dtype,
// unexpected tensor, and tensor that two files (or two names) hold. The tensors are then read
// file by file: a file that fails to read, or does not fit store's existing variables, leaves
// the files before it loaded.
func LoadWeights(files []string, store *model.Store, plan WeightPlan, varPath func(name string) string) error {
	load, err := checkWeights(files, plan)
	if err != nil {
		return err
	}
	mapping := func(name string) (string, bool) {
		name = plan.canonical(name)
		if !load[name] || plan.ignored(name) {
			return "", false
		}
		return varPath(name), true
	}
	toFloat32 := func(name string, t *tensors.Tensor) (*tensors.Tensor, error) {
		return safetensors.ConvertFloat(t, dtypes.Float32)
	}
	for _, path := range files {
		if _, err := checkpoint.ImportWeights(path, store, mapping, toFloat32); err != nil {
			return err // names the file, tensor and variable
		}
	}
	return nil
}

// checkWeights checks the tensors of safetensors files against plan, reading only their
// headers, and returns the canonical names of the tensors to load.
func checkWeights(files []string, plan WeightPlan) (map[string]bool, error) {
	type source struct {
		path string
		info safetensors.TensorInfo
	}
	found := map[string]source{}
	for _, path := range files {
		st, err := safetensors.Open(path)
		if err != nil {
			return nil, err // names the file
		}
		tensors := st.Header().Tensors
		_ = st.Close()
		for _, info := range tensors {
			name := plan.canonical(info.Name)
			if plan.ignored(name) {
				continue
			}
			if prev, dup := found[name]; dup {
				return nil, fmt.Errorf("%s: tensor %q appears twice (also as %q in %s)", path, name, prev.info.Name, prev.path)
			}
			found[name] = source{path, info}
		}
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
		src, ok := found[spec.Name]
		if !ok {
			missing = append(missing, spec.Name)
			continue
		}
		load[spec.Name] = true
		if !slices.Equal(src.info.Dims, spec.Dims) {
			problems = append(problems, fmt.Sprintf("%s has shape %v, config wants %v", src.info.Name, src.info.Dims, spec.Dims))
		}
		switch src.info.DType {
		case dtypes.Float32, dtypes.Float16, dtypes.BFloat16, dtypes.Float64:
		default:
			dtype, _ := safetensors.DTypeName(src.info.DType)
			problems = append(problems, fmt.Sprintf("%s has dtype %s, want a float type (F32, F16, BF16, F64)", src.info.Name, dtype))
		}
	}
	for name, src := range found {
		if !known[name] {
			unexpected = append(unexpected, src.info.Name)
		}
	}
	configPath := filepath.Join(filepath.Dir(files[0]), "config.json")
	if err := weightsMismatch(strings.Join(files, ", "), configPath, missing, problems, unexpected, plan.Layers); err != nil {
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

// listNames joins names for an error message, the first eight and a count of the others.
func listNames(names []string) string {
	const limit = 8
	if len(names) <= limit {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:limit], ", ") + fmt.Sprintf(", ... (%d more)", len(names)-limit)
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
