package modernbert

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/goaccel/goaccel/models/internal/hf"
)

// Layer types, as config.json's layer_types names them.
const (
	// FullAttention is a global layer: every token attends to every unpadded token.
	FullAttention = "full_attention"
	// SlidingAttention is a local layer: a token attends to the unpadded tokens at most
	// local_attention/2 positions away, on either side.
	SlidingAttention = "sliding_attention"
)

// Config holds the hyperparameters of a ModernBERT encoder and its sequence-classification
// head, with the names and meaning of transformers' ModernBertConfig (config.json).
//
// Two spellings of the attention pattern and of RoPE are read: transformers 5's layer_types
// and rope_parameters ({"full_attention": {"rope_theta": ...}, "sliding_attention": ...}), and
// the keys of the folders on the Hub (answerdotai/ModernBERT-base, mmBERT):
// global_attn_every_n_layers (layer i is global when i is a multiple of it), global_rope_theta
// and local_rope_theta. JSON writes both. Only the "default" RoPE (no scaling) is supported;
// ParseConfig refuses anything else naming the file and the key.
type Config struct {
	// VocabSize is the number of rows of the token-embedding table (vocab_size).
	VocabSize int `json:"vocab_size"`
	// HiddenSize is the width of every layer (hidden_size).
	HiddenSize int `json:"hidden_size"`
	// IntermediateSize is the width of the GeGLU feed-forward block: Wi projects to twice
	// it (input and gate), Wo back from it (intermediate_size).
	IntermediateSize int `json:"intermediate_size"`
	// NumHiddenLayers is the number of encoder layers (num_hidden_layers).
	NumHiddenLayers int `json:"num_hidden_layers"`
	// NumAttentionHeads is the number of attention heads; it divides HiddenSize, and the
	// head width is even (RoPE rotates pairs).
	NumAttentionHeads int `json:"num_attention_heads"`
	// HiddenActivation is the activation of the feed-forward's input half (hidden_activation):
	// see Activations.
	HiddenActivation string `json:"hidden_activation"`
	// MaxPositionEmbeddings is the longest sequence the model takes (8192 for ModernBERT).
	MaxPositionEmbeddings int `json:"max_position_embeddings"`
	// InitializerRange is the standard deviation of fresh weights (initializer_range); see
	// InitializerCutoffFactor.
	InitializerRange float64 `json:"initializer_range"`
	// InitializerCutoffFactor truncates the normal initialiser at this many standard
	// deviations (initializer_cutoff_factor; 0 means 3, as transformers' None).
	InitializerCutoffFactor float64 `json:"initializer_cutoff_factor"`
	// NormEps is the epsilon of every LayerNorm (norm_eps).
	NormEps float64 `json:"norm_eps"`
	// NormBias gives the LayerNorms a bias (norm_bias; false in the released models).
	NormBias bool `json:"norm_bias"`
	// AttentionBias gives Wqkv and the attention's Wo a bias (attention_bias).
	AttentionBias bool `json:"attention_bias"`
	// MLPBias gives the feed-forward's Wi and Wo a bias (mlp_bias).
	MLPBias bool `json:"mlp_bias"`
	// ClassifierBias gives the head's dense a bias (classifier_bias); the final classifier
	// always has one.
	ClassifierBias bool `json:"classifier_bias"`
	// AttentionDropout is the dropout rate on the attention probabilities and on the
	// attention's output (attention_dropout).
	AttentionDropout float64 `json:"attention_dropout"`
	// EmbeddingDropout is the dropout rate after the embeddings' LayerNorm (embedding_dropout).
	EmbeddingDropout float64 `json:"embedding_dropout"`
	// MLPDropout is the dropout rate inside the feed-forward block, before Wo (mlp_dropout).
	MLPDropout float64 `json:"mlp_dropout"`
	// ClassifierDropout is the dropout rate between the head and the classifier
	// (classifier_dropout).
	ClassifierDropout float64 `json:"classifier_dropout"`
	// LayerTypes is each layer's attention, FullAttention or SlidingAttention (layer_types).
	LayerTypes []string `json:"layer_types"`
	// LocalAttention is the window of the sliding layers, both sides together
	// (local_attention): a token sees the tokens at most LocalAttention/2 positions away.
	LocalAttention int `json:"local_attention"`
	// GlobalRopeTheta is the RoPE base of the global layers (global_rope_theta, or
	// rope_parameters.full_attention.rope_theta).
	GlobalRopeTheta float64 `json:"global_rope_theta"`
	// LocalRopeTheta is the RoPE base of the local layers (local_rope_theta, or
	// rope_parameters.sliding_attention.rope_theta).
	LocalRopeTheta float64 `json:"local_rope_theta"`
	// ClassifierPooling is how the last hidden states become one vector per sequence:
	// "cls" (the first token's) or "mean" (the mean over the attention mask).
	ClassifierPooling string `json:"classifier_pooling"`
	// ClassifierActivation is the activation of the head, between its dense and its norm
	// (classifier_activation): see Activations.
	ClassifierActivation string `json:"classifier_activation"`
	// PadTokenID, BOSTokenID, EOSTokenID, CLSTokenID and SEPTokenID are the special tokens'
	// ids as config.json records them (nil: null); the model itself does not read them.
	PadTokenID *int `json:"pad_token_id"`
	// BOSTokenID: see PadTokenID.
	BOSTokenID *int `json:"bos_token_id"`
	// EOSTokenID: see PadTokenID.
	EOSTokenID *int `json:"eos_token_id"`
	// CLSTokenID: see PadTokenID.
	CLSTokenID *int `json:"cls_token_id"`
	// SEPTokenID: see PadTokenID.
	SEPTokenID *int `json:"sep_token_id"`
	// NumLabels is the number of classes of the classifier.
	NumLabels int `json:"num_labels"`
	// Labels names the classes by class id, as transformers' id2label (label2id is its
	// inverse); nil leaves them unnamed (LABEL_0, LABEL_1, ... in config.json).
	Labels []string `json:"-"`
	// ProblemType is transformers' problem_type (as every family's): empty or
	// "single_label_classification", "multi_label_classification" or "regression". The head
	// is the same; it says which loss transformers computes with the folder.
	ProblemType string `json:"-"`
	// Head is the task head (the Head every family shares): SequenceClassification (the zero value:
	// ModernBertForSequenceClassification, [B, num_labels] logits from the pooled states) or
	// TokenClassification (ModernBertForTokenClassification: the same head on every token,
	// [B, L, num_labels]); the tensors are the same. ParseConfig reads it from architectures,
	// JSON writes the class of it, LoadOptions.Head sets it when a folder is loaded.
	Head hf.Head `json:"-"`

	// GradientCheckpointing turns on activation checkpointing (rematerialisation) per
	// encoder layer in training graphs, as transformers' gradient_checkpointing_enable():
	// only each layer's input is kept for the backward pass, and the layer's activations
	// (dropout's random bits included) are recomputed from it there, trading about one more
	// forward pass of compute for the memory of the activations. Losses and gradients are
	// those of the plain graph. It is a training choice, not part of the architecture:
	// config.json neither reads nor writes it.
	GradientCheckpointing bool `json:"-"`

	// architectures is config.json's architectures as ParseConfig read it (LoadPretrained
	// checks LoadOptions.Head against it).
	architectures []string
}

