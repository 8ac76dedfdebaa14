package auto

import (
	"fmt"

	"github.com/goaccel/goaccel/models/resnet"
	"github.com/gomlx/gomlx/ml/model"
)

// resnetFamily is models/resnet as a Family: an image family whose processor is the
// folder's preprocessor_config.json (microsoft/resnet-* have ConvNextImageProcessor's) and
// whose Logits takes one float32 NHWC pixel tensor (and, second, the batch's mask, which keeps
// padding out of BatchNorm's statistics when a caller passes it). Its size is the image side.
// ResNet has no dropout: SetDropout changes nothing.
var resnetFamily = &hfFamily[resnet.Config, *resnet.Classifier]{
	name: "resnet", ref: "microsoft/resnet-50", types: []string{"resnet"}, inputs: 2,
	shape: Shape{Hidden: 2048, Layers: 16},
	parse: resnet.ParseConfig, newClf: resnet.NewClassifier, json: resnet.Config.JSON,
	check:  func(_ resnet.Config, side int) error { return checkSide("resnet", side) },
	config: func(c *resnet.Classifier) *resnet.Config { return &c.Config },
	load: func(dir string, store *model.Store, req LoadRequest) (*resnet.Classifier, Processor, error) {
		return loadImageFolder(dir, req, "resnet", func(_ *resnet.Classifier) error { return nil },
			func() (*resnet.Classifier, error) {
				return resnet.LoadPretrained(dir, store, resnet.LoadOptions{NumLabels: req.NumLabels, LoadHead: req.LoadHead})
			})
	},
	saveModel: resnet.SavePretrained,
	// microsoft/resnet-50's config.json with the widths scaled to the shape's Hidden (the
	// last stage's; the stages' are Hidden/8, /4, /2, Hidden, at least 4, and the stem's
	// Hidden/32) and the shape's Layers residual layers over the stages (3, 4, 6, 3 at 16).
	reference: func(s Shape, _ int) (resnet.Config, error) {
		depths, widths, err := stages("resnet", s, []int{3, 4, 6, 3}, 4)
		if err != nil {
			return resnet.Config{}, err
		}
		return parseKeys(map[string]any{
			"model_type": "resnet", "num_channels": 3, "embedding_size": max(1, s.Hidden/32), "hidden_sizes": widths,
			"depths": depths, "layer_type": "bottleneck", "hidden_act": "relu",
			"downsample_in_first_stage": false, "downsample_in_bottleneck": false, "num_labels": 2,
		}, "resnet reference", resnet.ParseConfig)
	},
	// Shape: the last stage's width and the number of residual layers; the image size is
	// the 224 of microsoft/resnet-* (config.json has none).
	facts: func(c *resnet.Config) Facts {
		layers := 0
		for _, d := range c.Depths {
			layers += d
		}
		return Facts{ModelType: "resnet", Inputs: 1, Shape: Shape{Hidden: c.HiddenSizes[len(c.HiddenSizes)-1], Layers: layers},
			Image: &ImageFacts{Size: 224, Channels: c.NumChannels}}
	},
	head:          func(c *resnet.Config) (*int, *[]string, *string) { return &c.NumLabels, &c.Labels, &c.ProblemType },
	dropout:       func(*resnet.Config, float64) {},
	checkpointing: func(c *resnet.Config) *bool { return &c.GradientCheckpointing },
	flops:         func(c resnet.Config, b, side float64) float64 { return b * c.FLOPs(int(side)) },
}

// stages spreads a convolutional reference's shape over its stages: s.Layers blocks in the
// proportions of ref (ref itself when they sum to s.Layers; one stage per block, the last
// ones, when s.Layers is below len(ref)), and the widths Hidden/8, /4, /2 and Hidden (each at
// least least) of the stages kept.
func stages(family string, s Shape, ref []int, least int) (depths, widths []int, err error) {
	if s.Layers < 1 || s.Hidden < 1 {
		return nil, nil, fmt.Errorf("%s reference: shape %+v: Layers and Hidden must be positive", family, s)
	}
	total := 0
	for _, d := range ref {
		total += d
	}
	n := len(ref)
	for i := range n {
		widths = append(widths, max(least, s.Hidden>>(n-1-i)))
	}
	if s.Layers < n {
		depths = make([]int, s.Layers)
		for i := range depths {
			depths[i] = 1
		}
		return depths, widths[n-s.Layers:], nil
	}
	left := s.Layers
	for i, d := range ref {
		k := max(1, d*s.Layers/total)
		if i == n-1 {
			k = left - (n - 1 - i)
		}
		k = min(k, left-(n-1-i))
		depths, left = append(depths, k), left-k
	}
	return depths, widths, nil
}

// checkSide refuses an image side that is not positive.
func checkSide(family string, side int) error {
	if side < 1 {
		return fmt.Errorf("%s: image side %d: want a positive number of pixels", family, side)
	}
	return nil
}

// loadImageFolder is an image family's Load: the head checked (the zero value is the image
// head), the classifier read by load, the folder's image processor (preprocessor_config.json)
// at req.ImageSize when given, and its output size checked by check.
func loadImageFolder[K any](dir string, req LoadRequest, family string, check func(K) error, load func() (K, error)) (K, Processor, error) {
	var zero K
	head := req.Head
	if head == SequenceClassification {
		head = ImageClassification // what Options leaves the head at
	}
	if err := head.ValidateImage(); err != nil {
		return zero, nil, fmt.Errorf("auto: %s: %s: %w", dir, family, err)
	}
	if req.ImageSize < 0 {
		return zero, nil, fmt.Errorf("auto: Options.ImageSize %d: must not be negative", req.ImageSize)
	}
	clf, err := load()
	if err != nil {
		return zero, nil, err
	}
	proc, err := LoadImageProcessor(dir)
	if err != nil {
		return zero, nil, err
	}
	if req.ImageSize > 0 {
		if err := proc.SetOutputSize(req.ImageSize); err != nil {
			return zero, nil, fmt.Errorf("auto: %s: %w", dir, err)
		}
	}
	if err := check(clf); err != nil {
		return zero, nil, fmt.Errorf("auto: %s: %w", dir, err)
	}
	return clf, proc, nil
}
