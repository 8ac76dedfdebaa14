package lora

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Task types, as PEFT's task_type names them.
const (
	// SeqCls is a sequence classifier (PeftModelForSequenceClassification).
	SeqCls = "SEQ_CLS"
	// TokenCls is a token classifier (PeftModelForTokenClassification).
	TokenCls = "TOKEN_CLS"
	// ImageCls is an image classifier, for which PEFT has no task type: adapter_config.json
	// leaves task_type out (null), and PEFT wraps the model in a plain PeftModel, its
	// modules_to_save as for the others.
	ImageCls = ""
)

// Tensor is one tensor of the base model: its Hugging Face name and shape (dense weights
// [out, in]). Its Store path is the name with its dots made scope separators
// ("bert.pooler.dense.weight" is "/bert/pooler/dense/weight").
type Tensor struct {
	Name string
	Dims []int
}

// Linear is one linear layer of the base model: its module name (the HF name of its weight
// less ".weight") and its widths. Its weight is [Out, In].
type Linear struct {
	Module  string
	In, Out int
}

// Base is what an adapter needs to know of the model it adapts; the model family fills it.
type Base struct {
	// ModelType is config.json's model_type ("bert"), which picks the default target modules.
	ModelType string
	// NameOrPath is the base model's Hub id or folder, written as
	// base_model_name_or_path.
	NameOrPath string
	// TaskType is SeqCls, TokenCls or ImageCls.
	TaskType string
	// Linears are the model's linear layers outside Head: the layers a target may name (a
	// frozen layer of a head, such as ModernBERT's head.dense or DeBERTa's pooler.dense, is
	// one, as in PEFT).
	Linears []Linear
	// Convs are the model's convolutions a target may name (PEFT's Conv2d LoRA), for a family
	// that calls Adapter.Conv where it builds each of them (ConvLayers lists them).
	Convs []Conv
	// Head are the head's tensors, trained in full and saved with the adapter (PEFT's
	// modules_to_save: its "classifier" and "score" modules, and the modules whose names end
	// with them, such as DistilBERT's "pre_classifier").
	Head []Tensor
	// Frozen are the other tensors of the base (the encoder, and the layers of a head that
	// PEFT's modules_to_save does not name: ModernBERT's head.dense and head.norm, DeBERTa's
	// pooler): not trained, not saved with the adapter.
	Frozen []Tensor
	// Dropout is the family's dropout (rate on x, active only in training graphs); nil uses
	// GoMLX's layers.DropoutStatic.
	Dropout func(s *model.Scope, x *Node, rate float64) *Node
	// PEFTModule maps a linear layer's module name (Linear.Module, from the tensor names of
	// the model's folder) to the module's name in transformers' model as PEFT wraps it, where
	// the two differ: transformers 5 loads some families' legacy tensor names into renamed
	// modules (ViT's "vit.encoder.layer.0.attention.attention.query" is the module
	// "vit.layers.0.attention.q_proj"), and PEFT names its tensors and target_modules by the
	// modules. nil: the names are the same. A target module may name either.
	PEFTModule func(module string) string
}

// peftModule is the module's name for PEFT (PEFTModule).
func (b Base) peftModule(module string) string {
	if b.PEFTModule == nil {
		return module
	}
	return b.PEFTModule(module)
}

// Adapter is LoRA on a base model: the resolved Config, the targeted layers, and the rule
// of which variables train. A nil *Adapter adapts nothing (Linear returns the layer's output
// as it is, Freeze changes nothing).
type Adapter struct {
	cfg      Config
	base     Base
	targets  []Linear          // the targeted layers, in Base.Linears' order
	targeted map[string]Linear // by module name
	convs    []Conv            // the targeted convolutions, in Base.Convs' order
	// targetedConv are the targeted convolutions by module name.
	targetedConv map[string]Conv
	train        map[string]bool // Store path -> trainable, for the base's, head's and adapter's variables
}