// Activations lists the activation names (hidden_activation, classifier_activation) this
// package computes, with transformers' meaning (the Activations every family shares): "gelu" is the
// exact (erf) GELU, "gelu_new" and "gelu_pytorch_tanh" its tanh approximation, "silu" and
// "swish" x·sigmoid(x).
func Activations() []string { return hf.Activations() }

// defaultConfig holds ModernBertConfig's defaults (ModernBERT-base's shape), used for the
// keys a config.json leaves out.
func defaultConfig() Config {
	ids := func(v int) *int { return &v }
	return Config{
		VocabSize: 50368, HiddenSize: 768, IntermediateSize: 1152, NumHiddenLayers: 22, NumAttentionHeads: 12,
		HiddenActivation: "gelu", MaxPositionEmbeddings: 8192, InitializerRange: 0.02, InitializerCutoffFactor: 2,
		NormEps: 1e-5, LocalAttention: 128, GlobalRopeTheta: 160000, LocalRopeTheta: 10000,
		ClassifierPooling: "cls", ClassifierActivation: "gelu", NumLabels: 2,
		PadTokenID: ids(50283), EOSTokenID: ids(50282), BOSTokenID: ids(50281), CLSTokenID: ids(50281), SEPTokenID: ids(50282),
	}
}

// defaultGlobalEvery is global_attn_every_n_layers when config.json has neither it nor layer_types.
const defaultGlobalEvery = 3

