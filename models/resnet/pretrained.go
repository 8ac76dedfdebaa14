package resnet

import (
	"errors"
	"strings"

	"github.com/goaccel/goaccel/models/internal/convnet"
	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/goaccel/goaccel/models/lora"
	"github.com/gomlx/gomlx/ml/model"
)

// LoadOptions configure LoadPretrained: NumLabels for a fresh classifier of another count
// of classes, LoadHead to load the folder's classifier too.
type LoadOptions = convnet.LoadOptions

// LoadPretrained loads a ResNet Hugging Face folder (config.json with model_type "resnet",
// model.safetensors or a sharded index, as microsoft/resnet-* and save_pretrained write them)
// into store, under the variable paths of Classifier, and returns the classifier. The image
// processor is not this package's business.
//
// The encoder's tensors ("resnet.*", or without the prefix as a bare ResNetModel saves them),
// the BatchNorms' running statistics included, must all be there; num_batches_tracked is read
// where the file has it. The classifier is loaded only with opts.LoadHead. Kernels are
// transposed to HWIO once, here; F16, BF16 and F64 tensors are converted to float32.
//
// Errors, each naming what is wrong, stop the load before any variable is written: a missing
// folder, config.json or weights, a configuration this package cannot build (naming the
// config.json key), missing tensors, tensors whose shape or dtype differs from the config's,
// and tensors of another architecture.
func LoadPretrained(dir string, store *model.Store, opts LoadOptions) (*Classifier, error) {
	cfg, store, err := folder.Load(dir, store, opts)
	if err != nil {
		return nil, err
	}
	return NewClassifier(cfg, store)
}

// folder is the package's side of LoadPretrained.
var folder = convnet.Folder[Config]{Family: "resnet", LoadConfig: LoadConfig, Kernel: isKernel,
	Labels: func(c *Config) (*int, *[]string) { return &c.NumLabels, &c.Labels },
	Plan: func(c Config, withHead bool) hf.WeightPlan {
		return convnet.Plan(c.EncoderTensors(), c.ClassifierTensors(), withHead, convnet.Prefixed("resnet.", "embedder.", "encoder."), len(c.Depths))
	}}

// SavePretrained writes the classifier as a Hugging Face folder of
// ResNetForImageClassification that LoadPretrained (with LoadHead) and transformers'
// from_pretrained read: config.json (Config.JSON) and model.safetensors with HF tensor names
// and PyTorch's layouts, float32 (OIHW kernels), the BatchNorms' running statistics and
// num_batches_tracked (int64) as the classifier's training left them. All of the
// classifier's variables must have values (run the model once, or load it, first). Each file
// is written atomically. The image processor's files are not this package's business.
func SavePretrained(dir string, c *Classifier) error {
	if c == nil {
		return convnet.SaveFolder("resnet", dir, nil, nil, nil, nil)
	}
	return convnet.SaveFolder("resnet", dir, &c.Base, c.Config.Tensors(), isKernel, c.Config.JSON)
}

// LoRABase describes the classifier to models/lora (its tensors, the classifier as PEFT's
// head); it lists no linear layer: see AttachLoRA.
func (c Config) LoRABase(baseNameOrPath string) lora.Base {
	return hf.LoRABaseOf("resnet", baseNameOrPath, hf.ImageClassification, convnet.StoreLayout(c.Tensors(), isKernel), c.ClassifierTensors())
}

// ErrNoLoRA is AttachLoRA's error: ResNet has no linear layer but its classifier. Its
// convolutions are Conv2d, which PEFT 0.21's LoRA adapts (lora.Conv2d) and goaccel's adapter
// does not (it adapts linear layers), so there is nothing for an adapter to target.
var ErrNoLoRA = errors.New("resnet: LoRA: ResNet's only linear layer is its classifier, and goaccel's LoRA adapts linear layers, " +
	"not PEFT's Conv2d LoRA: fine-tune it without LoRA")

// AttachLoRA refuses every adapter with ErrNoLoRA (see it).
func (c *Classifier) AttachLoRA(cfg lora.Config, baseNameOrPath string) (*lora.Adapter, error) {
	return nil, ErrNoLoRA
}

// isKernel reports whether a tensor is a convolution's kernel: every "convolution.weight".
func isKernel(name string) bool { return strings.HasSuffix(name, ".convolution.weight") }
