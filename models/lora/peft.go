package lora

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/internal/fsutil"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// PEFT's files in an adapter folder.
const (
	// ConfigFile is the adapter's configuration (LoraConfig as JSON).
	ConfigFile = "adapter_config.json"
	// WeightsFile holds the adapter's tensors and the head's.
	WeightsFile = "adapter_model.safetensors"
)

// keyPrefix is what PEFT's saved names put before the model's own tensor names: the
// PeftModel's base_model (the LoraModel) and its model.
const keyPrefix = "base_model.model."

// modulesToSave is what PEFT's sequence and token classifiers add to modules_to_save (the
// head's module names); PEFT matches modules whose names end with them, so DistilBERT's
// pre_classifier is one too.
var modulesToSave = []string{"classifier", "score"}

// peftConfig is the part of adapter_config.json that goaccel writes and reads; the keys are
// LoraConfig's. PEFT fills the keys left out with its defaults.
type peftConfig struct {
	PeftType          string         `json:"peft_type"`
	TaskType          string         `json:"task_type,omitempty"` // none for ImageCls
	BaseModel         *string        `json:"base_model_name_or_path"`
	R                 int            `json:"r"`
	LoraAlpha         float64        `json:"lora_alpha"`
	LoraDropout       float64        `json:"lora_dropout"`
	TargetModules     any            `json:"target_modules"` // a list; PEFT also allows a regular expression
	ModulesToSave     []string       `json:"modules_to_save"`
	Bias              string         `json:"bias"`
	FanInFanOut       bool           `json:"fan_in_fan_out"`
	InferenceMode     bool           `json:"inference_mode"`
	InitLoraWeights   any            `json:"init_lora_weights"`
	UseRSLoRA         bool           `json:"use_rslora"`
	UseDoRA           bool           `json:"use_dora"`
	LoraBias          bool           `json:"lora_bias"`
	LayersToTransform any            `json:"layers_to_transform"`
	LayersPattern     any            `json:"layers_pattern"`
	RankPattern       map[string]any `json:"rank_pattern"`
	AlphaPattern      map[string]any `json:"alpha_pattern"`
	ExcludeModules    any            `json:"exclude_modules"`
	Revision          *string        `json:"revision"`
}

// Saved is what an adapter folder's adapter_config.json says.
type Saved struct {
	// Config is r, lora_alpha, lora_dropout and target_modules.
	Config Config
	// TaskType is task_type (SEQ_CLS, TOKEN_CLS).
	TaskType string
	// BaseModel is base_model_name_or_path ("" when null).
	BaseModel string
}

