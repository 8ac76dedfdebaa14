package auto

import (
	"github.com/goaccel/goaccel/models/convnext"
	"github.com/gomlx/gomlx/ml/model"
)

// convnextFamily is models/convnext as a Family (model_type convnext and convnextv2): an
// image family whose processor is the folder's preprocessor_config.json and whose Logits
// takes one float32 NHWC pixel tensor. Its size is the image side. SetDropout sets
// drop_path_rate, the model's one random regulariser (stochastic depth; 0 turns it off).
var convnextFamily = &hfFamily[convnext.Config, *convnext.Classifier]{
	name: "convnext", ref: "facebook/convnext-tiny-224", types: []string{convnext.V1, convnext.V2}, inputs: 1,
	shape: Shape{Hidden: 768, Layers: 18},
	parse: convnext.ParseConfig, newClf: convnext.NewClassifier, json: convnext.Config.JSON,
	check:  func(c convnext.Config, side int) error { return c.CheckImageSize(side) },
	config: func(c *convnext.Classifier) *convnext.Config { return &c.Config },
	load: func(dir string, store *model.Store, req LoadRequest) (*convnext.Classifier, Processor, error) {
		return loadImageFolder(dir, req, "convnext", func(c *convnext.Classifier) error {
			if req.ImageSize > 0 {
				return c.Config.CheckImageSize(req.ImageSize)
			}
			return nil
		}, func() (*convnext.Classifier, error) {
			return convnext.LoadPretrained(dir, store, convnext.LoadOptions{NumLabels: req.NumLabels, LoadHead: req.LoadHead})
		})
	},
	saveModel: convnext.SavePretrained,
	// facebook/convnext-tiny-224's config.json with the widths scaled to the shape's Hidden
	// (the last stage's; the stages' are Hidden/8, /4, /2, Hidden) and the shape's Layers
	// blocks over the stages (3, 3, 9, 3 at 18), at the image side.
	reference: func(s Shape, side int) (convnext.Config, error) {
		depths, widths, err := stages("convnext", s, []int{3, 3, 9, 3}, 1)
		if err != nil {
			return convnext.Config{}, err
		}
		return parseKeys(map[string]any{
			"model_type": convnext.V1, "num_channels": 3, "patch_size": 4, "num_stages": len(depths),
			"hidden_sizes": widths, "depths": depths, "hidden_act": "gelu",
			"layer_norm_eps": 1e-12, "layer_scale_init_value": 1e-6, "drop_path_rate": 0.0, "image_size": side, "num_labels": 2,
		}, "convnext reference", convnext.ParseConfig)
	},
	// Shape: the last stage's width and the number of blocks.
	facts: func(c *convnext.Config) Facts {
		layers := 0
		for _, d := range c.Depths {
			layers += d
		}
		return Facts{ModelType: c.ModelType, Inputs: 1, Shape: Shape{Hidden: c.HiddenSizes[len(c.HiddenSizes)-1], Layers: layers},
			Image: &ImageFacts{Size: c.ImageSize, Channels: c.NumChannels}}
	},
	head:          func(c *convnext.Config) (*int, *[]string, *string) { return &c.NumLabels, &c.Labels, &c.ProblemType },
	dropout:       func(c *convnext.Config, rate float64) { c.DropPathRate = rate },
	checkpointing: func(c *convnext.Config) *bool { return &c.GradientCheckpointing },
	flops:         func(c convnext.Config, b, side float64) float64 { return b * c.FLOPs(int(side)) },
}
