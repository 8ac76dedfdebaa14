package bert

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Config holds the hyperparameters of a BERT encoder and its sequence-classification head,
// with the field names and meaning of a Hugging Face BERT config.json.
//
// Only absolute position embeddings and the exact (erf) GELU are supported, as in
// bert-base-uncased, MiniLM and the sentence-transformers BERT models; LoadConfig rejects
// anything else with an error that names the file and the key.
type Config struct {
	// VocabSize is the number of rows of the word-embedding table (vocab_size).
	VocabSize int `json:"vocab_size"`
	// HiddenSize is the width of every encoder layer (hidden_size).
	HiddenSize int `json:"hidden_size"`
	// NumHiddenLayers is the number of encoder layers (num_hidden_layers).
	NumHiddenLayers int `json:"num_hidden_layers"`
	// NumAttentionHeads is the number of self-attention heads; it divides HiddenSize.
	NumAttentionHeads int `json:"num_attention_heads"`
	// IntermediateSize is the width of the feed-forward block (intermediate_size).
	IntermediateSize int `json:"intermediate_size"`
	// HiddenAct is the feed-forward activation: "gelu" (exact, with erf) is the only one supported.
	HiddenAct string `json:"hidden_act"`
	// MaxPositionEmbeddings is the number of learned positions, the longest input the model accepts.
	MaxPositionEmbeddings int `json:"max_position_embeddings"`
	// TypeVocabSize is the number of token types (segments), 2 for BERT.
	TypeVocabSize int `json:"type_vocab_size"`
	// LayerNormEps is the epsilon of every LayerNorm (1e-12 for BERT).
	LayerNormEps float64 `json:"layer_norm_eps"`
	// HiddenDropoutProb is the dropout rate after the embeddings and after each sub-layer.
	HiddenDropoutProb float64 `json:"hidden_dropout_prob"`
	// AttentionProbsDropoutProb is the dropout rate on the attention probabilities.
	AttentionProbsDropoutProb float64 `json:"attention_probs_dropout_prob"`
	// ClassifierDropout is the dropout rate on the pooled output before the classifier; when
	// nil (HF's classifier_dropout: null) HiddenDropoutProb is used.
	ClassifierDropout *float64 `json:"classifier_dropout"`
	// InitializerRange is the standard deviation of the normal initialiser used for fresh
	// weights (the classifier head, or all weights of a random model).
	InitializerRange float64 `json:"initializer_range"`
	// PadTokenID is the id of [PAD] (pad_token_id); informative only.
	PadTokenID int `json:"pad_token_id"`
	// NumLabels is the number of classes of the classification head.
	NumLabels int `json:"num_labels"`
	// ModelType is HF's model_type ("bert"); other encoders with another layout are refused.
	ModelType string `json:"model_type"`
	// PositionEmbeddingType must be "absolute" (or empty).
	PositionEmbeddingType string `json:"position_embedding_type"`
	// Architectures is HF's list of model classes that wrote the checkpoint (informative).
	Architectures []string `json:"architectures,omitempty"`

	// GradientCheckpointing turns on activation checkpointing (rematerialisation) per
	// encoder layer in training graphs, as Hugging Face's gradient_checkpointing_enable():
	// only each layer's input is kept for the backward pass, and the layer's activations are
	// recomputed from it there, trading about one more forward pass of compute for the
	// memory of the activations. Losses and gradients are those of the plain graph. It is a
	// training choice, not part of the architecture: config.json neither reads nor writes it.
	// See docs/memory.md for what it saves on XLA's CPU plugin.
	GradientCheckpointing bool `json:"-"`
}

// TinyConfig returns the configuration of a tiny randomly initialised BERT (hidden 64, 2
// layers, 2 heads, feed-forward 128, 128 positions, 2 labels) for a vocabulary of vocabSize
// tokens: small enough to train in seconds on a CPU, used by the example when no
// pretrained model folder is given.
func TinyConfig(vocabSize int) Config {
	return Config{
		VocabSize:                 vocabSize,
		HiddenSize:                64,
		NumHiddenLayers:           2,
		NumAttentionHeads:         2,
		IntermediateSize:          128,
		HiddenAct:                 "gelu",
		MaxPositionEmbeddings:     128,
		TypeVocabSize:             2,
		LayerNormEps:              1e-12,
		HiddenDropoutProb:         0.1,
		AttentionProbsDropoutProb: 0.1,
		InitializerRange:          0.02,
		NumLabels:                 2,
		ModelType:                 "bert",
		PositionEmbeddingType:     "absolute",
	}
}

// defaultConfig holds HF's BertConfig defaults, used for keys missing from a config.json.
func defaultConfig() Config {
	return Config{
		VocabSize:                 30522,
		HiddenSize:                768,
		NumHiddenLayers:           12,
		NumAttentionHeads:         12,
		IntermediateSize:          3072,
		HiddenAct:                 "gelu",
		MaxPositionEmbeddings:     512,
		TypeVocabSize:             2,
		LayerNormEps:              1e-12,
		HiddenDropoutProb:         0.1,
		AttentionProbsDropoutProb: 0.1,
		InitializerRange:          0.02,
		NumLabels:                 2,
		ModelType:                 "bert",
		PositionEmbeddingType:     "absolute",
	}
}