// ropeParams is one entry of config.json's rope_parameters.
type ropeParams struct {
	RopeType  string      `json:"rope_type"`
	RopeTheta *hf.PyFloat `json:"rope_theta"`
}

// fileKeys are the config.json keys read besides Config's own fields.
type fileKeys struct {
	hf.TaskKeys
	GlobalEvery     *int                   `json:"global_attn_every_n_layers"`
	RopeParameters  map[string]*ropeParams `json:"rope_parameters"`
	RopeScaling     json.RawMessage        `json:"rope_scaling"`
	GlobalRopeTheta *float64               `json:"global_rope_theta"`
	LocalRopeTheta  *float64               `json:"local_rope_theta"`
}

// ParseConfig parses the contents of a ModernBERT config.json; name is used in error
// messages (usually the file path). Keys missing from the file take ModernBertConfig's
// defaults; num_labels falls back to the size of id2label, then to 2. The result is validated.
func ParseConfig(contents []byte, name string) (Config, error) {
	var keys fileKeys
	if err := json.Unmarshal(contents, &keys); err != nil {
		return Config{}, fmt.Errorf("modernbert: parsing %s: %w", name, err)
	}
	if keys.ModelType != "modernbert" {
		return Config{}, fmt.Errorf("modernbert: %s: model_type %q is not \"modernbert\"", name, keys.ModelType)
	}
	cfg := defaultConfig()
	if err := json.Unmarshal(contents, &cfg); err != nil {
		return Config{}, fmt.Errorf("modernbert: parsing %s: %w", name, err)
	}
	if err := cfg.readLayout(keys); err != nil {
		return Config{}, fmt.Errorf("modernbert: %s: %w", name, err)
	}
	var err error
	task, err := keys.Task(cfg.NumLabels)
	if err != nil {
		return Config{}, fmt.Errorf("modernbert: %s: %w", name, err)
	}
	cfg.NumLabels, cfg.Labels, cfg.ProblemType, cfg.Head = task.NumLabels, task.Labels, task.ProblemType, task.Head
	cfg.architectures = keys.Architectures
	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("modernbert: %s: %w", name, err)
	}
	return cfg, nil
}

// readLayout sets LayerTypes and the RoPE thetas from whichever spelling the file has:
// layer_types wins over global_attn_every_n_layers and rope_parameters over
// global_rope_theta / local_rope_theta, as in transformers.
func (c *Config) readLayout(keys fileKeys) error {
	if s := strings.TrimSpace(string(keys.RopeScaling)); s != "" && s != "null" {
		return fmt.Errorf("rope_scaling %s is not supported: only the default RoPE is", s)
	}
	if c.LayerTypes == nil {
		every := defaultGlobalEvery
		if keys.GlobalEvery != nil {
			every = *keys.GlobalEvery
		}
		if every <= 0 {
			return fmt.Errorf("global_attn_every_n_layers must be positive, got %d", every)
		}
		c.LayerTypes = make([]string, max(c.NumHiddenLayers, 0))
		for i := range c.LayerTypes {
			c.LayerTypes[i] = SlidingAttention
			if i%every == 0 {
				c.LayerTypes[i] = FullAttention
			}
		}
	}
	for _, r := range []struct {
		layerType string
		legacy    *float64
		theta     *float64
	}{{FullAttention, keys.GlobalRopeTheta, &c.GlobalRopeTheta}, {SlidingAttention, keys.LocalRopeTheta, &c.LocalRopeTheta}} {
		if r.legacy != nil {
			*r.theta = *r.legacy
		}
		p := keys.RopeParameters[r.layerType]
		if p == nil {
			continue
		}
		if p.RopeType != "" && p.RopeType != "default" {
			return fmt.Errorf("rope_parameters.%s.rope_type %q is not supported: only \"default\" is", r.layerType, p.RopeType)
		}
		if p.RopeTheta != nil {
			*r.theta = float64(*p.RopeTheta)
		}
	}
	for k := range keys.RopeParameters {
		if k != FullAttention && k != SlidingAttention {
			return fmt.Errorf("rope_parameters has the key %q: want %q and %q", k, FullAttention, SlidingAttention)
		}
	}
	return nil
}

