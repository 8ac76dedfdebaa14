package convnext

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/goaccel/goaccel/models/internal/hf"
)

// The model types this package reads.
const (
	// V1 is model_type "convnext" (ConvNextForImageClassification: facebook/convnext-*):
	// layer scale after each block.
	V1 = "convnext"
	// V2 is model_type "convnextv2" (ConvNextV2ForImageClassification:
	// facebook/convnextv2-*): GRN inside each block, no layer scale.
	V2 = "convnextv2"
)

// Config holds the hyperparameters of a ConvNeXt image classifier, with the names and
// meaning of transformers' ConvNextConfig and ConvNextV2Config (config.json). Keys of the
// backbones (out_features, out_indices, stage_names) are read and passed over.
type Config struct {
	// ModelType is V1 or V2 (model_type).
	ModelType string `json:"model_type"`
	// NumChannels is the channels of the input images (num_channels).
	NumChannels int `json:"num_channels"`
	// PatchSize is the side of the stem's patches, its convolution's kernel and stride
	// (patch_size).
	PatchSize int `json:"patch_size"`
	// NumStages is the number of stages (num_stages); hidden_sizes and depths have as many
	// entries.
	NumStages int `json:"num_stages"`
	// HiddenSizes is each stage's channels (hidden_sizes).
	HiddenSizes []int `json:"hidden_sizes"`
	// Depths is each stage's number of blocks (depths).
	Depths []int `json:"depths"`
	// HiddenAct is the activation of the inverted bottleneck (hidden_act): see Activations.
	HiddenAct string `json:"hidden_act"`
	// InitializerRange is the standard deviation of fresh weights (initializer_range).
	InitializerRange float64 `json:"initializer_range"`
	// LayerNormEps is the epsilon of the final LayerNorm of the pooled features
	// (layer_norm_eps); the other LayerNorms have 1e-6, as in transformers.
	LayerNormEps float64 `json:"layer_norm_eps"`
	// LayerScaleInitValue is the initial value of each block's layer scale
	// (layer_scale_init_value); 0 or less leaves layer scale out. V1 only.
	LayerScaleInitValue float64 `json:"layer_scale_init_value"`
	// DropPathRate is the stochastic depth of the last block (drop_path_rate): block k of
	// the n blocks drops its residual branch with probability DropPathRate·k/(n-1) in
	// training.
	DropPathRate float64 `json:"drop_path_rate"`
	// ImageSize is the checkpoint's image size (image_size; a square pair is read as one
	// side), recorded for the processor: the model takes any size its strides leave a pixel
	// of.
	ImageSize int `json:"image_size"`
	// NumLabels is the number of classes of the classifier.
	NumLabels int `json:"num_labels"`
	// Labels names the classes by class id (id2label); nil leaves them unnamed.
	Labels []string `json:"-"`
	// ProblemType is transformers' problem_type (empty, "single_label_classification",
	// "multi_label_classification" or "regression").
	ProblemType string `json:"-"`

	// GradientCheckpointing recomputes each block from its input in the backward pass: a
	// training choice, not written to config.json.
	GradientCheckpointing bool `json:"-"`
}

// Activations lists the hidden_act values this package computes, with transformers' meaning.
func Activations() []string { return hf.Activations() }

// defaultConfig holds ConvNextConfig's defaults (facebook/convnext-tiny-224's shape).
func defaultConfig(modelType string) Config {
	c := Config{ModelType: modelType, NumChannels: 3, PatchSize: 4, NumStages: 4, HiddenAct: "gelu",
		InitializerRange: 0.02, LayerNormEps: 1e-12, ImageSize: 224, NumLabels: 2}
	if modelType == V1 {
		c.LayerScaleInitValue = 1e-6
	}
	return c
}

// fileKeys are the config.json keys read besides Config's own fields.
type fileKeys struct {
	hf.TaskKeys
	PatchSize json.RawMessage `json:"patch_size"`
	ImageSize json.RawMessage `json:"image_size"`
}

// ParseConfig parses the contents of a ConvNeXt or ConvNeXt-V2 config.json; name is used in
// error messages (usually the file path). Keys missing from the file take transformers'
// defaults; the result is validated, and a value this package does not compute is an error
// naming the file and the key.
func ParseConfig(contents []byte, name string) (Config, error) {
	var keys fileKeys
	if err := json.Unmarshal(contents, &keys); err != nil {
		return Config{}, fmt.Errorf("convnext: parsing %s: %w", name, err)
	}
	if keys.ModelType != V1 && keys.ModelType != V2 {
		return Config{}, fmt.Errorf("convnext: %s: model_type %q is not %q or %q", name, keys.ModelType, V1, V2)
	}
	cfg := defaultConfig(keys.ModelType)
	for _, k := range []struct {
		key string
		raw json.RawMessage
		to  *int
	}{{"patch_size", keys.PatchSize, &cfg.PatchSize}, {"image_size", keys.ImageSize, &cfg.ImageSize}} {
		if len(k.raw) == 0 || string(k.raw) == "null" {
			continue
		}
		v, err := squareSize(k.raw)
		if err != nil {
			return Config{}, fmt.Errorf("convnext: %s: %s %s: %w", name, k.key, k.raw, err)
		}
		*k.to = v
	}
	type plain Config // the same fields without the sizes, which may be pairs
	var body struct {
		plain
		PatchSize json.RawMessage `json:"patch_size"`
		ImageSize json.RawMessage `json:"image_size"`
	}
	body.plain = plain(cfg)
	if err := json.Unmarshal(contents, &body); err != nil {
		return Config{}, fmt.Errorf("convnext: parsing %s: %w", name, err)
	}
	patch, image := cfg.PatchSize, cfg.ImageSize
	cfg = Config(body.plain)
	cfg.PatchSize, cfg.ImageSize = patch, image
	if cfg.HiddenSizes == nil {
		cfg.HiddenSizes = []int{96, 192, 384, 768}
	}
	if cfg.Depths == nil {
		cfg.Depths = []int{3, 3, 9, 3}
	}
	task, err := keys.Task(cfg.NumLabels)
	if err != nil {
		return Config{}, fmt.Errorf("convnext: %s: %w", name, err)
	}
	cfg.NumLabels, cfg.Labels, cfg.ProblemType = task.NumLabels, task.Labels, task.ProblemType
	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("convnext: %s: %w", name, err)
	}
	return cfg, nil
}

