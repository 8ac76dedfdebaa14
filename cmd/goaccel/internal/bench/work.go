package bench

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/models/auto"
)

// torchFamilies are the text families scripts/bench_torch.py builds from a config.json (--work
// NAME --config JSON): its own knowledge, not the registry's. Every image family's work is
// the script's --work image: transformers' AutoModelForImageClassification of the config.json's
// model_type, so an image family needs no entry here.
var torchFamilies = []string{"modernbert", "deberta"}

// Spec is one measurement: a work (model and batch shape) at one precision on some devices.
// The same Spec drives goaccel's worker and PyTorch's (scripts/bench_torch.py), so both train
// the same model on the same batch shape.
type Spec struct {
	// Work is "mlp", one of the BERT classifier shapes "tiny", "minilm", "base", or a model
	// family's classifier, e.g. "modernbert" (ModernBERT-base's shape), "deberta"
	// (DeBERTa-v3-small's) or an image family's, "vit" (ViT-base/16's); see Works.
	Work string `json:"work"`
	// Family is the model_type of a classifier work's family in models/auto's registry
	// ("bert" for tiny, minilm and base); "" for the MLP.
	Family string `json:"family,omitempty"`
	// Batch is the global batch (examples per optimizer step, over all devices).
	Batch int `json:"batch"`
	// Seq is the classifier's sequence length (every example is full length: no padding), or
	// an image family's image side in pixels (square images).
	Seq int `json:"seq,omitempty"`
	// Hidden and Layers are the MLP's hidden width and number of hidden layers, or the
	// classifier's hidden size and number of encoder layers.
	Hidden int `json:"hidden"`
	Layers int `json:"layers"`
	// Heads, FF and Vocab are the classifier's attention heads, feed-forward width
	// (intermediate_size; ModernBERT's GeGLU projects to twice it) and vocabulary.
	Heads int `json:"heads,omitempty"`
	FF    int `json:"ff,omitempty"`
	Vocab int `json:"vocab,omitempty"`
	// Precision is "fp32", "tf32", "bf16" or "fp16" (mixed precision: 16-bit compute, float32
	// weights; fp16 with a scaled loss).
	Precision string `json:"precision"`
	// Devices is the number of devices the global batch is split over (goaccel only).
	Devices int `json:"devices"`
	// Sharding is goaccel's accelerator.Config.Sharding over those devices (see Shardings;
	// "" is the default, "no").
	Sharding string `json:"sharding,omitempty"`
	// Backend is goaccel's backend ("" discovers, "go" is the pure-Go backend).
	Backend string `json:"backend,omitempty"`
	// Warmup is the number of untimed steps after the first one.
	Warmup int `json:"warmup"`
}

// IsBERT reports whether the work is a sequence classifier on token batches (BERT,
// ModernBERT or DeBERTa), not the MLP.
func (s Spec) IsBERT() bool { return s.Work != "mlp" }

// Label is a short human name of the measurement, e.g. "minilm B64 L64 fp32 1dev", or
// "mlp h1024 B256 fp32 4dev zero1" with a sharding.
func (s Spec) Label() string {
	var b strings.Builder
	b.WriteString(s.Work)
	if s.image() != nil {
		fmt.Fprintf(&b, " B%d %dpx", s.Batch, s.Seq)
	} else if s.IsBERT() {
		fmt.Fprintf(&b, " B%d L%d", s.Batch, s.Seq)
	} else {
		fmt.Fprintf(&b, " h%d B%d", s.Hidden, s.Batch)
	}
	fmt.Fprintf(&b, " %s %ddev", s.Precision, s.Devices)
	if s.Sharding != "" {
		b.WriteString(" " + s.Sharding)
	}
	if s.Backend == "go" {
		b.WriteString(" go")
	}
	return b.String()
}