// ReadConfig reads an adapter folder's adapter_config.json. Besides a file that does not
// parse, it refuses, naming the key, what goaccel's LoRA does not compute: another peft_type
// than LORA, target_modules as a regular expression, use_dora, use_rslora, bias other than
// "none", lora_bias, fan_in_fan_out, rank_pattern, alpha_pattern, layers_to_transform and
// exclude_modules.
func ReadConfig(dir string) (Saved, error) {
	path := filepath.Join(dir, ConfigFile)
	contents, err := os.ReadFile(path)
	if err != nil {
		return Saved{}, fmt.Errorf("lora: adapter folder %s: %w", dir, err)
	}
	var pc peftConfig
	if err := json.Unmarshal(contents, &pc); err != nil {
		return Saved{}, fmt.Errorf("lora: parsing %s: %w", path, err)
	}
	bad := func(key string, value any, want string) error {
		return fmt.Errorf("lora: %s: %s = %v is not supported (want %s)", path, key, value, want)
	}
	switch {
	case pc.PeftType != "LORA":
		return Saved{}, bad("peft_type", pc.PeftType, "LORA")
	case pc.UseDoRA:
		return Saved{}, bad("use_dora", true, "false")
	case pc.UseRSLoRA:
		return Saved{}, bad("use_rslora", true, "false")
	case pc.Bias != "" && pc.Bias != "none":
		return Saved{}, bad("bias", pc.Bias, `"none"`)
	case pc.LoraBias:
		return Saved{}, bad("lora_bias", true, "false")
	case pc.FanInFanOut:
		return Saved{}, bad("fan_in_fan_out", true, "false")
	case len(pc.RankPattern) > 0:
		return Saved{}, bad("rank_pattern", pc.RankPattern, "{}")
	case len(pc.AlphaPattern) > 0:
		return Saved{}, bad("alpha_pattern", pc.AlphaPattern, "{}")
	case pc.LayersToTransform != nil:
		return Saved{}, bad("layers_to_transform", pc.LayersToTransform, "null")
	case pc.ExcludeModules != nil:
		return Saved{}, bad("exclude_modules", pc.ExcludeModules, "null")
	}
	var targets []string
	switch t := pc.TargetModules.(type) {
	case []any:
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return Saved{}, bad("target_modules", pc.TargetModules, "a list of module names")
			}
			targets = append(targets, s)
		}
	default:
		return Saved{}, bad("target_modules", pc.TargetModules, "a list of module names (a regular expression is not read)")
	}
	sort.Strings(targets)
	if pc.R <= 0 {
		return Saved{}, bad("r", pc.R, "a positive rank")
	}
	s := Saved{Config: Config{R: pc.R, Alpha: pc.LoraAlpha, Dropout: pc.LoraDropout, TargetModules: targets}, TaskType: pc.TaskType}
	if pc.LoraAlpha <= 0 {
		return Saved{}, bad("lora_alpha", pc.LoraAlpha, "a positive value")
	}
	if pc.BaseModel != nil {
		s.BaseModel = *pc.BaseModel
	}
	if err := s.Config.Validate(); err != nil {
		return Saved{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// names are the adapter's tensors as PEFT saves them, with their Store paths and shapes,
// sorted by name.
func (a *Adapter) names() []savedTensor {
	var out []savedTensor
	for _, l := range a.targets {
		out = append(out,
			savedTensor{keyPrefix + a.base.peftModule(l.Module) + ".lora_A.weight", varPath(l.Module + ".lora_A.weight"), []int{a.cfg.R, l.In}},
			savedTensor{keyPrefix + a.base.peftModule(l.Module) + ".lora_B.weight", varPath(l.Module + ".lora_B.weight"), []int{l.Out, a.cfg.R}})
	}
	for _, c := range a.convs {
		out = append(out,
			savedTensor{keyPrefix + a.base.peftModule(c.Module) + ".lora_A.weight", varPath(c.Module + ".lora_A.weight"), c.aDims(a.cfg.R)},
			savedTensor{keyPrefix + a.base.peftModule(c.Module) + ".lora_B.weight", varPath(c.Module + ".lora_B.weight"), c.bDims(a.cfg.R)})
	}
	for _, t := range a.base.Head {
		out = append(out, savedTensor{keyPrefix + t.Name, varPath(t.Name), t.Dims})
	}
	slices.SortFunc(out, func(x, y savedTensor) int { return strings.Compare(x.key, y.key) })
	return out
}

// savedTensor is one tensor of adapter_model.safetensors.
type savedTensor struct {
	key, path string
	dims      []int
}

// Save writes the adapter into dir as PEFT's save_pretrained does: adapter_config.json
// (peft_type LORA, the task type, r, lora_alpha, lora_dropout, target_modules,
// modules_to_save ["classifier", "score"], base_model_name_or_path, bias "none",
// fan_in_fan_out false...) and adapter_model.safetensors with A and B of every targeted
// layer and the head's tensors, float32, under PEFT's names
// ("base_model.model.bert.encoder.layer.0.attention.self.query.lora_A.weight",
// "base_model.model.classifier.weight"). The variables are read from store; each must have a
// value (run the model once first). Each file is written atomically.
func (a *Adapter) Save(dir string, store *model.Store) error {
	var list []safetensors.Named
	for _, t := range a.names() {
		v := store.GetVariable(t.path)
		if v == nil || !v.HasValue() {
			return fmt.Errorf("lora: Save: variable %s (%s) has no value yet: build and run the model once first", t.path, t.key)
		}
		if !slices.Equal(v.Shape().Dimensions, t.dims) || v.DType() != dtypes.Float32 {
			return fmt.Errorf("lora: Save: variable %s is %s, want float32 %v", t.path, v.Shape(), t.dims)
		}
		value, err := v.Value()
		if err != nil {
			return fmt.Errorf("lora: Save: reading %s: %w", t.path, err)
		}
		list = append(list, safetensors.Named{Name: t.key, Tensor: value})
	}
	var base *string
	if a.base.NameOrPath != "" {
		base = &a.base.NameOrPath
	}
	targets := slices.Clone(a.cfg.TargetModules)
	if a.base.PEFTModule != nil {
		targets = a.peftTargets()
	}
	sort.Strings(targets)
	pc := peftConfig{PeftType: "LORA", TaskType: a.base.TaskType, BaseModel: base, R: a.cfg.R,
		LoraAlpha: a.cfg.Alpha, LoraDropout: a.cfg.Dropout, TargetModules: targets,
		ModulesToSave: modulesToSave, Bias: "none", InferenceMode: true, InitLoraWeights: true,
		RankPattern: map[string]any{}, AlphaPattern: map[string]any{}}
	cfgJSON, err := json.MarshalIndent(pc, "", "  ")
	if err != nil {
		return fmt.Errorf("lora: Save: encoding %s: %w", ConfigFile, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("lora: Save: %w", err)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, ConfigFile), append(cfgJSON, '\n')); err != nil {
		return fmt.Errorf("lora: Save: %w", err)
	}
	err = fsutil.WriteAtomic(filepath.Join(dir, WeightsFile), func(w io.Writer) error {
		_, err := safetensors.Write(w, list, map[string]string{"format": "pt"})
		return err
	})
	if err != nil {
		return fmt.Errorf("lora: Save: %w", err)
	}
	return nil
}

// peftTargets are the targeted layers as PEFT's target_modules names them (Base.PEFTModule):
// the last parts of their module names ("q_proj") when those target these layers and no
// other, else the module names in full.
func (a *Adapter) peftTargets() []string {
	var kinds, full []string
	targets := a.Targets()
	for _, module := range targets {
		m := a.base.peftModule(module)
		full = append(full, m)
		if kind := m[strings.LastIndex(m, ".")+1:]; !slices.Contains(kinds, kind) {
			kinds = append(kinds, kind)
		}
	}
	n := 0
	for _, module := range a.base.modules() {
		if slices.ContainsFunc(kinds, func(k string) bool { return matches(a.base.peftModule(module), k) }) {
			n++
		}
	}
	if n == len(targets) {
		return kinds
	}
	return full
}

// Load reads an adapter folder's adapter_model.safetensors into store: A and B of every
// targeted layer and the head's tensors (F16, BF16 and F64 converted to float32). The file
// is checked against the adapter first, and nothing is written when it does not fit: the
// error names the file and every missing tensor, tensor of the wrong shape (a base of other
// widths, another rank r), and unexpected tensor (another family's or layer's names, more
// layers). The adapter's Config must be the folder's (ReadConfig); Load checks the task type.
func (a *Adapter) Load(dir string, store *model.Store) error {
	saved, err := ReadConfig(dir)
	if err != nil {
		return err
	}
	if saved.TaskType != "" && saved.TaskType != a.base.TaskType {
		return fmt.Errorf("lora: %s: task_type %s, but the model is a %s", filepath.Join(dir, ConfigFile), saved.TaskType, a.base.TaskType)
	}
	path := filepath.Join(dir, WeightsFile)
	st, err := safetensors.Open(path)
	if err != nil {
		return fmt.Errorf("lora: %w", err)
	}
	defer func() { _ = st.Close() }()
	want := map[string]savedTensor{}
	for _, t := range a.names() {
		want[t.key] = t
	}
	var missing, wrong, unexpected []string
	for _, info := range st.Header().Tensors {
		t, ok := want[info.Name]
		switch {
		case !ok:
			unexpected = append(unexpected, info.Name)
		case !slices.Equal(info.Dims, t.dims):
			wrong = append(wrong, fmt.Sprintf("%s is %v, the base wants %v", info.Name, info.Dims, t.dims))
		case !info.DType.IsFloat():
			wrong = append(wrong, fmt.Sprintf("%s has dtype %s, want a float type", info.Name, info.DType))
		}
	}
	for key := range want {
		if _, ok := st.Lookup(key); !ok {
			missing = append(missing, key)
		}
	}
	var msgs []string
	for _, part := range []struct {
		what  string
		names []string
	}{{"missing tensors", missing}, {"tensors of the wrong shape or dtype", wrong}, {"unexpected tensors", unexpected}} {
		if len(part.names) > 0 {
			sort.Strings(part.names)
			msgs = append(msgs, fmt.Sprintf("%d %s: %s", len(part.names), part.what, listNames(part.names)))
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("lora: adapter %s does not fit the base model (model_type %s, target modules %q, r=%d): %s",
			path, a.base.ModelType, a.cfg.TargetModules, a.cfg.R, strings.Join(msgs, "; "))
	}
	values := make(map[string]*tensors.Tensor, len(want))
	for key, t := range want {
		value, err := st.Read(key)
		if err != nil {
			return fmt.Errorf("lora: %w", err)
		}
		if value, err = safetensors.ConvertFloat(value, dtypes.Float32); err != nil {
			return fmt.Errorf("lora: %s: %s: %w", path, key, err)
		}
		values[t.path] = value
	}
	for p, value := range values {
		if err := setVariable(store, p, value); err != nil {
			return fmt.Errorf("lora: loading %s: %w", path, err)
		}
	}
	a.Freeze(store)
	return nil
}

// setVariable sets the variable at path of store to value, creating it when it is not there.
func setVariable(store *model.Store, path string, value *tensors.Tensor) error {
	if v := store.GetVariable(path); v != nil {
		if !v.Shape().Equal(value.Shape()) {
			return fmt.Errorf("variable %s is %s, the value is %s", path, v.Shape(), value.Shape())
		}
		return v.SetValue(value)
	}
	_, err := store.CreateVariable(path, value)
	return err
}

// listNames joins names for an error message: the first eight and a count of the others.
func listNames(names []string) string {
	const limit = 8
	if len(names) <= limit {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:limit], ", ") + fmt.Sprintf(", ... (%d more)", len(names)-limit)
}

// Merged returns a new Store with the base model's variables (Base.Frozen and Base.Head) read
// from store, each targeted layer's weight W replaced by W + (alpha/r)·B·A (PEFT's
// merge_and_unload; for a convolution, each output channel's kernel gains the combination
// of A's r kernels that B's 1x1 weights give), and no adapter variables: the weights of a plain model with the adapted
// model's outputs (dropout aside), for a family's SavePretrained. Every variable must have a
// value.
func (a *Adapter) Merged(store *model.Store) (*model.Store, error) {
	out := model.NewStore()
	read := func(path string) ([]float32, error) {
		v := store.GetVariable(path)
		if v == nil || !v.HasValue() {
			return nil, fmt.Errorf("lora: Merged: variable %s has no value yet", path)
		}
		value, err := v.Value()
		if err != nil {
			return nil, fmt.Errorf("lora: Merged: reading %s: %w", path, err)
		}
		return tensors.CopyFlatData[float32](value)
	}
	scale := a.cfg.Scale()
	for _, t := range append(slices.Clone(a.base.Frozen), a.base.Head...) {
		w, err := read(varPath(t.Name))
		if err != nil {
			return nil, err
		}
		module, _ := strings.CutSuffix(t.Name, ".weight")
		l, linear := a.targeted[module]
		c, conv := a.targetedConv[module]
		if strings.HasSuffix(t.Name, ".weight") && (linear || conv) {
			wa, err := read(varPath(module + ".lora_A.weight"))
			if err != nil {
				return nil, err
			}
			wb, err := read(varPath(module + ".lora_B.weight"))
			if err != nil {
				return nil, err
			}
			if linear {
				foldIn(w, wa, wb, l, a.cfg.R, scale)
			} else {
				foldInConv(w, wa, wb, c, a.cfg.R, scale)
			}
		}
		if _, err := out.CreateVariable(varPath(t.Name), tensors.FromFlatDataAndDimensions(w, t.Dims...)); err != nil {
			return nil, fmt.Errorf("lora: Merged: %w", err)
		}
	}
	return out, nil
}

// foldIn adds scale·B·A to w ([out, in], row-major), B [out, r] and A [r, in], summing in
// float64.
func foldIn(w, wa, wb []float32, l Linear, r int, scale float64) {
	for o := range l.Out {
		for i := range l.In {
			var sum float64
			for k := range r {
				sum += float64(wb[o*r+k]) * float64(wa[k*l.In+i])
			}
			w[o*l.In+i] += float32(scale * sum)
		}
	}
}