// New returns the adapter of cfg (zero fields: PEFT's defaults, see Config) on base. Every
// target module must name at least one of base's linear layers or convolutions: the error for
// one that names none lists the layers the family has.
func New(cfg Config, base Base) (*Adapter, error) {
	cfg, err := cfg.withDefaults(base.ModelType)
	if err != nil {
		return nil, err
	}
	if base.TaskType != SeqCls && base.TaskType != TokenCls && base.TaskType != ImageCls {
		return nil, fmt.Errorf("lora: task type %q: want %s, %s or none (ImageCls)", base.TaskType, SeqCls, TokenCls)
	}
	a := &Adapter{cfg: cfg, base: base, targeted: map[string]Linear{}, targetedConv: map[string]Conv{}, train: map[string]bool{}}
	for _, t := range cfg.TargetModules {
		found := false
		for _, l := range base.Linears {
			if matches(l.Module, t) || matches(base.peftModule(l.Module), t) {
				found = true
				if _, dup := a.targeted[l.Module]; !dup {
					a.targeted[l.Module] = l
				}
			}
		}
		for _, c := range base.Convs {
			if matches(c.Module, t) || matches(base.peftModule(c.Module), t) {
				found = true
				a.targetedConv[c.Module] = c
			}
		}
		if !found {
			return nil, &TargetError{Target: t, ModelType: base.ModelType, Layers: layerKinds(base.modules())}
		}
	}
	for _, l := range base.Linears {
		if _, ok := a.targeted[l.Module]; ok {
			a.targets = append(a.targets, l)
			a.train[varPath(l.Module+".lora_A.weight")] = true
			a.train[varPath(l.Module+".lora_B.weight")] = true
		}
	}
	for _, c := range base.Convs {
		if _, ok := a.targetedConv[c.Module]; ok {
			a.convs = append(a.convs, c)
			a.train[varPath(c.Module+".lora_A.weight")] = true
			a.train[varPath(c.Module+".lora_B.weight")] = true
		}
	}
	for _, t := range base.Frozen {
		a.train[varPath(t.Name)] = false
	}
	for _, t := range base.Head {
		a.train[varPath(t.Name)] = true
	}
	return a, nil
}

// TargetError is New's error for a target module that names none of the model's linear
// layers or convolutions.
type TargetError struct {
	// Target is the target module, as given.
	Target string
	// ModelType is the base model's model_type.
	ModelType string
	// Layers are the names of the model's layers (linear, and convolutions where the family
	// adapts them) a target may give, quoted.
	Layers []string
}

// Error names the target and the layers the model has.
func (e *TargetError) Error() string {
	return fmt.Sprintf("lora: target module %q names no linear layer or convolution of model_type %s that LoRA adapts: its layers are %s",
		e.Target, e.ModelType, strings.Join(e.Layers, ", "))
}

// modules are the module names of the base's linear layers and convolutions.
func (b Base) modules() []string {
	var out []string
	for _, l := range b.Linears {
		out = append(out, l.Module)
	}
	for _, c := range b.Convs {
		out = append(out, c.Module)
	}
	return out
}

// layerKinds are the names of layers that a target module may give: each layer's module
// name with the numbered layer path before it dropped ("attention.self.query"), and its last
// part ("query"), sorted and without repeats.
func layerKinds(modules []string) []string {
	seen := map[string]bool{}
	for _, module := range modules {
		parts := strings.Split(module, ".")
		rest := module
		for i, p := range parts {
			if _, err := fmt.Sscanf(p, "%d", new(int)); err == nil && i+1 < len(parts) {
				rest = strings.Join(parts[i+1:], ".")
			}
		}
		seen[rest] = true
		seen[parts[len(parts)-1]] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, fmt.Sprintf("%q", k))
	}
	sort.Strings(out)
	return out
}

// varPath is the Store path of a dotted tensor name.
func varPath(name string) string { return "/" + strings.ReplaceAll(name, ".", "/") }

// Config returns the adapter's configuration with the defaults applied.
func (a *Adapter) Config() Config {
	c := a.cfg
	c.TargetModules = slices.Clone(c.TargetModules)
	return c
}

// Base returns the description of the base model the adapter was made for.
func (a *Adapter) Base() Base { return a.base }

// Targets returns the module names of the targeted layers, in the model's order (the linear
// layers, then the convolutions).
func (a *Adapter) Targets() []string {
	out := make([]string, 0, len(a.targets)+len(a.convs))
	for _, l := range a.targets {
		out = append(out, l.Module)
	}
	for _, c := range a.convs {
		out = append(out, c.Module)
	}
	return out
}