// LoadConfig reads and validates a ModernBERT config.json file.
func LoadConfig(path string) (Config, error) { return hf.LoadConfig("modernbert", path, ParseConfig) }

// Validate checks that the configuration describes a model this package can build; errors
// name the config.json key.
func (c Config) Validate() error {
	if err := hf.ValidateProblemType(c.ProblemType); err != nil {
		return err
	}
	if err := c.Head.Validate(); err != nil {
		return err
	}
	for _, p := range []struct {
		key   string
		value int
	}{
		{"vocab_size", c.VocabSize}, {"hidden_size", c.HiddenSize}, {"intermediate_size", c.IntermediateSize},
		{"num_hidden_layers", c.NumHiddenLayers}, {"num_attention_heads", c.NumAttentionHeads},
		{"max_position_embeddings", c.MaxPositionEmbeddings}, {"local_attention", c.LocalAttention},
		{"num_labels", c.NumLabels},
	} {
		if p.value <= 0 {
			return fmt.Errorf("%s must be positive, got %d", p.key, p.value)
		}
	}
	if c.HiddenSize%c.NumAttentionHeads != 0 {
		return fmt.Errorf("hidden_size (%d) must be a multiple of num_attention_heads (%d)", c.HiddenSize, c.NumAttentionHeads)
	}
	if c.HeadDim()%2 != 0 {
		return fmt.Errorf("hidden_size / num_attention_heads = %d must be even: RoPE rotates pairs of dimensions", c.HeadDim())
	}
	if len(c.LayerTypes) != c.NumHiddenLayers {
		return fmt.Errorf("layer_types has %d entries, num_hidden_layers is %d", len(c.LayerTypes), c.NumHiddenLayers)
	}
	for i, t := range c.LayerTypes {
		if t != FullAttention && t != SlidingAttention {
			return fmt.Errorf("layer_types[%d] is %q: want %q or %q", i, t, FullAttention, SlidingAttention)
		}
	}
	for _, a := range []struct{ key, value string }{
		{"hidden_activation", c.HiddenActivation}, {"classifier_activation", c.ClassifierActivation},
	} {
		if !slices.Contains(Activations(), a.value) {
			return fmt.Errorf("%s %q is not supported: use one of %s", a.key, a.value, strings.Join(Activations(), ", "))
		}
	}
	if c.ClassifierPooling != "cls" && c.ClassifierPooling != "mean" {
		return fmt.Errorf("classifier_pooling %q is not supported: use \"cls\" or \"mean\"", c.ClassifierPooling)
	}
	for _, r := range []struct {
		key   string
		value float64
	}{{"global_rope_theta", c.GlobalRopeTheta}, {"local_rope_theta", c.LocalRopeTheta}, {"norm_eps", c.NormEps}} {
		if !(r.value > 0) {
			return fmt.Errorf("%s must be positive, got %g", r.key, r.value)
		}
	}
	for _, r := range []struct {
		key   string
		value float64
	}{
		{"attention_dropout", c.AttentionDropout}, {"embedding_dropout", c.EmbeddingDropout},
		{"mlp_dropout", c.MLPDropout}, {"classifier_dropout", c.ClassifierDropout},
	} {
		if !(r.value >= 0 && r.value < 1) {
			return fmt.Errorf("%s must be in [0, 1), got %g", r.key, r.value)
		}
	}
	if c.InitializerRange < 0 || c.InitializerCutoffFactor < 0 {
		return fmt.Errorf("initializer_range (%g) and initializer_cutoff_factor (%g) must not be negative",
			c.InitializerRange, c.InitializerCutoffFactor)
	}
	return hf.ValidateLabels(c.Labels, c.NumLabels)
}

