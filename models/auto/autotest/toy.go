// Package autotest holds a toy model family that no package registers: a test registers it
// through auto.Register, as a program registers a family of its own module, and then loads,
// trains, predicts and saves it through models/auto. It is written with public packages only
// (TestToyUsesPublicPackages), so it shows what implementing auto.Family takes.
//
// The toy classifies a text by the mean of its words' embeddings, through one dense layer:
// config.json {"model_type": "toy-bag", "vocab_size", "hidden_size", "max_length",
// "num_labels", "id2label"}, model.safetensors (variables under their GoMLX paths) and
// vocab.txt (one word a line; the first is the padding, the second the unknown word).
package autotest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/checkpoint"
	"github.com/goaccel/goaccel/models/auto"
	"github.com/goaccel/goaccel/models/lora"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// ModelType is the toy's config.json model_type.
const ModelType = "toy-bag"

// Family is the toy family, for auto.Register.
var Family auto.Family = family{}

type family struct{}

// Name is "toy".
func (family) Name() string { return "toy" }

// ModelTypes is "toy-bag".
func (family) ModelTypes() []string { return []string{ModelType} }

// Config is the toy's config.json.
type Config struct {
	VocabSize   int     `json:"vocab_size"`
	HiddenSize  int     `json:"hidden_size"`
	MaxLength   int     `json:"max_length"`
	NumLabels   int     `json:"num_labels"`
	Dropout     float64 `json:"dropout"`
	ProblemType string  `json:"problem_type,omitempty"`
	// Labels are id2label's names (nil: unnamed).
	Labels []string `json:"-"`
	// Checkpointing is kept for auto's SetGradientCheckpointing (the toy has no layers).
	Checkpointing bool `json:"-"`
}

// ParseConfig reads a toy config.json.
func (family) ParseConfig(contents []byte, name string) (auto.Config, error) {
	var keys struct {
		Config
		ModelType string            `json:"model_type"`
		ID2Label  map[string]string `json:"id2label"`
	}
	if err := json.Unmarshal(contents, &keys); err != nil {
		return nil, fmt.Errorf("toy: %s: %w", name, err)
	}
	c := keys.Config
	if keys.ModelType != ModelType || c.VocabSize < 2 || c.HiddenSize < 1 || c.NumLabels < 1 || c.MaxLength < 1 {
		return nil, fmt.Errorf("toy: %s: want model_type %q and positive vocab_size (at least 2), hidden_size, max_length, num_labels", name, ModelType)
	}
	if len(keys.ID2Label) == c.NumLabels {
		c.Labels = make([]string, c.NumLabels)
		for k, v := range keys.ID2Label {
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= c.NumLabels {
				return nil, fmt.Errorf("toy: %s: id2label key %q", name, k)
			}
			c.Labels[i] = v
		}
	}
	return &c, nil
}

// Load reads config.json, vocab.txt and, when there is one, model.safetensors (the head's
// tensors only with req.LoadHead).
func (f family) Load(dir string, store *model.Store, req auto.LoadRequest) (auto.Network, auto.Processor, error) {
	if req.Head != auto.SequenceClassification {
		return nil, nil, fmt.Errorf("toy: %s: the toy has no %s head", dir, req.Head)
	}
	path := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("toy: %w", err)
	}
	ac, err := f.ParseConfig(b, path)
	if err != nil {
		return nil, nil, err
	}
	cfg := ac.(*Config)
	if req.NumLabels > 0 && req.NumLabels != cfg.NumLabels {
		cfg.SetNumLabels(req.NumLabels)
	}
	maxLen := cfg.MaxLength
	if req.MaxLen > 0 {
		maxLen = req.MaxLen
	}
	tok, err := readVocab(filepath.Join(dir, "vocab.txt"), maxLen)
	if err != nil {
		return nil, nil, err
	}
	if len(tok.words) > cfg.VocabSize {
		return nil, nil, fmt.Errorf("toy: %s: %d words, vocab_size %d", dir, len(tok.words), cfg.VocabSize)
	}
	weights := filepath.Join(dir, "model.safetensors")
	if _, err := os.Stat(weights); err == nil {
		head := func(name string) (string, bool) { return name, req.LoadHead || !strings.HasPrefix(name, "/head") }
		if _, err := checkpoint.ImportWeights(weights, store, head); err != nil {
			return nil, nil, fmt.Errorf("toy: %w", err)
		}
	}
	net, err := cfg.New(store)
	return net, tok, err
}

