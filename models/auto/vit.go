package auto

import (
	"fmt"

	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/goaccel/goaccel/models/vit"
	"github.com/gomlx/gomlx/ml/model"
)

// vitFamily is models/vit as a Family: an image family, whose processor is the folder's
// preprocessor_config.json (LoadImageProcessor) and whose Logits takes one float32 NHWC
// pixel tensor. Its size (CheckMaxLen, ForwardFLOPs, the reference's) is the image side.
var vitFamily = &hfFamily[vit.Config, *vit.Classifier]{
	name: "vit", ref: "google/vit-base-patch16-224", types: []string{"vit"}, inputs: 1,
	shape: Shape{Hidden: 768, Layers: 12, Heads: 12, FF: 3072},
	parse: vit.ParseConfig, newClf: vit.NewClassifier, json: vit.Config.JSON,
	check:  func(c vit.Config, side int) error { return c.CheckImageSize(side) },
	config: func(c *vit.Classifier) *vit.Config { return &c.Config },
	load:   loadViT,
	saveModel: func(dir string, c *vit.Classifier) error {
		return vit.SavePretrained(dir, c)
	},
	// google/vit-base-patch16-224's config.json at another shape and image side: patch 16,
	// GELU, layer_norm_eps 1e-12, qkv_bias, no dropout.
	reference: func(s Shape, side int) (vit.Config, error) {
		keys := shapeKeys(s, map[string]any{
			"model_type": "vit", "image_size": side, "patch_size": 16, "num_channels": 3, "hidden_act": "gelu",
			"layer_norm_eps": hf.PyFloat(1e-12), "initializer_range": hf.PyFloat(0.02), "qkv_bias": true,
			"hidden_dropout_prob": hf.PyFloat(0), "attention_probs_dropout_prob": hf.PyFloat(0),
		})
		delete(keys, "vocab_size")
		return parseKeys(keys, "vit reference", vit.ParseConfig)
	},
	facts: func(c *vit.Config) Facts {
		return Facts{ModelType: "vit", Inputs: 1,
			Shape: Shape{Hidden: c.HiddenSize, Layers: c.NumHiddenLayers, Heads: c.NumAttentionHeads, FF: c.IntermediateSize},
			Image: &ImageFacts{Size: c.ImageSize, Channels: c.NumChannels, PatchSize: c.PatchSize}}
	},
	head: func(c *vit.Config) (*int, *[]string, *string) { return &c.NumLabels, &c.Labels, &c.ProblemType },
	dropout: func(c *vit.Config, rate float64) {
		c.HiddenDropoutProb, c.AttentionProbsDropoutProb = rate, rate
	},
	checkpointing: func(c *vit.Config) *bool { return &c.GradientCheckpointing },
	// Images side pixels a side are L = (side/patch)² + 1 tokens: per layer BERT's products
	// (4 d² + 2 d f per token, 2 L d for the scores and the mix), the patch embedding
	// C p² d per patch, the classifier d per label.
	flops: func(c vit.Config, b, side float64) float64 {
		h, l, f := float64(c.HiddenSize), float64(c.NumHiddenLayers), float64(c.IntermediateSize)
		p := float64(c.PatchSize)
		patches := float64(int(side)/c.PatchSize) * float64(int(side)/c.PatchSize)
		seq := patches + 1
		return 2 * (b*seq*l*(4*h*h+2*h*f+2*seq*h) + b*patches*float64(c.NumChannels)*p*p*h + b*h*float64(c.NumLabels))
	},
}

// loadViT reads a ViT folder: the classifier (the head's tensors with req.LoadHead) and the
// folder's image processor, at req.ImageSize when given; an image side the model cannot take
// (another than image_size without req.InterpolatePosEncoding) is an error naming both.
func loadViT(dir string, store *model.Store, req LoadRequest) (*vit.Classifier, Processor, error) {
	head := req.Head
	if head == SequenceClassification {
		head = ImageClassification // what Options leaves the head at
	}
	if err := head.ValidateImage(); err != nil {
		return nil, nil, fmt.Errorf("auto: %s: vit: %w", dir, err)
	}
	clf, err := vit.LoadPretrained(dir, store, vit.LoadOptions{NumLabels: req.NumLabels, LoadHead: req.LoadHead})
	if err != nil {
		return nil, nil, err
	}
	clf.Config.InterpolatePosEncoding = req.InterpolatePosEncoding
	proc, err := LoadImageProcessor(dir)
	if err != nil {
		return nil, nil, err
	}
	if req.ImageSize < 0 {
		return nil, nil, fmt.Errorf("auto: Options.ImageSize %d: must not be negative", req.ImageSize)
	}
	if req.ImageSize > 0 {
		if err := proc.SetOutputSize(req.ImageSize); err != nil {
			return nil, nil, fmt.Errorf("auto: %s: Options.ImageSize %d: %w", dir, req.ImageSize, err)
		}
	}
	h, w, ok := proc.OutputSize()
	if !ok {
		return nil, nil, fmt.Errorf("auto: %s: %s makes images of each image's own size: ViT takes one size (do_resize with a height and width)",
			dir, ImageProcessorFile)
	}
	for _, side := range []int{h, w} {
		if err := clf.Config.CheckImageSize(side); err != nil {
			return nil, nil, fmt.Errorf("auto: %s: %s makes %dx%d images: %w", dir, ImageProcessorFile, w, h, err)
		}
	}
	return clf, proc, nil
}
