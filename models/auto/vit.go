package auto

import (
	"fmt"

	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/goaccel/goaccel/models/vit"
	"github.com/gomlx/gomlx/ml/model"
)

// vitFamily is models/vit's ViT as a Family: an image family, whose processor is the
// folder's preprocessor_config.json (LoadImageProcessor) and whose Logits takes one float32
// NHWC pixel tensor. Its size (CheckMaxLen, ForwardFLOPs, the reference's) is the image side.
// google/vit-base-patch16-224's config.json is its reference: patch 16, GELU,
// layer_norm_eps 1e-12, qkv_bias, no dropout.
var vitFamily = vitLike("vit", "google/vit-base-patch16-224", Shape{Hidden: 768, Layers: 12, Heads: 12, FF: 3072},
	func(s Shape, side int) map[string]any {
		return map[string]any{"intermediate_size": s.FF, "patch_size": 16, "layer_norm_eps": hf.PyFloat(1e-12)}
	})

// dinov2Family is models/vit's DINOv2 (Dinov2ForImageClassification) as a Family, as
// vitFamily; its reference is facebook/dinov2-small's config.json (patch 14, mlp_ratio 4
// from the shape's FF / Hidden, layer scale 1, layer_norm_eps 1e-6), at 224 pixels a side in
// the bench as ViT's.
var dinov2Family = vitLike("dinov2", "facebook/dinov2-small", Shape{Hidden: 384, Layers: 12, Heads: 6, FF: 1536},
	func(s Shape, side int) map[string]any {
		return map[string]any{"mlp_ratio": max(1, s.FF/max(s.Hidden, 1)), "patch_size": 14, "layer_norm_eps": hf.PyFloat(1e-6),
			"layerscale_value": hf.PyFloat(1), "drop_path_rate": hf.PyFloat(0), "use_swiglu_ffn": false}
	})

// vitLike is the Family of one of models/vit's model types (vit, dinov2), named as it; its
// reference's config.json is the shape's keys, its own keys (refKeys), the image side, and
// what the two share (GELU, qkv_bias, no dropout, 3 channels).
func vitLike(modelType, ref string, shape Shape, refKeys func(s Shape, side int) map[string]any) *hfFamily[vit.Config, *vit.Classifier] {
	return &hfFamily[vit.Config, *vit.Classifier]{
		name: modelType, ref: ref, types: []string{modelType}, inputs: 1, shape: shape,
		parse: vit.ParseConfig, newClf: vit.NewClassifier, json: vit.Config.JSON,
		check:  func(c vit.Config, side int) error { return c.CheckImageSize(side) },
		config: func(c *vit.Classifier) *vit.Config { return &c.Config },
		load:   loadViT,
		saveModel: func(dir string, c *vit.Classifier) error {
			return vit.SavePretrained(dir, c)
		},
		reference: func(s Shape, side int) (vit.Config, error) {
			keys := map[string]any{"model_type": modelType, "hidden_size": s.Hidden, "num_hidden_layers": s.Layers,
				"num_attention_heads": s.Heads, "num_labels": 2, "image_size": side, "num_channels": 3, "hidden_act": "gelu",
				"initializer_range": hf.PyFloat(0.02), "qkv_bias": true,
				"hidden_dropout_prob": hf.PyFloat(0), "attention_probs_dropout_prob": hf.PyFloat(0)}
			for k, v := range refKeys(s, side) {
				keys[k] = v
			}
			return parseKeys(keys, modelType+" reference", vit.ParseConfig)
		},
		facts: func(c *vit.Config) Facts {
			return Facts{ModelType: c.ModelType, Inputs: 1,
				Shape: Shape{Hidden: c.HiddenSize, Layers: c.NumHiddenLayers, Heads: c.NumAttentionHeads, FF: c.FFNWidth()},
				Image: &ImageFacts{Size: c.ImageSize, Channels: c.NumChannels, PatchSize: c.PatchSize}}
		},
		head: func(c *vit.Config) (*int, *[]string, *string) { return &c.NumLabels, &c.Labels, &c.ProblemType },
		dropout: func(c *vit.Config, rate float64) {
			c.HiddenDropoutProb, c.AttentionProbsDropoutProb = rate, rate
			if c.ModelType == vit.DINOv2 {
				c.DropPathRate = rate
			}
		},
		checkpointing: func(c *vit.Config) *bool { return &c.GradientCheckpointing },
		// Images side pixels a side are L = (side/patch)² + 1 tokens: per layer BERT's products
		// (4 d² per token for the attention's projections, 2 d f for the feed-forward, 3 d f
		// for SwiGLU's, 2 L d for the scores and the mix), the patch embedding C p² d per
		// patch, the classifier its input's width per label.
		flops: func(c vit.Config, b, side float64) float64 {
			h, l, f := float64(c.HiddenSize), float64(c.NumHiddenLayers), float64(c.FFNWidth())
			ffn := 2 * h * f
			if c.UseSwiGLUFFN {
				ffn = 3 * h * f
			}
			p := float64(c.PatchSize)
			patches := float64(int(side)/c.PatchSize) * float64(int(side)/c.PatchSize)
			seq := patches + 1
			head := h
			if c.ModelType == vit.DINOv2 {
				head = 2 * h
			}
			return 2 * (b*seq*l*(4*h*h+ffn+2*seq*h) + b*patches*float64(c.NumChannels)*p*p*h + b*head*float64(c.NumLabels))
		},
	}
}

// loadViT reads a ViT or DINOv2 folder: the classifier (the head's tensors with req.LoadHead)
// and the folder's image processor, at req.ImageSize when given; an image side the model
// cannot take (ViT: another than image_size without req.InterpolatePosEncoding) is an error
// naming both.
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
	clf.Config.InterpolatePosEncoding = req.InterpolatePosEncoding || clf.Config.ModelType == vit.DINOv2 // DINOv2 always does
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