// Reference is a toy at any shape (only Hidden and Vocab matter).
func (family) Reference() auto.Reference {
	return auto.Reference{Name: "toy", Shape: auto.Shape{Hidden: 8, Layers: 1, Heads: 1, FF: 8, Vocab: 16},
		Config: func(s auto.Shape, maxLen int) (auto.Config, error) {
			return &Config{VocabSize: s.Vocab, HiddenSize: s.Hidden, MaxLength: max(maxLen, 16), NumLabels: 2}, nil
		}}
}

// Facts: one layer, no heads, two inputs (ids and mask).
func (c *Config) Facts() auto.Facts {
	return auto.Facts{ModelType: ModelType, MaxPositions: c.MaxLength, Inputs: 2,
		Shape: auto.Shape{Hidden: c.HiddenSize, Layers: 1, Heads: 1, FF: c.HiddenSize, Vocab: c.VocabSize}}
}

// SetNumLabels gives the config n unnamed classes.
func (c *Config) SetNumLabels(n int) { c.NumLabels, c.Labels = n, nil }

// CheckMaxLen refuses sequences longer than max_length.
func (c *Config) CheckMaxLen(n int) error {
	if n > c.MaxLength {
		return fmt.Errorf("toy: sequence length %d is above max_length %d", n, c.MaxLength)
	}
	return nil
}

// ForwardFLOPs counts the head's product only.
func (c *Config) ForwardFLOPs(batch, seq int) float64 {
	return 2 * float64(batch) * float64(c.HiddenSize) * float64(c.NumLabels)
}

// JSON is the config.json of c.
func (c *Config) JSON() ([]byte, error) {
	keys := map[string]any{"model_type": ModelType, "vocab_size": c.VocabSize, "hidden_size": c.HiddenSize,
		"max_length": c.MaxLength, "num_labels": c.NumLabels, "dropout": c.Dropout}
	if c.ProblemType != "" {
		keys["problem_type"] = c.ProblemType
	}
	if c.Labels != nil {
		id2label := map[string]string{}
		for i, l := range c.Labels {
			id2label[strconv.Itoa(i)] = l
		}
		keys["id2label"] = id2label
	}
	return json.MarshalIndent(keys, "", "  ")
}

// New builds the toy classifier of c in store (nil: a new one).
func (c *Config) New(store *model.Store) (auto.Network, error) {
	if store == nil {
		store = model.NewStore()
	}
	return &network{cfg: c, store: store}, nil
}

// network is the toy classifier.
type network struct {
	cfg   *Config
	store *model.Store
}

func (n *network) Classifier() auto.Classifier { return n }

// Store holds the toy's variables.
func (n *network) Store() *model.Store { return n.store }

// NumParameters counts the embeddings and the head.
func (n *network) NumParameters() int {
	c := n.cfg
	return c.VocabSize*c.HiddenSize + c.HiddenSize*c.NumLabels + c.NumLabels
}

func (n *network) Config() auto.Config { return n.cfg }

// Logits: the masked mean of the ids' embeddings, times the head's weights, plus its bias.
func (n *network) Logits(s *model.Scope, inputs []*Node) *Node {
	ids, mask := inputs[0], inputs[1]
	g := ids.Graph()
	c := n.cfg
	table := s.At("embeddings").WithInitializer(n.normal).
		VariableWithShape("weight", shapes.Make(dtypes.Float32, c.VocabSize, c.HiddenSize)).NodeValue(g)
	x := Gather(table, InsertAxes(ids, -1)) // [B, L, H]
	m := InsertAxes(ConvertDType(mask, dtypes.Float32), -1)
	pooled := Div(ReduceSum(Mul(x, m), 1), MaxScalar(ReduceSum(m, 1), 1)) // [B, H]
	w := s.At("head").WithInitializer(n.normal).
		VariableWithShape("weight", shapes.Make(dtypes.Float32, c.HiddenSize, c.NumLabels)).NodeValue(g)
	b := s.At("head").WithInitializer(Zeros).VariableWithShape("bias", shapes.Make(dtypes.Float32, c.NumLabels)).NodeValue(g)
	return Add(MatMul(pooled, w), InsertAxes(b, 0))
}

