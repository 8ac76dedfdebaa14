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
	// MLPRatio, LayerScaleValue, DropPathRate, UseSwiGLUFFN and UseMaskToken are
	// Dinov2Config's (ModelType DINOv2): the feed-forward's width as a multiple of
	// hidden_size (mlp_ratio; intermediate_size is not read), the initial layer scale
	// (layerscale_value), the stochastic depth rate of every layer (drop_path_rate), the
	// SwiGLU feed-forward (use_swiglu_ffn) and the masked-image-modeling token
	// (use_mask_token, not used by the classifier).
	MLPRatio float64 `json:"-"`
	// LayerScaleValue: see MLPRatio.
	LayerScaleValue float64 `json:"-"`
	// DropPathRate: see MLPRatio.
	DropPathRate float64 `json:"-"`
	// UseSwiGLUFFN: see MLPRatio.
	UseSwiGLUFFN bool `json:"-"`
	// UseMaskToken: see MLPRatio.
	UseMaskToken bool `json:"-"`
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

	// ModelType is config.json's model_type: ViT ("vit") or DINOv2 ("dinov2").
	ModelType string `json:"-"`

	// architectures is config.json's architectures as ParseConfig read it.
	architectures []string
}

// The model types this package reads.
const (
	// ViT is ViTForImageClassification's model_type.
	ViT = "vit"
	// DINOv2 is Dinov2ForImageClassification's: ViT's encoder with norm1 and norm2, a layer
	// scale on each sub-layer's output, stochastic depth, a SwiGLU feed-forward when
	// use_swiglu_ffn, position embeddings always interpolated to the image's size, and the
	// classifier on the CLS token concatenated with the mean of the patch tokens.
	DINOv2 = "dinov2"
)

// prefix is the module of the encoder's tensors ("vit", "dinov2").
func (c Config) prefix() string { return c.ModelType }

// defaultConfig holds ViTConfig's defaults (google/vit-base-patch16-224's shape).
func defaultConfig() Config {
	return Config{HiddenSize: 768, NumHiddenLayers: 12, NumAttentionHeads: 12, IntermediateSize: 3072,
		HiddenAct: "gelu", InitializerRange: 0.02, LayerNormEps: 1e-12, ImageSize: 224, PatchSize: 16,
		NumChannels: 3, QKVBias: true, EncoderStride: 16, PoolerAct: "tanh", NumLabels: 2, ModelType: ViT}
}

// defaultDINOv2 holds Dinov2Config's defaults (facebook/dinov2-base's shape).
func defaultDINOv2() Config {
	return Config{HiddenSize: 768, NumHiddenLayers: 12, NumAttentionHeads: 12, MLPRatio: 4, HiddenAct: "gelu",
		InitializerRange: 0.02, LayerNormEps: 1e-6, ImageSize: 224, PatchSize: 14, NumChannels: 3, QKVBias: true,
		LayerScaleValue: 1, UseMaskToken: true, NumLabels: 2, ModelType: DINOv2, InterpolatePosEncoding: true}
}

// dinov2Keys are Dinov2Config's keys that ViTConfig has not.
type dinov2Keys struct {
	MLPRatio        *float64 `json:"mlp_ratio"`
	LayerScaleValue *float64 `json:"layerscale_value"`
	DropPathRate    *float64 `json:"drop_path_rate"`
	UseSwiGLUFFN    *bool    `json:"use_swiglu_ffn"`
	UseMaskToken    *bool    `json:"use_mask_token"`
}

