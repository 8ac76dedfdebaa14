package resnet

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/goaccel/goaccel/models/internal/hf"
)

// Layer types, as config.json's layer_type names them.
const (
	// Basic is the residual layer of two 3x3 convolutions (ResNet-18 and -34).
	Basic = "basic"
	// Bottleneck is the residual layer of a 1x1 reduction by 4, a 3x3 convolution and a 1x1
	// expansion (ResNet-50 and above).
	Bottleneck = "bottleneck"
)

// Config holds the hyperparameters of a ResNet image classifier, with the names and meaning
// of transformers' ResNetConfig (config.json). Keys of ResNetBackbone (out_features,
// out_indices, stage_names) are read and passed over: the classifier does not use them.
type Config struct {
	// NumChannels is the channels of the input images (num_channels, 3 for RGB).
	NumChannels int `json:"num_channels"`
	// EmbeddingSize is the channels of the stem's 7x7 convolution (embedding_size).
	EmbeddingSize int `json:"embedding_size"`
	// HiddenSizes is each stage's output channels (hidden_sizes); the last is the width of
	// the pooled features the classifier reads.
	HiddenSizes []int `json:"hidden_sizes"`
	// Depths is each stage's number of residual layers (depths).
	Depths []int `json:"depths"`
	// LayerType is Basic or Bottleneck (layer_type).
	LayerType string `json:"layer_type"`
	// HiddenAct is the activation of the stem and of each layer's output, after the
	// residual sum (hidden_act): see Activations. The activations inside a layer are ReLU
	// whatever it says, as in transformers.
	HiddenAct string `json:"hidden_act"`
	// DownsampleInFirstStage halves the resolution in the first stage too (its first layer
	// has stride 2; downsample_in_first_stage).
	DownsampleInFirstStage bool `json:"downsample_in_first_stage"`
	// DownsampleInBottleneck puts a bottleneck's stride on its first 1x1 convolution instead
	// of its 3x3 one (downsample_in_bottleneck; microsoft/resnet-* have false, v1.5).
	DownsampleInBottleneck bool `json:"downsample_in_bottleneck"`
	// NumLabels is the number of classes of the classifier.
	NumLabels int `json:"num_labels"`
	// Labels names the classes by class id, as transformers' id2label (label2id is its
	// inverse); nil leaves them unnamed (LABEL_0, LABEL_1, ... in config.json).
	Labels []string `json:"-"`
	// ProblemType is transformers' problem_type: empty or "single_label_classification",
	// "multi_label_classification" or "regression".
	ProblemType string `json:"-"`

	// BatchNormMomentum is every BatchNorm's update factor of the running statistics (0:
	// PyTorch's 0.1; transformers' ResNet keeps torch.nn.BatchNorm2d's default). It is a
	// training choice: config.json neither reads nor writes it.
	BatchNormMomentum float64 `json:"-"`
	// GradientCheckpointing recomputes each residual layer from its input in the backward
	// pass (transformers' gradient_checkpointing_enable()): a training choice, not written to
	// config.json.
	GradientCheckpointing bool `json:"-"`
}

// Activations lists the hidden_act values this package computes, with transformers' meaning.
func Activations() []string { return hf.Activations() }

// defaultConfig holds ResNetConfig's defaults (microsoft/resnet-50's shape).
func defaultConfig() Config {
	return Config{NumChannels: 3, EmbeddingSize: 64, HiddenSizes: []int{256, 512, 1024, 2048}, Depths: []int{3, 4, 6, 3},
		LayerType: Bottleneck, HiddenAct: "relu", NumLabels: 2}
}

// fileKeys are the config.json keys read besides Config's own fields.
type fileKeys struct {
	hf.TaskKeys
}