// normal draws N(0, 0.25) values from the Store's random state.
func (n *network) normal(g *Graph, shape shapes.Shape) *Node {
	return MulScalar(n.store.RandomNormal(g, shape), 0.5)
}

func (n *network) HeadFields() (*int, *[]string, *string) {
	return &n.cfg.NumLabels, &n.cfg.Labels, &n.cfg.ProblemType
}

func (n *network) SetDropout(rate float64) { n.cfg.Dropout = rate }

func (n *network) SetGradientCheckpointing(on bool) { n.cfg.Checkpointing = on }

// LoRATargets: the toy has no linear layer to adapt.
func (n *network) LoRATargets() []string { return nil }

// AttachLoRA is refused.
func (n *network) AttachLoRA(lora.Config, string) (*lora.Adapter, error) {
	return nil, fmt.Errorf("toy: no LoRA")
}

// SavePretrained writes config.json, model.safetensors and the processor's files.
func (n *network) SavePretrained(dir string, p auto.Processor) error {
	js, err := n.cfg.JSON()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), js, 0o644); err != nil {
		return err
	}
	if err := checkpoint.ExportWeights(filepath.Join(dir, "model.safetensors"), n.store, nil); err != nil {
		return err
	}
	return p.SavePretrained(dir)
}

// Tokenizer is the toy's processor: lowercased words split on spaces, looked up in a word
// list (0 the padding, 1 the unknown word), at most maxLen a text.
type Tokenizer struct {
	words  []string
	ids    map[string]int32
	maxLen int
}

// NewTokenizer makes a Tokenizer of a word list.
func NewTokenizer(words []string, maxLen int) *Tokenizer {
	t := &Tokenizer{words: words, ids: map[string]int32{}, maxLen: maxLen}
	for i, w := range words {
		t.ids[w] = int32(i)
	}
	return t
}

// readVocab reads vocab.txt.
func readVocab(path string, maxLen int) (*Tokenizer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("toy: %w", err)
	}
	defer f.Close()
	var words []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		words = append(words, sc.Text())
	}
	if len(words) < 2 {
		return nil, fmt.Errorf("toy: %s: want at least the padding and the unknown word", path)
	}
	return NewTokenizer(words, maxLen), nil
}

// Kind is "words".
func (t *Tokenizer) Kind() string { return "words" }

// MaxLen is the longest sequence it makes.
func (t *Tokenizer) MaxLen() int { return t.maxLen }

// VocabSize is the word list's length.
func (t *Tokenizer) VocabSize() int { return len(t.words) }

// encode is the ids of a text's words.
func (t *Tokenizer) encode(s string) []int32 {
	var ids []int32
	for _, w := range strings.Fields(strings.ToLower(s)) {
		id, ok := t.ids[w]
		if !ok {
			id = 1
		}
		ids = append(ids, id)
	}
	return ids[:min(len(ids), t.maxLen)]
}

// Process makes [ids, mask], int32 [B, MaxLen].
func (t *Tokenizer) Process(texts []string) ([]*tensors.Tensor, error) {
	if len(texts) == 0 {
		return nil, fmt.Errorf("toy: an empty batch")
	}
	ids, mask := make([]int32, len(texts)*t.maxLen), make([]int32, len(texts)*t.maxLen)
	for i, s := range texts {
		for j, id := range t.encode(s) {
			ids[i*t.maxLen+j], mask[i*t.maxLen+j] = id, 1
		}
	}
	return []*tensors.Tensor{tensors.FromFlatDataAndDimensions(ids, len(texts), t.maxLen),
		tensors.FromFlatDataAndDimensions(mask, len(texts), t.maxLen)}, nil
}

// ProcessWords makes [ids, mask] of sentences split into words, each word one token.
func (t *Tokenizer) ProcessWords(sentences [][]string) ([]*tensors.Tensor, [][]int32, error) {
	texts := make([]string, len(sentences))
	words := make([][]int32, len(sentences))
	for i, s := range sentences {
		texts[i] = strings.Join(s, " ")
		for w := range min(len(s), t.maxLen) {
			words[i] = append(words[i], int32(w))
		}
	}
	inputs, err := t.Process(texts)
	return inputs, words, err
}

// SavePretrained writes vocab.txt.
func (t *Tokenizer) SavePretrained(dir string) error {
	return os.WriteFile(filepath.Join(dir, "vocab.txt"), []byte(strings.Join(t.words, "\n")+"\n"), 0o644)
}