// FFNWidth is the width of the feed-forward block: intermediate_size (ViT), int(hidden_size ·
// mlp_ratio) (DINOv2), or for DINOv2's SwiGLU two thirds of that rounded up to a multiple of
// 8, as transformers computes it.
func (c Config) FFNWidth() int {
	if c.ModelType != DINOv2 {
		return c.IntermediateSize
	}
	w := int(float64(c.HiddenSize) * c.MLPRatio)
	if c.UseSwiGLUFFN {
		w = (int(float64(w)*2/3) + 7) / 8 * 8
	}
	return w
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
	var cfg Config
	switch keys.ModelType {
	case ViT:
		cfg = defaultConfig()
	case DINOv2:
		cfg = defaultDINOv2()
	default:
		return Config{}, fmt.Errorf("vit: %s: model_type %q is not \"vit\" or \"dinov2\"", name, keys.ModelType)
	}
	if err := json.Unmarshal(contents, &cfg); err != nil {
		return Config{}, fmt.Errorf("vit: parsing %s: %w", name, err)
	}
	if cfg.ModelType == DINOv2 {
		var d dinov2Keys
		if err := json.Unmarshal(contents, &d); err != nil {
			return Config{}, fmt.Errorf("vit: parsing %s: %w", name, err)
		}
		for _, f := range []struct {
			v   *float64
			dst *float64
		}{{d.MLPRatio, &cfg.MLPRatio}, {d.LayerScaleValue, &cfg.LayerScaleValue}, {d.DropPathRate, &cfg.DropPathRate}} {
			if f.v != nil {
				*f.dst = *f.v
			}
		}
		if d.UseSwiGLUFFN != nil {
			cfg.UseSwiGLUFFN = *d.UseSwiGLUFFN
		}
		if d.UseMaskToken != nil {
			cfg.UseMaskToken = *d.UseMaskToken
		}
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
		return Config{}, fmt.Errorf("vit: %s: architectures %q is not an image classifier (%sForImageClassification)", name, keys.Architectures, cfg.className())
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
		{"num_attention_heads", c.NumAttentionHeads}, {c.ffnKey(), c.FFNWidth()},
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
	}{{"hidden_dropout_prob", c.HiddenDropoutProb}, {"attention_probs_dropout_prob", c.AttentionProbsDropoutProb},
		{"drop_path_rate", c.DropPathRate}} {
		if !(r.value >= 0 && r.value < 1) {
			return fmt.Errorf("%s must be in [0, 1), got %g", r.key, r.value)
		}
	}
	if c.ModelType != ViT && c.ModelType != DINOv2 {
		return fmt.Errorf("model_type %q is not %q or %q", c.ModelType, ViT, DINOv2)
	}
	if c.ModelType == DINOv2 && !c.InterpolatePosEncoding {
		return fmt.Errorf("dinov2 always interpolates its position embeddings (InterpolatePosEncoding must stay true)")
	}
	if c.InitializerRange < 0 {
		return fmt.Errorf("initializer_range must not be negative, got %g", c.InitializerRange)
	}
	return hf.ValidateLabels(c.Labels, c.NumLabels)
}

// ffnKey is the config.json key the feed-forward's width comes from.
func (c Config) ffnKey() string {
	if c.ModelType == DINOv2 {
		return "mlp_ratio"
	}
	return "intermediate_size"
}

// className is transformers' class name of the model type, less the head ("ViT", "Dinov2").
func (c Config) className() string {
	if c.ModelType == DINOv2 {
		return "Dinov2"
	}
	return "ViT"
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

// JSON returns the configuration as a config.json document for ViTForImageClassification
// (Dinov2ForImageClassification for DINOv2): its config class's keys, id2label, label2id and
// problem_type (single_label_classification when the configuration says none, as every
// family writes it).
func (c Config) JSON() ([]byte, error) {
	type extra struct {
		ModelType     string   `json:"model_type"`
		Architectures []string `json:"architectures"`
		ImageSize     int      `json:"image_size"`
		PatchSize     int      `json:"patch_size"`
		hf.TaskJSON
	}
	e := extra{ModelType: c.ModelType, Architectures: []string{c.className() + hf.ImageClassification.String()},
		ImageSize: c.ImageSize, PatchSize: c.PatchSize,
		TaskJSON: hf.Task{NumLabels: c.NumLabels, Labels: c.Labels, ProblemType: c.ProblemType, Head: hf.ImageClassification}.JSON()}
	// transformers 5's configs are strict dataclasses: a float field must read as a float.
	b, err := json.Marshal(struct {
		Config
		extra
		HiddenDropoutProb         hf.PyFloat `json:"hidden_dropout_prob"`
		AttentionProbsDropoutProb hf.PyFloat `json:"attention_probs_dropout_prob"`
		InitializerRange          hf.PyFloat `json:"initializer_range"`
		LayerNormEps              hf.PyFloat `json:"layer_norm_eps"`
	}{c, e, hf.PyFloat(c.HiddenDropoutProb), hf.PyFloat(c.AttentionProbsDropoutProb), hf.PyFloat(c.InitializerRange),
		hf.PyFloat(c.LayerNormEps)})
	if err != nil {
		return nil, err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if c.ModelType == DINOv2 { // Dinov2Config has none of ViT's feed-forward, decoder and pooler keys
		for _, k := range []string{"intermediate_size", "encoder_stride", "pooler_output_size", "pooler_act"} {
			delete(doc, k)
		}
		ratio := json.RawMessage(fmt.Sprint(c.MLPRatio)) // an int field in Dinov2Config
		if c.MLPRatio != float64(int(c.MLPRatio)) {
			return nil, fmt.Errorf("vit: mlp_ratio %g: transformers' Dinov2Config takes an integer", c.MLPRatio)
		}
		for k, v := range map[string]any{"mlp_ratio": ratio, "layerscale_value": hf.PyFloat(c.LayerScaleValue),
			"drop_path_rate": hf.PyFloat(c.DropPathRate), "use_swiglu_ffn": c.UseSwiGLUFFN, "use_mask_token": c.UseMaskToken} {
			if doc[k], err = json.Marshal(v); err != nil {
				return nil, err
			}
		}
	}
	return json.MarshalIndent(doc, "", "  ")
}