// ParseConfig parses the contents of a Hugging Face config.json; name is used in error
// messages (usually the file path). Keys missing from the file take BertConfig's defaults;
// num_labels falls back to the size of id2label, then to 2. The result is validated.
func ParseConfig(contents []byte, name string) (Config, error) {
	cfg := defaultConfig()
	if err := json.Unmarshal(contents, &cfg); err != nil {
		return Config{}, fmt.Errorf("bert: parsing %s: %w", name, err)
	}
	var extra struct {
		NumLabels *int           `json:"num_labels"`
		ID2Label  map[string]any `json:"id2label"`
	}
	if err := json.Unmarshal(contents, &extra); err != nil {
		return Config{}, fmt.Errorf("bert: parsing %s: %w", name, err)
	}
	if extra.NumLabels == nil && len(extra.ID2Label) > 0 {
		cfg.NumLabels = len(extra.ID2Label)
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("bert: %s: %w", name, err)
	}
	return cfg, nil
}

// LoadConfig reads and validates a Hugging Face config.json file.
func LoadConfig(path string) (Config, error) {
	contents, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("bert: reading model config: %w", err)
	}
	return ParseConfig(contents, path)
}

// Validate checks that the configuration describes a BERT encoder this package can build.
// Errors name the offending config.json key.
func (c Config) Validate() error {
	positive := []struct {
		key   string
		value int
	}{
		{"vocab_size", c.VocabSize},
		{"hidden_size", c.HiddenSize},
		{"num_hidden_layers", c.NumHiddenLayers},
		{"num_attention_heads", c.NumAttentionHeads},
		{"intermediate_size", c.IntermediateSize},
		{"max_position_embeddings", c.MaxPositionEmbeddings},
		{"type_vocab_size", c.TypeVocabSize},
		{"num_labels", c.NumLabels},
	}
	for _, p := range positive {
		if p.value <= 0 {
			return fmt.Errorf("%s must be positive, got %d", p.key, p.value)
		}
	}
	if c.HiddenSize%c.NumAttentionHeads != 0 {
		return fmt.Errorf("hidden_size (%d) must be a multiple of num_attention_heads (%d)",
			c.HiddenSize, c.NumAttentionHeads)
	}
	if c.ModelType != "" && c.ModelType != "bert" {
		return fmt.Errorf("model_type %q is not supported: only \"bert\" encoders are", c.ModelType)
	}
	if act := strings.ToLower(c.HiddenAct); act != "gelu" {
		return fmt.Errorf("hidden_act %q is not supported: only \"gelu\" (exact erf GELU) is", c.HiddenAct)
	}
	if c.PositionEmbeddingType != "" && c.PositionEmbeddingType != "absolute" {
		return fmt.Errorf("position_embedding_type %q is not supported: only \"absolute\" is",
			c.PositionEmbeddingType)
	}
	if c.LayerNormEps <= 0 {
		return fmt.Errorf("layer_norm_eps must be positive, got %g", c.LayerNormEps)
	}
	rates := []struct {
		key   string
		value float64
	}{
		{"hidden_dropout_prob", c.HiddenDropoutProb},
		{"attention_probs_dropout_prob", c.AttentionProbsDropoutProb},
		{"classifier_dropout", c.classifierDropout()},
	}
	for _, r := range rates {
		if r.value < 0 || r.value >= 1 {
			return fmt.Errorf("%s must be in [0, 1), got %g", r.key, r.value)
		}
	}
	if c.InitializerRange < 0 {
		return fmt.Errorf("initializer_range must not be negative, got %g", c.InitializerRange)
	}
	return nil
}

// CheckMaxLen returns an error if sequences of maxLen tokens do not fit the model's learned
// positions (max_position_embeddings).
func (c Config) CheckMaxLen(maxLen int) error {
	if maxLen < 2 {
		return fmt.Errorf("bert: max_len %d is too small: [CLS] and [SEP] need 2 positions", maxLen)
	}
	if maxLen > c.MaxPositionEmbeddings {
		return fmt.Errorf("bert: max_len %d is above the model's max_position_embeddings (%d)",
			maxLen, c.MaxPositionEmbeddings)
	}
	return nil
}

// HeadDim is the width of one attention head, HiddenSize / NumAttentionHeads.
func (c Config) HeadDim() int { return c.HiddenSize / c.NumAttentionHeads }

// classifierDropout is the dropout rate applied to the pooled output before the head.
func (c Config) classifierDropout() float64 {
	if c.ClassifierDropout != nil {
		return *c.ClassifierDropout
	}
	return c.HiddenDropoutProb
}

// JSON returns the configuration as a Hugging Face config.json document (for a
// BertForSequenceClassification checkpoint).
func (c Config) JSON() ([]byte, error) {
	out := c
	out.Architectures = []string{"BertForSequenceClassification"}
	if out.ModelType == "" {
		out.ModelType = "bert"
	}
	if out.PositionEmbeddingType == "" {
		out.PositionEmbeddingType = "absolute"
	}
	return json.MarshalIndent(out, "", "  ")
}