// HeadDim is the width of one attention head, HiddenSize / NumAttentionHeads.
func (c Config) HeadDim() int { return c.HiddenSize / c.NumAttentionHeads }

// IsGlobal reports whether layer i attends globally (LayerTypes[i] is FullAttention).
func (c Config) IsGlobal(i int) bool { return c.LayerTypes[i] == FullAttention }

// CheckMaxLen returns an error if sequences of maxLen tokens do not fit the model
// (max_position_embeddings).
func (c Config) CheckMaxLen(maxLen int) error {
	if maxLen < 1 || maxLen > c.MaxPositionEmbeddings {
		return fmt.Errorf("modernbert: max_len %d is outside the model's 1 to max_position_embeddings (%d)",
			maxLen, c.MaxPositionEmbeddings)
	}
	return nil
}

// globalEvery is the n of global_attn_every_n_layers that gives LayerTypes, or 0 when no n does.
func (c Config) globalEvery() int {
	for n := 1; n <= max(c.NumHiddenLayers, 1); n++ {
		ok := true
		for i, t := range c.LayerTypes {
			if (i%n == 0) != (t == FullAttention) {
				ok = false
				break
			}
		}
		if ok {
			return n
		}
	}
	return 0
}

// JSON returns the configuration as a config.json document for
// ModernBertForSequenceClassification, or ModernBertForTokenClassification with Head
// TokenClassification: both spellings of the layout (layer_types and rope_parameters, and
// global_attn_every_n_layers when a period gives layer_types, with global_rope_theta and
// local_rope_theta), id2label, label2id and problem_type (see hf.HeadProblemType).
func (c Config) JSON() ([]byte, error) {
	type extra struct {
		ModelType      string                `json:"model_type"`
		Architectures  []string              `json:"architectures"`
		GlobalEvery    int                   `json:"global_attn_every_n_layers,omitempty"`
		RopeParameters map[string]ropeParams `json:"rope_parameters"`
		hf.TaskJSON
	}
	global, local := hf.PyFloat(c.GlobalRopeTheta), hf.PyFloat(c.LocalRopeTheta)
	e := extra{ModelType: "modernbert", Architectures: []string{"ModernBert" + c.Head.String()},
		GlobalEvery: c.globalEvery(),
		TaskJSON:    hf.Task{NumLabels: c.NumLabels, Labels: c.Labels, ProblemType: c.ProblemType, Head: c.Head}.JSON(),
		RopeParameters: map[string]ropeParams{
			FullAttention:    {RopeType: "default", RopeTheta: &global},
			SlidingAttention: {RopeType: "default", RopeTheta: &local},
		}}
	// transformers 5's configs are strict dataclasses: a float field must read as a float.
	return json.MarshalIndent(struct {
		Config
		extra
		InitializerRange        hf.PyFloat `json:"initializer_range"`
		InitializerCutoffFactor hf.PyFloat `json:"initializer_cutoff_factor"`
		NormEps                 hf.PyFloat `json:"norm_eps"`
		GlobalRopeTheta         hf.PyFloat `json:"global_rope_theta"`
		LocalRopeTheta          hf.PyFloat `json:"local_rope_theta"`
	}{c, e, hf.PyFloat(c.InitializerRange), hf.PyFloat(c.InitializerCutoffFactor), hf.PyFloat(c.NormEps),
		hf.PyFloat(global), hf.PyFloat(local)}, "", "  ")
}
