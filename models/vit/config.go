package vit

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/goaccel/goaccel/models/internal/hf"
)

// Config holds the hyperparameters of a ViT encoder and its image-classification head, with
// the names and meaning of transformers' ViTConfig (config.json, model_type "vit").
//
// image_size and patch_size are read as integers, or as [height, width] lists of two equal
// sides; other keys ViTForImageClassification reads but this package does not compute are
// refused by ParseConfig naming the file and the key (a head_dim other than hidden_size /
// num_attention_heads, an unsupported hidden_act, a non-square image or patch).
type Config struct {
	// HiddenSize is the width of every token (hidden_size).
	HiddenSize int `json:"hidden_size"`
	// NumHiddenLayers is the number of encoder layers (num_hidden_layers).
	NumHiddenLayers int `json:"num_hidden_layers"`
	// NumAttentionHeads is the number of attention heads; it divides HiddenSize.
	NumAttentionHeads int `json:"num_attention_heads"`
	// IntermediateSize is the width of the feed-forward block (intermediate_size).
	IntermediateSize int `json:"intermediate_size"`
	// HiddenAct is the feed-forward's activation (hidden_act): see hf.Activations.
	HiddenAct string `json:"hidden_act"`
	// HiddenDropoutProb is the dropout rate after the embeddings and on each sub-layer's
	// output (hidden_dropout_prob).
	HiddenDropoutProb float64 `json:"hidden_dropout_prob"`
	// AttentionProbsDropoutProb is the dropout rate on the attention probabilities
	// (attention_probs_dropout_prob).
	AttentionProbsDropoutProb float64 `json:"attention_probs_dropout_prob"`
	// InitializerRange is the standard deviation of fresh weights (initializer_range).
	InitializerRange float64 `json:"initializer_range"`
	// LayerNormEps is the epsilon of every LayerNorm (layer_norm_eps).
	LayerNormEps float64 `json:"layer_norm_eps"`
	// ImageSize is the side of the images the position embeddings were made for
	// (image_size): (ImageSize/PatchSize)² patches and the CLS token.
	ImageSize int `json:"-"`
	// PatchSize is the side of a patch (patch_size), the patch embedding's kernel and stride.
	PatchSize int `json:"-"`
	// NumChannels is the number of channels of the pixels (num_channels, 3).
	NumChannels int `json:"num_channels"`
	// QKVBias gives the query, key and value projections a bias (qkv_bias).
	QKVBias bool `json:"qkv_bias"`
	// EncoderStride is kept for config.json (the masked-image-modeling decoder's; not read).
	EncoderStride int `json:"encoder_stride"`
	// PoolerOutputSize and PoolerAct are kept for config.json (ViTModel's pooler, which the
	// image classifier does not have).
	PoolerOutputSize *int `json:"pooler_output_size"`
	// PoolerAct: see PoolerOutputSize.
	PoolerAct string `json:"pooler_act"`
	// NumLabels is the number of classes of the classifier.
	NumLabels int `json:"num_labels"`
	// Labels names the classes by class id, as transformers' id2label (label2id is its
	// inverse); nil leaves them unnamed (LABEL_0, LABEL_1, ... in config.json).
	Labels []string `json:"-"`
	// ProblemType is transformers' problem_type: empty or "single_label_classification",
	// "multi_label_classification" or "regression"; it says which loss transformers computes.
	ProblemType string `json:"-"`

	// InterpolatePosEncoding lets Logits take images of another size than ImageSize, the
	// position embeddings resized by bicubic interpolation as transformers'
	// interpolate_pos_encoding=True does; without it another size panics. A use choice, not
	// part of config.json.
	InterpolatePosEncoding bool `json:"-"`
	// GradientCheckpointing recomputes each encoder layer from its input in the backward pass
	// of training graphs (transformers' gradient_checkpointing_enable()), dropout's random
	// bits included; not part of config.json.
	GradientCheckpointing bool `json:"-"`

	// architectures is config.json's architectures as ParseConfig read it.
	architectures []string
}