// Validate checks the spec's numbers.
func (s Spec) Validate() error {
	img := s.imageFamily()
	switch {
	case s.Batch <= 0:
		return fmt.Errorf("bench: %s: batch must be > 0, got %d", s.Work, s.Batch)
	case s.Devices <= 0:
		return fmt.Errorf("bench: %s: devices must be > 0, got %d", s.Work, s.Devices)
	case s.Batch%s.Devices != 0:
		return fmt.Errorf("bench: %s: batch %d does not split evenly over %d devices", s.Work, s.Batch, s.Devices)
	case s.Hidden <= 0 || s.Layers <= 0:
		return fmt.Errorf("bench: %s: hidden and layers must be > 0", s.Work)
	case img && s.Seq < 2:
		return fmt.Errorf("bench: %s: needs seq (the image side in pixels) >= 2, got %d", s.Work, s.Seq)
	case s.IsBERT() && !img && (s.Seq < 2 || s.Heads <= 0 || s.Hidden%s.Heads != 0 || s.FF <= 0 || s.Vocab <= 0):
		return fmt.Errorf("bench: %s: needs seq >= 2, heads dividing hidden, ff > 0, vocab > 0", s.Work)
	}
	if s.IsBERT() {
		if _, err := s.familyConfig(); err != nil {
			return fmt.Errorf("bench: %s: %w", s.Work, err)
		}
	}
	switch s.Precision {
	case "fp32", "tf32", "bf16", "fp16":
	default:
		return fmt.Errorf("bench: precision %q: valid values are fp32, tf32, bf16, fp16", s.Precision)
	}
	return validSharding(s.Sharding)
}

// Works are the benchmark's works with their default shapes on CPU and on a GPU (the issue's
// measurement points: the MLP at hidden 1024 / batch 256 on CPU and 4096 / 4096 on a GPU,
// MiniLM at B=64 L=64 on CPU, BERT-base at B=32 L=128 on a GPU), and the works of the families
// registered in models/auto when the program starts (familyWork; not in the default run, see
// DefaultWorks). BERT-base's CPU batch is small so that the whole default run stays within
// minutes on a 2-core machine.
var Works = allWorks()

// ownWorks are the bench's own works: the MLP and three BERT shapes.
var ownWorks = map[string]struct{ CPU, GPU Spec }{
	"mlp": {
		CPU: Spec{Work: "mlp", Batch: 256, Hidden: 1024, Layers: 4},
		GPU: Spec{Work: "mlp", Batch: 4096, Hidden: 4096, Layers: 4},
	},
	"tiny": {
		CPU: Spec{Work: "tiny", Family: "bert", Batch: 64, Seq: 64, Hidden: 128, Layers: 2, Heads: 2, FF: 512, Vocab: 4096},
		GPU: Spec{Work: "tiny", Family: "bert", Batch: 64, Seq: 64, Hidden: 128, Layers: 2, Heads: 2, FF: 512, Vocab: 4096},
	},
	"minilm": {
		CPU: Spec{Work: "minilm", Family: "bert", Batch: 64, Seq: 64, Hidden: 384, Layers: 6, Heads: 12, FF: 1536, Vocab: 30522},
		GPU: Spec{Work: "minilm", Family: "bert", Batch: 64, Seq: 128, Hidden: 384, Layers: 6, Heads: 12, FF: 1536, Vocab: 30522},
	},
	"base": {
		CPU: Spec{Work: "base", Family: "bert", Batch: 8, Seq: 64, Hidden: 768, Layers: 12, Heads: 12, FF: 3072, Vocab: 30522},
		GPU: Spec{Work: "base", Family: "bert", Batch: 32, Seq: 128, Hidden: 768, Layers: 12, Heads: 12, FF: 3072, Vocab: 30522},
	},
}

// allWorks are ownWorks and the registered families' works.
func allWorks() map[string]struct{ CPU, GPU Spec } {
	out := maps.Clone(ownWorks)
	for _, f := range auto.Registered() {
		if w, ok := familyWork(f); ok {
			if _, taken := out[f.Name()]; !taken {
				out[f.Name()] = w
			}
		}
	}
	return out
}

