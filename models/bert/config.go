package bert

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/goaccel/goaccel/models/lora"
)

// Config holds the hyperparameters of an encoder of the BERT family and its
// sequence-classification head, with the field names and meaning of a Hugging Face BERT
// config.json; ModelType chooses the family (bert, roberta, xlm-roberta, distilbert, electra: see
// Families), and DistilBERT's own keys (dim, n_layers, ...) are read into the same fields.
//
// Only absolute position embeddings and the exact (erf) GELU are supported, as in
// bert-base-uncased, roberta-base, distilbert-base-uncased, the ELECTRA discriminators, MiniLM
// and the sentence-transformers BERT models; LoadConfig rejects anything else with an error
// that names the file and the key.
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
	// TypeVocabSize is the number of token types (segments), 2 for BERT, 1 for RoBERTa, 0
	// for DistilBERT (which has no token types).
	TypeVocabSize int `json:"type_vocab_size"`
	// EmbeddingSize is ELECTRA's width of the embeddings (embedding_size), projected to
	// HiddenSize when they differ; 0 (and every other family) means HiddenSize.
	EmbeddingSize int `json:"embedding_size,omitempty"`
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
	// PadTokenID is the id of the padding token (pad_token_id); RoBERTa's position ids start
	// after it, the other families only record it.
	PadTokenID int `json:"pad_token_id"`
	// NumLabels is the number of classes of the classification head.
	NumLabels int `json:"num_labels"`
	// Labels names the classes by class id, as Hugging Face's id2label (label2id is its
	// inverse): nil leaves them unnamed, written as transformers' LABEL_0, LABEL_1, ... (and
	// read back as nil), so that pipeline("text-classification") answers with these names.
	// When set, it has NumLabels distinct names. JSON writes id2label, label2id and, for a
	// sequence classifier, problem_type "single_label_classification" (the head's softmax and
	// cross-entropy) unless ProblemType says otherwise; ParseConfig reads id2label.
	Labels []string `json:"-"`
	// ProblemType is transformers' problem_type, what the head is trained for: empty or
	// "single_label_classification" (softmax and cross-entropy), "multi_label_classification"
	// (a sigmoid per class and binary cross-entropy) or "regression" (mean squared error).
	// The head is the same linear layer for all three: it only says which loss transformers
	// computes with the folder. ParseConfig reads it; JSON writes it.
	ProblemType string `json:"-"`
	// ModelType is HF's model_type, the family: "bert" (or empty), "roberta", "distilbert"
	// or "electra"; other encoders are refused, naming the supported ones.
	ModelType string `json:"model_type"`
	// PositionEmbeddingType must be "absolute" (or empty).
	PositionEmbeddingType string `json:"position_embedding_type"`
	// Architectures is HF's list of model classes that wrote the checkpoint (informative;
	// ParseConfig reads Head from it, JSON writes the class of Head).
	Architectures []string `json:"architectures,omitempty"`
	// Head is the task head: SequenceClassification (the zero value) or TokenClassification,
	// which changes what Logits returns ([B, num_labels] or [B, L, num_labels]), the head's
	// tensors (HeadTensors) and BERT's pooler (the token model has none). ParseConfig reads it
	// from architectures (a class ending in ForTokenClassification; anything else, or none,
	// is SequenceClassification); JSON writes the family's class of it
	// (BertForTokenClassification, ...); LoadOptions.Head sets it when a folder is loaded.
	Head Head `json:"-"`

	// GradientCheckpointing turns on activation checkpointing (rematerialisation) per
	// encoder layer in training graphs, as Hugging Face's gradient_checkpointing_enable():
	// only each layer's input is kept for the backward pass, and the layer's activations are
	// recomputed from it there, trading about one more forward pass of compute for the
	// memory of the activations. Losses and gradients are those of the plain graph. It is a
	// training choice, not part of the architecture: config.json neither reads nor writes it.
	// See docs/memory.md for what it saves on XLA's CPU plugin.
	GradientCheckpointing bool `json:"-"`

	// adapter is the LoRA adapter the classifier's linear layers consult (nil: none); set by
	// Classifier.AttachLoRA, read by linear.
	adapter *lora.Adapter
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
// messages (usually the file path). model_type chooses the family; keys missing from the
// file take that family's defaults (BertConfig's, RobertaConfig's, ...); num_labels falls
// back to the size of id2label, then to 2. id2label's names become Labels, unless num_labels
// gives another count (transformers then drops them too). Head is read from architectures
// (HeadOf). The result is validated.
func ParseConfig(contents []byte, name string) (Config, error) {
	var head hf.TaskKeys
	if err := json.Unmarshal(contents, &head); err != nil {
		return Config{}, fmt.Errorf("bert: parsing %s: %w", name, err)
	}
	f := familyOf(head.ModelType)
	if f == nil {
		return Config{}, fmt.Errorf("bert: %s: %w", name, unsupportedFamily(head.ModelType))
	}
	cfg := defaultConfig()
	cfg.ModelType = f.modelType
	var err error
	switch f.modelType {
	case "distilbert":
		cfg, err = parseDistilBERTConfig(contents)
	case "roberta", "xlm-roberta":
		cfg.PadTokenID = 1
		err = json.Unmarshal(contents, &cfg)
	case "electra":
		cfg.EmbeddingSize, cfg.HiddenSize, cfg.NumAttentionHeads, cfg.IntermediateSize = 128, 256, 4, 1024
		err = json.Unmarshal(contents, &cfg)
	default:
		err = json.Unmarshal(contents, &cfg)
	}
	if err != nil {
		return Config{}, fmt.Errorf("bert: parsing %s: %w", name, err)
	}
	if f.modelType != "electra" {
		cfg.EmbeddingSize = 0 // only ELECTRA reads embedding_size
	}
	task, err := head.Task(cfg.NumLabels)
	if err != nil {
		return Config{}, fmt.Errorf("bert: %s: %w", name, err)
	}
	cfg.NumLabels, cfg.Labels, cfg.ProblemType, cfg.Head = task.NumLabels, task.Labels, task.ProblemType, task.Head
	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("bert: %s: %w", name, err)
	}
	return cfg, nil
}