// ParseConfig parses the contents of a ResNet config.json; name is used in error messages
// (usually the file path). Keys missing from the file take ResNetConfig's defaults;
// num_labels falls back to the size of id2label, then to 2. The result is validated: a
// value this package does not compute is an error naming the file and the key.
func ParseConfig(contents []byte, name string) (Config, error) {
	var keys fileKeys
	if err := json.Unmarshal(contents, &keys); err != nil {
		return Config{}, fmt.Errorf("resnet: parsing %s: %w", name, err)
	}
	if keys.ModelType != "resnet" {
		return Config{}, fmt.Errorf("resnet: %s: model_type %q is not \"resnet\"", name, keys.ModelType)
	}
	cfg := defaultConfig()
	cfg.HiddenSizes, cfg.Depths = nil, nil
	if err := json.Unmarshal(contents, &cfg); err != nil {
		return Config{}, fmt.Errorf("resnet: parsing %s: %w", name, err)
	}
	def := defaultConfig()
	if cfg.HiddenSizes == nil {
		cfg.HiddenSizes = def.HiddenSizes
	}
	if cfg.Depths == nil {
		cfg.Depths = def.Depths
	}
	task, err := keys.Task(cfg.NumLabels)
	if err != nil {
		return Config{}, fmt.Errorf("resnet: %s: %w", name, err)
	}
	cfg.NumLabels, cfg.Labels, cfg.ProblemType = task.NumLabels, task.Labels, task.ProblemType
	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("resnet: %s: %w", name, err)
	}
	return cfg, nil
}

// LoadConfig reads and validates a ResNet config.json file.
func LoadConfig(path string) (Config, error) { return hf.LoadConfig("resnet", path, ParseConfig) }

// Validate checks that the configuration describes a model this package can build; errors
// name the config.json key.
func (c Config) Validate() error {
	if err := hf.ValidateProblemType(c.ProblemType); err != nil {
		return err
	}
	for _, p := range []struct {
		key   string
		value int
	}{{"num_channels", c.NumChannels}, {"embedding_size", c.EmbeddingSize}, {"num_labels", c.NumLabels}} {
		if p.value <= 0 {
			return fmt.Errorf("%s must be positive, got %d", p.key, p.value)
		}
	}
	if len(c.HiddenSizes) == 0 || len(c.HiddenSizes) != len(c.Depths) {
		return fmt.Errorf("hidden_sizes %v and depths %v must be as long, and not empty", c.HiddenSizes, c.Depths)
	}
	for i := range c.HiddenSizes {
		if c.HiddenSizes[i] <= 0 || c.Depths[i] <= 0 {
			return fmt.Errorf("hidden_sizes[%d] (%d) and depths[%d] (%d) must be positive", i, c.HiddenSizes[i], i, c.Depths[i])
		}
		if c.LayerType == Bottleneck && c.HiddenSizes[i] < 4 {
			return fmt.Errorf("hidden_sizes[%d] is %d: a bottleneck layer reduces its channels by 4, so it must be at least 4", i, c.HiddenSizes[i])
		}
	}
	if c.LayerType != Basic && c.LayerType != Bottleneck {
		return fmt.Errorf("layer_type %q is not supported: use %q or %q", c.LayerType, Basic, Bottleneck)
	}
	if !slices.Contains(Activations(), c.HiddenAct) {
		return fmt.Errorf("hidden_act %q is not supported: use one of %s", c.HiddenAct, strings.Join(Activations(), ", "))
	}
	if c.BatchNormMomentum < 0 || c.BatchNormMomentum > 1 {
		return fmt.Errorf("BatchNormMomentum must be in [0, 1], got %g", c.BatchNormMomentum)
	}
	return hf.ValidateLabels(c.Labels, c.NumLabels)
}

// JSON returns the configuration as a config.json document for ResNetForImageClassification,
// with id2label, label2id and problem_type, which transformers' from_pretrained reads.
func (c Config) JSON() ([]byte, error) {
	type extra struct {
		ModelType     string   `json:"model_type"`
		Architectures []string `json:"architectures"`
		hf.TaskJSON
	}
	e := extra{ModelType: "resnet", Architectures: []string{"ResNetForImageClassification"},
		TaskJSON: hf.Task{NumLabels: c.NumLabels, Labels: c.Labels, ProblemType: c.ProblemType}.JSON()}
	return json.MarshalIndent(struct {
		Config
		extra
	}{c, e}, "", "  ")
}