// squareSize reads a size written as an int or as a pair of equal ints.
func squareSize(raw json.RawMessage) (int, error) {
	var n int
	if err := json.Unmarshal(raw, &n); err == nil {
		return n, nil
	}
	var pair []int
	if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
		return 0, fmt.Errorf("want an int or a pair of ints")
	}
	if pair[0] != pair[1] {
		return 0, fmt.Errorf("only square sizes are supported")
	}
	return pair[0], nil
}

// LoadConfig reads and validates a ConvNeXt config.json file.
func LoadConfig(path string) (Config, error) { return hf.LoadConfig("convnext", path, ParseConfig) }

// Validate checks that the configuration describes a model this package can build; errors
// name the config.json key.
func (c Config) Validate() error {
	if c.ModelType != V1 && c.ModelType != V2 {
		return fmt.Errorf("model_type %q is not %q or %q", c.ModelType, V1, V2)
	}
	if err := hf.ValidateProblemType(c.ProblemType); err != nil {
		return err
	}
	for _, p := range []struct {
		key   string
		value int
	}{{"num_channels", c.NumChannels}, {"patch_size", c.PatchSize}, {"num_stages", c.NumStages}, {"num_labels", c.NumLabels}} {
		if p.value <= 0 {
			return fmt.Errorf("%s must be positive, got %d", p.key, p.value)
		}
	}
	if len(c.HiddenSizes) != c.NumStages || len(c.Depths) != c.NumStages {
		return fmt.Errorf("hidden_sizes %v and depths %v must have num_stages (%d) entries", c.HiddenSizes, c.Depths, c.NumStages)
	}
	for i := range c.HiddenSizes {
		if c.HiddenSizes[i] <= 0 || c.Depths[i] < 0 {
			return fmt.Errorf("hidden_sizes[%d] (%d) must be positive and depths[%d] (%d) not negative", i, c.HiddenSizes[i], i, c.Depths[i])
		}
	}
	if !slices.Contains(Activations(), c.HiddenAct) {
		return fmt.Errorf("hidden_act %q is not supported: use one of %s", c.HiddenAct, strings.Join(Activations(), ", "))
	}
	if !(c.DropPathRate >= 0 && c.DropPathRate < 1) {
		return fmt.Errorf("drop_path_rate must be in [0, 1), got %g", c.DropPathRate)
	}
	if !(c.LayerNormEps > 0) {
		return fmt.Errorf("layer_norm_eps must be positive, got %g", c.LayerNormEps)
	}
	if c.InitializerRange < 0 {
		return fmt.Errorf("initializer_range must not be negative, got %g", c.InitializerRange)
	}
	return hf.ValidateLabels(c.Labels, c.NumLabels)
}

// layerScale reports whether the blocks have a layer scale (V1 with a positive
// layer_scale_init_value).
func (c Config) layerScale() bool { return c.ModelType == V1 && c.LayerScaleInitValue > 0 }

// dropPathRates are the blocks' drop-path rates, stage by stage: torch.linspace(0,
// drop_path_rate, sum(depths)), in float32 as PyTorch computes it.
func (c Config) dropPathRates() [][]float64 {
	total := 0
	for _, d := range c.Depths {
		total += d
	}
	out := make([][]float64, len(c.Depths))
	k := 0
	for i, d := range c.Depths {
		for range d {
			r := 0.0
			if total > 1 {
				r = float64(float32(c.DropPathRate * float64(k) / float64(total-1)))
			}
			out[i] = append(out[i], r)
			k++
		}
	}
	return out
}

// JSON returns the configuration as a config.json document for ConvNextForImageClassification
// (ConvNextV2ForImageClassification for V2), with id2label, label2id and problem_type.
func (c Config) JSON() ([]byte, error) {
	class := "ConvNextForImageClassification"
	if c.ModelType == V2 {
		class = "ConvNextV2ForImageClassification"
	}
	type extra struct {
		Architectures []string `json:"architectures"`
		hf.TaskJSON
	}
	e := extra{Architectures: []string{class},
		TaskJSON: hf.Task{NumLabels: c.NumLabels, Labels: c.Labels, ProblemType: c.ProblemType}.JSON()}
	out := struct {
		Config
		extra
		InitializerRange    hf.PyFloat  `json:"initializer_range"`
		LayerNormEps        hf.PyFloat  `json:"layer_norm_eps"`
		LayerScaleInitValue *hf.PyFloat `json:"layer_scale_init_value,omitempty"`
		DropPathRate        hf.PyFloat  `json:"drop_path_rate"`
	}{Config: c, extra: e, InitializerRange: hf.PyFloat(c.InitializerRange), LayerNormEps: hf.PyFloat(c.LayerNormEps),
		DropPathRate: hf.PyFloat(c.DropPathRate)}
	if c.ModelType == V1 {
		v := hf.PyFloat(c.LayerScaleInitValue)
		out.LayerScaleInitValue = &v
	}
	return json.MarshalIndent(out, "", "  ")
}