// unsupportedFamily is the error for a model_type outside the families.
func unsupportedFamily(modelType string) error {
	return fmt.Errorf("model_type %q is not supported: the supported families are %s",
		modelType, strings.Join(Families(), ", "))
}

// distilBERTConfig is DistilBertConfig's config.json, with its defaults.
type distilBERTConfig struct {
	VocabSize             int      `json:"vocab_size"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	Sinusoidal            bool     `json:"sinusoidal_pos_embds"`
	NLayers               int      `json:"n_layers"`
	NHeads                int      `json:"n_heads"`
	Dim                   int      `json:"dim"`
	HiddenDim             int      `json:"hidden_dim"`
	Dropout               float64  `json:"dropout"`
	AttentionDropout      float64  `json:"attention_dropout"`
	Activation            string   `json:"activation"`
	InitializerRange      float64  `json:"initializer_range"`
	SeqClassifDropout     float64  `json:"seq_classif_dropout"`
	PadTokenID            int      `json:"pad_token_id"`
	NumLabels             int      `json:"num_labels"`
	ModelType             string   `json:"model_type"`
	Architectures         []string `json:"architectures,omitempty"`
}

// parseDistilBERTConfig reads DistilBERT's keys into a Config (LayerNorm eps is 1e-12 in
// transformers' DistilBERT, not a key).
func parseDistilBERTConfig(contents []byte) (Config, error) {
	d := distilBERTConfig{VocabSize: 30522, MaxPositionEmbeddings: 512, NLayers: 6, NHeads: 12, Dim: 768,
		HiddenDim: 3072, Dropout: 0.1, AttentionDropout: 0.1, Activation: "gelu", InitializerRange: 0.02,
		SeqClassifDropout: 0.2, NumLabels: 2}
	if err := json.Unmarshal(contents, &d); err != nil {
		return Config{}, err
	}
	if d.Sinusoidal {
		return Config{}, fmt.Errorf("sinusoidal_pos_embds true is not supported: only learned positions are")
	}
	return Config{
		VocabSize: d.VocabSize, HiddenSize: d.Dim, NumHiddenLayers: d.NLayers, NumAttentionHeads: d.NHeads,
		IntermediateSize: d.HiddenDim, HiddenAct: d.Activation, MaxPositionEmbeddings: d.MaxPositionEmbeddings,
		LayerNormEps: 1e-12, HiddenDropoutProb: d.Dropout, AttentionProbsDropoutProb: d.AttentionDropout,
		ClassifierDropout: &d.SeqClassifDropout, InitializerRange: d.InitializerRange, PadTokenID: d.PadTokenID,
		NumLabels: d.NumLabels, ModelType: "distilbert", Architectures: d.Architectures,
	}, nil
}

// LoadConfig reads and validates a Hugging Face config.json file.
func LoadConfig(path string) (Config, error) { return hf.LoadConfig("bert", path, ParseConfig) }

// Validate checks that the configuration describes an encoder this package can build.
// Errors name the offending config.json key.
func (c Config) Validate() error {
	f := familyOf(c.ModelType)
	if f == nil {
		return unsupportedFamily(c.ModelType)
	}
	if err := hf.ValidateProblemType(c.ProblemType); err != nil {
		return err
	}
	if err := c.Head.Validate(); err != nil {
		return err
	}
	typeVocab := c.TypeVocabSize
	if !f.tokenTypes {
		typeVocab = 1 // not used
	}
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
		{"type_vocab_size", typeVocab},
		{"num_labels", c.NumLabels},
	}
	for _, p := range positive {
		if p.value <= 0 {
			return fmt.Errorf("%s must be positive, got %d", p.key, p.value)
		}
	}
	if err := hf.ValidateLabels(c.Labels, c.NumLabels); err != nil {
		return err
	}
	if c.HiddenSize%c.NumAttentionHeads != 0 {
		return fmt.Errorf("hidden_size (%d) must be a multiple of num_attention_heads (%d)",
			c.HiddenSize, c.NumAttentionHeads)
	}
	if c.EmbeddingSize < 0 {
		return fmt.Errorf("embedding_size must be positive, got %d", c.EmbeddingSize)
	}
	if f.paddingOffset && (c.PadTokenID < 0 || c.PadTokenID+2 > c.MaxPositionEmbeddings) {
		return fmt.Errorf("pad_token_id %d leaves no position for a token in max_position_embeddings (%d): %s positions start at pad_token_id+1",
			c.PadTokenID, c.MaxPositionEmbeddings, f.modelType)
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
		if !(r.value >= 0 && r.value < 1) { // NaN too
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
	if off := c.positionOffset(); off > 0 && maxLen+off > c.MaxPositionEmbeddings {
		return fmt.Errorf("bert: max_len %d is above the %d positions the model has: its max_position_embeddings (%d) less pad_token_id+1 (%s counts positions from there)",
			maxLen, c.MaxPositionEmbeddings-off, c.MaxPositionEmbeddings, c.Family())
	}
	if maxLen > c.MaxPositionEmbeddings {
		return fmt.Errorf("bert: max_len %d is above the model's max_position_embeddings (%d)",
			maxLen, c.MaxPositionEmbeddings)
	}
	return nil
}

// HeadDim is the width of one attention head, HiddenSize / NumAttentionHeads.
func (c Config) HeadDim() int { return c.HiddenSize / c.NumAttentionHeads }

// dropout reports whether the encoder's layers draw dropout (either rate above 0).
func (c Config) dropout() bool { return c.HiddenDropoutProb > 0 || c.AttentionProbsDropoutProb > 0 }

// classifierDropout is the dropout rate applied to the pooled output before the head.
func (c Config) classifierDropout() float64 {
	if c.ClassifierDropout != nil {
		return *c.ClassifierDropout
	}
	return c.HiddenDropoutProb
}

// tokenDropout is the dropout rate on the last hidden states before the token classifier:
// classifier_dropout, or hidden_dropout_prob when unset; DistilBERT's token model uses its
// dropout (hidden_dropout_prob here), not seq_classif_dropout.
func (c Config) tokenDropout() float64 {
	if c.family().modelType == "distilbert" {
		return c.HiddenDropoutProb
	}
	return c.classifierDropout()
}

// JSON returns the configuration as a Hugging Face config.json document for the family's
// classifier with the Config's Head (BertForSequenceClassification,
// RobertaForTokenClassification, ...), with DistilBERT's own keys for DistilBERT, and the
// head's id2label, label2id and problem_type (for a token classifier only when ProblemType
// is set: transformers writes none, its token models have one loss).
func (c Config) JSON() ([]byte, error) {
	f := c.family()
	out := c
	out.Architectures = []string{f.architecture(c.Head)}
	out.ModelType = f.modelType
	head := hf.Task{NumLabels: c.NumLabels, Labels: c.Labels, ProblemType: c.ProblemType, Head: c.Head}.JSON()
	switch f.modelType {
	case "distilbert":
		return json.MarshalIndent(struct {
			distilBERTConfig
			hf.TaskJSON
		}{distilBERTConfig{
			VocabSize: c.VocabSize, MaxPositionEmbeddings: c.MaxPositionEmbeddings, NLayers: c.NumHiddenLayers,
			NHeads: c.NumAttentionHeads, Dim: c.HiddenSize, HiddenDim: c.IntermediateSize, Dropout: c.HiddenDropoutProb,
			AttentionDropout: c.AttentionProbsDropoutProb, Activation: c.HiddenAct, InitializerRange: c.InitializerRange,
			SeqClassifDropout: c.classifierDropout(), PadTokenID: c.PadTokenID, NumLabels: c.NumLabels,
			ModelType: f.modelType, Architectures: out.Architectures,
		}, head}, "", "  ")
	case "electra":
		out.EmbeddingSize = c.embeddingSize()
	}
	if out.PositionEmbeddingType == "" {
		out.PositionEmbeddingType = "absolute"
	}
	return json.MarshalIndent(struct {
		Config
		hf.TaskJSON
	}{out, head}, "", "  ")
}