// defaultConfig holds ViTConfig's defaults (google/vit-base-patch16-224's shape).
func defaultConfig() Config {
	return Config{HiddenSize: 768, NumHiddenLayers: 12, NumAttentionHeads: 12, IntermediateSize: 3072,
		HiddenAct: "gelu", InitializerRange: 0.02, LayerNormEps: 1e-12, ImageSize: 224, PatchSize: 16,
		NumChannels: 3, QKVBias: true, EncoderStride: 16, PoolerAct: "tanh", NumLabels: 2}
}

// fileKeys are the config.json keys read besides Config's own fields.
type fileKeys struct {
	hf.TaskKeys
	ImageSize json.RawMessage `json:"image_size"`
	PatchSize json.RawMessage `json:"patch_size"`
	HeadDim   *int            `json:"head_dim"`
}

// ParseConfig parses the contents of a ViT config.json; name is used in error messages
// (usually the file path). Keys missing from the file take ViTConfig's defaults; num_labels
// falls back to the size of id2label, then to 2. The result is validated.
func ParseConfig(contents []byte, name string) (Config, error) {
	var keys fileKeys
	if err := json.Unmarshal(contents, &keys); err != nil {
		return Config{}, fmt.Errorf("vit: parsing %s: %w", name, err)
	}
	if keys.ModelType != "vit" {
		return Config{}, fmt.Errorf("vit: %s: model_type %q is not \"vit\"", name, keys.ModelType)
	}
	cfg := defaultConfig()
	if err := json.Unmarshal(contents, &cfg); err != nil {
		return Config{}, fmt.Errorf("vit: parsing %s: %w", name, err)
	}
	var err error
	if cfg.ImageSize, err = side(keys.ImageSize, "image_size", cfg.ImageSize); err != nil {
		return Config{}, fmt.Errorf("vit: %s: %w", name, err)
	}
	if cfg.PatchSize, err = side(keys.PatchSize, "patch_size", cfg.PatchSize); err != nil {
		return Config{}, fmt.Errorf("vit: %s: %w", name, err)
	}
	if keys.HeadDim != nil && cfg.NumAttentionHeads > 0 && *keys.HeadDim != cfg.HiddenSize/cfg.NumAttentionHeads {
		return Config{}, fmt.Errorf("vit: %s: head_dim %d is not supported: only hidden_size / num_attention_heads (%d)",
			name, *keys.HeadDim, cfg.HiddenSize/cfg.NumAttentionHeads)
	}
	task, err := keys.Task(cfg.NumLabels)
	if err != nil {
		return Config{}, fmt.Errorf("vit: %s: %w", name, err)
	}
	cfg.NumLabels, cfg.Labels, cfg.ProblemType = task.NumLabels, task.Labels, task.ProblemType
	cfg.architectures = keys.Architectures
	if h, ok := hf.HeadOf(keys.Architectures); ok && h != hf.ImageClassification {
		return Config{}, fmt.Errorf("vit: %s: architectures %q is not an image classifier (ViTForImageClassification)", name, keys.Architectures)
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("vit: %s: %w", name, err)
	}
	return cfg, nil
}

// side reads an image or patch side: an integer, or [height, width] with equal sides; def
// when the key is missing or null.
func side(raw json.RawMessage, key string, def int) (int, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return def, nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err == nil {
		return n, nil
	}
	var hw []int
	if err := json.Unmarshal(raw, &hw); err != nil || len(hw) != 2 {
		return 0, fmt.Errorf("%s %s: want an integer or [height, width]", key, s)
	}
	if hw[0] != hw[1] {
		return 0, fmt.Errorf("%s %s is not supported: only square sides", key, s)
	}
	return hw[0], nil
}

// LoadConfig reads and validates a ViT config.json file.
func LoadConfig(path string) (Config, error) { return hf.LoadConfig("vit", path, ParseConfig) }