// Linear is the hook a family calls in the function that builds a linear layer: s is the
// layer's scope (its path is the module name: "/bert/encoder/layer/0/attention/self/query"),
// x the layer's input [..., in] and y its output [..., out] (x·Wᵀ + b). For a targeted
// layer it returns y + (alpha/r)·dropout(x)·Aᵀ·Bᵀ, creating A ("lora_A/weight", [r, in],
// kaiming-uniform) and B ("lora_B/weight", [out, r], zero) under s on first use; the
// branch runs in float32 and is added in y's dtype. Other layers, and every layer of a nil
// adapter, get y unchanged.
func (a *Adapter) Linear(s *model.Scope, x, y *Node) *Node {
	if a == nil {
		return y
	}
	l, ok := a.targeted[moduleOf(s)]
	if !ok {
		return y
	}
	in := x.Shape().Dimensions[x.Rank()-1]
	if in != l.In || y.Shape().Dimensions[y.Rank()-1] != l.Out {
		exceptions.Panicf("lora: layer %s is [%d -> %d] but was given input %s and output %s", l.Module, l.In, l.Out, x.Shape(), y.Shape())
	}
	r := a.cfg.R
	g := x.Graph()
	wa := s.At("lora_A").WithInitializer(kaimingUniform(s.Store(), l.In)).
		VariableWithShape("weight", shapes.Make(dtypes.Float32, r, l.In)).NodeValue(g)
	wb := s.At("lora_B").WithInitializer(Zeros).
		VariableWithShape("weight", shapes.Make(dtypes.Float32, l.Out, r)).NodeValue(g)
	h := ConvertDType(x, dtypes.Float32)
	if a.cfg.Dropout > 0 {
		h = a.dropout(s, h)
	}
	dims := x.Shape().Dimensions
	d := Einsum("ni,ri->nr", Reshape(h, -1, l.In), wa)
	d = MulScalar(Einsum("nr,or->no", d, wb), a.cfg.Scale())
	d = Reshape(d, append(slices.Clone(dims[:len(dims)-1]), l.Out)...)
	return Add(y, ConvertDType(d, y.DType()))
}

// dropout applies the LoRA branch's dropout with the family's function, or GoMLX's.
func (a *Adapter) dropout(s *model.Scope, x *Node) *Node {
	if a.base.Dropout != nil {
		return a.base.Dropout(s, x, a.cfg.Dropout)
	}
	if !s.IsTraining(x.Graph()) {
		return x
	}
	return layers.DropoutStatic(s, x, a.cfg.Dropout)
}

// moduleOf is the dotted module name of a scope: "/bert/pooler/dense" -> "bert.pooler.dense".
func moduleOf(s *model.Scope) string {
	return strings.ReplaceAll(strings.Trim(s.Scope(), "/"), "/", ".")
}

// kaimingUniform is PEFT's initialisation of A, torch's kaiming_uniform_ with a = sqrt(5):
// gain sqrt(2/(1+a²)) = sqrt(1/3), bound gain·sqrt(3/fan_in) = 1/sqrt(fan_in), values
// U(-bound, bound), drawn from the Store's random state.
func kaimingUniform(store *model.Store, fanIn int) model.VariableInitializer {
	bound := 1 / math.Sqrt(float64(fanIn))
	return func(g *Graph, shape shapes.Shape) *Node {
		u := store.RandomUniform(g, shape) // [0, 1)
		return AddScalar(MulScalar(u, 2*bound), -bound)
	}
}

// Trainable reports whether the variable at path trains under the adapter: the adapter's A
// and B and the head's tensors do, the base's other tensors do not; ok is false for paths the
// adapter does not know (optimizer state, random state, other models).
func (a *Adapter) Trainable(path string) (trainable, ok bool) {
	if a == nil {
		return false, false
	}
	trainable, ok = a.train[path]
	return trainable, ok
}

// Freeze sets the trainable flag of every variable of store the adapter knows (see
// Trainable): the base's are frozen, the adapter's and the head's train. Optimizers and
// accelerator.Prepare take only trainable variables, so the frozen ones get no gradient
// and no optimizer state. Variables created later (a fresh head, the adapter's own) need
// another call: families call it after building the model's graph. Nil-safe.
func (a *Adapter) Freeze(store *model.Store) {
	if a == nil || store == nil {
		return
	}
	for v := range store.IterVariables() {
		if train, ok := a.train[v.Path()]; ok && v.Trainable != train {
			v.SetTrainable(train)
		}
	}
}

// NumTrainable is the number of scalar weights that train: A and B of every targeted layer
// and the head's tensors.
func (a *Adapter) NumTrainable() int {
	n := 0
	for _, l := range a.targets {
		n += a.cfg.R * (l.In + l.Out)
	}
	for _, c := range a.convs {
		n += size(c.aDims(a.cfg.R)) + size(c.bDims(a.cfg.R))
	}
	for _, t := range a.base.Head {
		n += size(t.Dims)
	}
	return n
}

// size is the number of elements of a tensor of dims.
func size(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}
