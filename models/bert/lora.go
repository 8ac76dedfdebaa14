package bert

import (
	"fmt"
	"strings"

	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/goaccel/goaccel/models/lora"
)

// LoRA in the BERT family: the classifier describes itself to models/lora once (LoRABase)
// and its one linear-layer function (linear) hands each layer's output to the attached
// adapter, which adds the low-rank update on the layers it targets; the rest of the model
// does not know about it. Attach an adapter before building any graph.

// AttachLoRA attaches a new LoRA adapter of cfg (zero fields: PEFT's defaults, query and
// value for bert, roberta, xlm-roberta and electra, q_lin and v_lin for distilbert) to the
// classifier: from then on the targeted linear layers compute W + (alpha/r)·B·A, the
// encoder's variables are frozen (not trainable: no gradient, no optimizer state) and the
// adapter's and the head's train. baseNameOrPath is the base model's folder or Hub id, written
// into adapter_config.json as base_model_name_or_path ("" writes null). A target module that
// names none of the family's linear layers is an error that lists them. Call it before any
// graph of the classifier is built; a classifier has at most one adapter.
func (c *Classifier) AttachLoRA(cfg lora.Config, baseNameOrPath string) (*lora.Adapter, error) {
	if c.Config.adapter != nil {
		return nil, fmt.Errorf("bert: AttachLoRA: the classifier already has a LoRA adapter (targets %q)", c.Config.adapter.Targets())
	}
	a, err := lora.New(cfg, c.Config.LoRABase(baseNameOrPath))
	if err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	c.Config.adapter = a
	a.Freeze(c.store)
	return a, nil
}

// Adapter returns the classifier's LoRA adapter, nil when it has none.
func (c *Classifier) Adapter() *lora.Adapter { return c.Config.adapter }

// LoRABase describes the classifier of c to models/lora: its model_type and task type, its
// linear layers outside the head (every encoder tensor "M.weight" [out, in] with a bias
// "M.bias": the attention's query, key, value and output, the feed-forward layers, BERT's
// pooler, ELECTRA's embeddings_project), its head's tensors (trained in full and saved with
// the adapter, as PEFT's modules_to_save: "classifier", DistilBERT's "pre_classifier") and
// the encoder's tensors (frozen).
func (c Config) LoRABase(baseNameOrPath string) lora.Base {
	b := lora.Base{ModelType: c.Family(), NameOrPath: baseNameOrPath, TaskType: hf.LoRATask(c.Head), Dropout: hf.Dropout}
	enc := c.EncoderTensors()
	dims := map[string][]int{}
	for _, t := range enc {
		dims[t.Name] = t.Dims
		b.Frozen = append(b.Frozen, lora.Tensor{Name: t.Name, Dims: t.Dims})
	}
	for _, t := range enc {
		module, ok := strings.CutSuffix(t.Name, ".weight")
		if bias := dims[module+".bias"]; ok && len(t.Dims) == 2 && len(bias) == 1 && bias[0] == t.Dims[0] {
			b.Linears = append(b.Linears, lora.Linear{Module: module, In: t.Dims[1], Out: t.Dims[0]})
		}
	}
	for _, t := range c.HeadTensors() {
		b.Head = append(b.Head, lora.Tensor{Name: t.Name, Dims: t.Dims})
	}
	return b
}

// LoadAdapter attaches to the classifier the LoRA adapter saved in dir (PEFT's
// adapter_config.json and adapter_model.safetensors, as SaveAdapter or PEFT's save_pretrained
// write them) and loads its tensors and the head's into the classifier's Store, for resuming
// or predicting on the base model the classifier holds. Errors name what does not fit: an
// adapter of another task type, a target module the family lacks, tensors another base
// would have (names, shapes, layers), a configuration goaccel does not compute (DoRA,
// rsLoRA, per-layer ranks...), a frozen tensor of the classifier without a value (a
// classifier made by NewClassifier and never run or loaded: PEFT's files do not hold the
// encoder, which would be drawn at random). Nothing is attached or written on error.
func LoadAdapter(dir string, c *Classifier) (*lora.Adapter, error) {
	if c.Config.adapter != nil {
		return nil, fmt.Errorf("bert: LoadAdapter %s: the classifier already has a LoRA adapter", dir)
	}
	a, err := lora.LoadFrom(dir, c.Config.LoRABase, c.store)
	if err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	c.Config.adapter = a
	return a, nil
}

// SaveAdapter writes the classifier's LoRA adapter into dir as PEFT's files
// (adapter_config.json, adapter_model.safetensors: A and B of the targeted layers and the
// head), which peft.PeftModel.from_pretrained reads onto the base model, and the files of the
// tokenizer given after c, if any (at most one; see SavePretrained). SaveAdapter(dir, c) has
// the shape of every family's. The classifier must have an adapter and values for its
// variables.
func SaveAdapter(dir string, c *Classifier, tokenizer ...*Tokenizer) error {
	tok, err := oneTokenizer("SaveAdapter", tokenizer)
	if err != nil {
		return err
	}
	if c == nil {
		return fmt.Errorf("bert: SaveAdapter: nil classifier")
	}
	a := c.Config.adapter
	if a == nil {
		return fmt.Errorf("bert: SaveAdapter: the classifier has no LoRA adapter (AttachLoRA or LoadAdapter first)")
	}
	if err := a.Save(dir, c.store); err != nil {
		return fmt.Errorf("bert: %w", err)
	}
	if tok != nil {
		return tok.writeFiles(dir, c.Config)
	}
	return nil
}

// merged returns the classifier with its adapter folded into the base weights (a new
// Store, without the adapter), or c itself when it has none.
func (c *Classifier) merged() (*Classifier, error) {
	a := c.Config.adapter
	if a == nil {
		return c, nil
	}
	store, err := a.Merged(c.store)
	if err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	cfg := c.Config
	cfg.adapter = nil
	return &Classifier{Config: cfg, store: store, compute: c.compute}, nil
}