// WorkOrder is the order works are listed and run in: the bench's own, then the families'
// in the order they were registered.
var WorkOrder = append(slices.Clone(ownOrder), Families()...)

// ownOrder is the order of ownWorks.
var ownOrder = []string{"mlp", "tiny", "minilm", "base"}

// DefaultWorks are the works `goaccel bench` runs without --work: the MLP and the BERTs. The
// family works are asked for by name (each takes minutes on a 2-core machine).
var DefaultWorks = ownOrder

// ParseWork reads a work argument "NAME[:key=value]..." (keys: batch, seq, hidden, layers,
// heads, ff, vocab), starting from the work's CPU or GPU defaults:
//
//	minilm:batch=32:seq=128
//	mlp:hidden=4096:batch=4096
func ParseWork(arg string, gpu bool) (Spec, error) {
	parts := strings.Split(arg, ":")
	w, ok := lookupWork(parts[0])
	if !ok {
		return Spec{}, fmt.Errorf("bench: unknown work %q: valid works are %s", parts[0], strings.Join(append(slices.Clone(ownOrder), Families()...), ", "))
	}
	s := w.CPU
	if gpu {
		s = w.GPU
	}
	for _, kv := range parts[1:] {
		k, v, found := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if !found || err != nil || n <= 0 {
			return Spec{}, fmt.Errorf("bench: work %q: %q is not KEY=POSITIVE_INTEGER", arg, kv)
		}
		field, ok := map[string]*int{"batch": &s.Batch, "seq": &s.Seq, "hidden": &s.Hidden, "layers": &s.Layers,
			"heads": &s.Heads, "ff": &s.FF, "vocab": &s.Vocab}[k]
		if !ok {
			return Spec{}, fmt.Errorf("bench: work %q: unknown key %q (batch, seq, hidden, layers, heads, ff, vocab)", arg, k)
		}
		*field = n
	}
	return s, nil
}

// torchArgs are scripts/bench_torch.py's arguments for the spec; a family work hands over
// its config.json (familyConfig) whole.
func (s Spec) torchArgs() ([]string, error) {
	args := []string{"--batch", strconv.Itoa(s.Batch), "--precision", s.Precision, "--warmup", strconv.Itoa(s.Warmup)}
	switch {
	case !s.IsBERT():
		return append(args, "--work", "mlp", "--hidden", strconv.Itoa(s.Hidden), "--layers", strconv.Itoa(s.Layers)), nil
	case s.Family == "bert": // the script's BertConfig from the shape's arguments
		return append(args, "--work", "bert", "--seq", strconv.Itoa(s.Seq), "--vocab", strconv.Itoa(s.Vocab),
			"--bert_hidden", strconv.Itoa(s.Hidden), "--bert_layers", strconv.Itoa(s.Layers),
			"--bert_heads", strconv.Itoa(s.Heads), "--bert_ff", strconv.Itoa(s.FF)), nil
	}
	f, err := s.familyOf()
	if err != nil {
		return nil, err
	}
	if s.imageFamily() { // any image family: the script's Auto class of the config's model_type
		cfg, err := s.familyConfig()
		if err != nil {
			return nil, err
		}
		return append(args, "--work", "image", "--seq", strconv.Itoa(s.Seq), "--config", string(cfg)), nil
	}
	if !slices.Contains(torchFamilies, f.Name()) {
		return nil, fmt.Errorf("scripts/bench_torch.py has no twin of family %s (it has %v)", f.Name(), torchFamilies)
	}
	cfg, err := s.familyConfig()
	if err != nil {
		return nil, err
	}
	return append(args, "--work", f.Name(), "--seq", strconv.Itoa(s.Seq), "--config", string(cfg)), nil
}