// Validate checks that the configuration describes a model this package can build; errors
// name the config.json key.
func (c Config) Validate() error {
	if err := hf.ValidateProblemType(c.ProblemType); err != nil {
		return err
	}
	for _, p := range []struct {
		key   string
		value int
	}{
		{"hidden_size", c.HiddenSize}, {"num_hidden_layers", c.NumHiddenLayers},
		{"num_attention_heads", c.NumAttentionHeads}, {"intermediate_size", c.IntermediateSize},
		{"image_size", c.ImageSize}, {"patch_size", c.PatchSize}, {"num_channels", c.NumChannels},
		{"num_labels", c.NumLabels},
	} {
		if p.value <= 0 {
			return fmt.Errorf("%s must be positive, got %d", p.key, p.value)
		}
	}
	if c.HiddenSize%c.NumAttentionHeads != 0 {
		return fmt.Errorf("hidden_size (%d) must be a multiple of num_attention_heads (%d)", c.HiddenSize, c.NumAttentionHeads)
	}
	if c.ImageSize < c.PatchSize {
		return fmt.Errorf("image_size (%d) is smaller than patch_size (%d): no patch", c.ImageSize, c.PatchSize)
	}
	if !slices.Contains(hf.Activations(), c.HiddenAct) {
		return fmt.Errorf("hidden_act %q is not supported: use one of %s", c.HiddenAct, strings.Join(hf.Activations(), ", "))
	}
	if !(c.LayerNormEps > 0) {
		return fmt.Errorf("layer_norm_eps must be positive, got %g", c.LayerNormEps)
	}
	for _, r := range []struct {
		key   string
		value float64
	}{{"hidden_dropout_prob", c.HiddenDropoutProb}, {"attention_probs_dropout_prob", c.AttentionProbsDropoutProb}} {
		if !(r.value >= 0 && r.value < 1) {
			return fmt.Errorf("%s must be in [0, 1), got %g", r.key, r.value)
		}
	}
	if c.InitializerRange < 0 {
		return fmt.Errorf("initializer_range must not be negative, got %g", c.InitializerRange)
	}
	return hf.ValidateLabels(c.Labels, c.NumLabels)
}

// HeadDim is the width of one attention head, HiddenSize / NumAttentionHeads.
func (c Config) HeadDim() int { return c.HiddenSize / c.NumAttentionHeads }

// NumPatches is the number of patches of an image of ImageSize, (ImageSize/PatchSize)²: the
// position embeddings are one per patch and one for the CLS token.
func (c Config) NumPatches() int { return (c.ImageSize / c.PatchSize) * (c.ImageSize / c.PatchSize) }

// CheckImageSize refuses images of side n that the model cannot take: below patch_size, or
// another side than image_size without InterpolatePosEncoding.
func (c Config) CheckImageSize(n int) error {
	if n < c.PatchSize {
		return fmt.Errorf("vit: image size %d is below patch_size %d", n, c.PatchSize)
	}
	if n != c.ImageSize && !c.InterpolatePosEncoding {
		return fmt.Errorf("vit: image size %d differs from config.json's image_size %d: ask for interpolate_pos_encoding "+
			"(auto.Options.InterpolatePosEncoding) to resize the position embeddings", n, c.ImageSize)
	}
	return nil
}

// JSON returns the configuration as a config.json document for ViTForImageClassification:
// ViTConfig's keys, id2label, label2id and problem_type (single_label_classification when
// the configuration says none, as every family writes it).
func (c Config) JSON() ([]byte, error) {
	type extra struct {
		ModelType     string   `json:"model_type"`
		Architectures []string `json:"architectures"`
		ImageSize     int      `json:"image_size"`
		PatchSize     int      `json:"patch_size"`
		hf.TaskJSON
	}
	e := extra{ModelType: "vit", Architectures: []string{"ViT" + hf.ImageClassification.String()},
		ImageSize: c.ImageSize, PatchSize: c.PatchSize,
		TaskJSON: hf.Task{NumLabels: c.NumLabels, Labels: c.Labels, ProblemType: c.ProblemType, Head: hf.ImageClassification}.JSON()}
	// transformers 5's configs are strict dataclasses: a float field must read as a float.
	return json.MarshalIndent(struct {
		Config
		extra
		HiddenDropoutProb         hf.PyFloat `json:"hidden_dropout_prob"`
		AttentionProbsDropoutProb hf.PyFloat `json:"attention_probs_dropout_prob"`
		InitializerRange          hf.PyFloat `json:"initializer_range"`
		LayerNormEps              hf.PyFloat `json:"layer_norm_eps"`
	}{c, e, hf.PyFloat(c.HiddenDropoutProb), hf.PyFloat(c.AttentionProbsDropoutProb), hf.PyFloat(c.InitializerRange),
		hf.PyFloat(c.LayerNormEps)}, "", "  ")
}
