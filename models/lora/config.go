package lora

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Config is a LoRA configuration, as PEFT's LoraConfig names it (r, lora_alpha,
// lora_dropout, target_modules). The zero value is PEFT's defaults: rank 8, alpha 8, no
// dropout, the family's default target modules.
type Config struct {
	// R is the rank of the update (PEFT's r); 0 means 8.
	R int
	// Alpha scales the update by Alpha/R (PEFT's lora_alpha); 0 means 8.
	Alpha float64
	// Dropout is the dropout rate on a targeted layer's input, in the LoRA branch only (PEFT's
	// lora_dropout), active in training.
	Dropout float64
	// TargetModules are the linear layers (and, where the family adapts them, convolutions)
	// to adapt, as PEFT's target_modules list: a layer is
	// targeted when its module name (HF's, "bert.encoder.layer.0.attention.self.query") equals
	// an entry or ends with "." and the entry ("query", "attention.self.query"). nil means
	// DefaultTargetModules of the model_type. Layers of the head are never targeted (they
	// train in full).
	TargetModules []string
}

// defaultRank and defaultAlpha are LoraConfig's r and lora_alpha defaults.
const (
	defaultRank  = 8
	defaultAlpha = 8
)

// defaultTargets are the target modules by model_type: PEFT's
// TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING (peft 0.21.2) for the families it lists.
// DistilBERT and ModernBERT are not in PEFT's table (PEFT asks for target_modules): for
// DistilBERT its attention's query and value projections are the equivalent of the others'
// defaults; ModernBERT has no separate query and value projections, and its fused Wqkv
// (query, key and value in one layer) is what PEFT's table gives the families built so
// (mpt's "Wqkv").
var defaultTargets = map[string][]string{
	"bert":        {"query", "value"},
	"roberta":     {"query", "value"},
	"xlm-roberta": {"query", "value"},
	"electra":     {"query", "value"},
	"distilbert":  {"q_lin", "v_lin"},
	"deberta-v2":  {"query_proj", "value_proj"},
	"modernbert":  {"Wqkv"},
	"vit":         {"query", "value"}, // PEFT has none; its image-classification guide's
	"dinov2":      {"query", "value"}, // PEFT has none; as ViT's
	// ConvNeXt: PEFT has none; its linear layers (models/convnext does not adapt its
	// convolutions), a block's two, its inverted bottleneck's.
	"convnext":   {"pwconv1", "pwconv2"},
	"convnextv2": {"pwconv1", "pwconv2"},
	// ResNet: PEFT has none; every ResNetConvLayer's Conv2d (the stem's, the residual layers'
	// and the projection shortcuts'), adapted as PEFT's Conv2d LoRA.
	"resnet": {"convolution"},
}

// DefaultTargetModules returns the target modules a Config without TargetModules adapts for
// a model_type (PEFT's defaults: query and value for bert, roberta, xlm-roberta and electra,
// query_proj and value_proj for deberta-v2; goaccel's where PEFT has none: q_lin and v_lin
// for distilbert, Wqkv for modernbert, query and value for vit, pwconv1 and pwconv2 for
// convnext and convnextv2, convolution for resnet), or nil when there is no default for it.
func DefaultTargetModules(modelType string) []string {
	return slices.Clone(defaultTargets[modelType])
}

// withDefaults returns c with its zero fields set to the defaults for modelType, checked.
func (c Config) withDefaults(modelType string) (Config, error) {
	if c.R == 0 {
		c.R = defaultRank
	}
	if c.Alpha == 0 {
		c.Alpha = defaultAlpha
	}
	if len(c.TargetModules) == 0 {
		c.TargetModules = DefaultTargetModules(modelType)
		if c.TargetModules == nil {
			return c, fmt.Errorf("lora: model_type %q has no default target modules: set Config.TargetModules", modelType)
		}
	}
	c.TargetModules = slices.Clone(c.TargetModules)
	return c, c.Validate()
}

// Validate checks the configuration's values (zero values are the defaults, and valid).
func (c Config) Validate() error {
	switch {
	case c.R < 0:
		return fmt.Errorf("lora: r = %d, want a positive rank (0: %d)", c.R, defaultRank)
	case math.IsNaN(c.Alpha) || math.IsInf(c.Alpha, 0) || c.Alpha < 0:
		return fmt.Errorf("lora: lora_alpha = %g, want a positive finite value (0: %d)", c.Alpha, defaultAlpha)
	case !(c.Dropout >= 0 && c.Dropout < 1):
		return fmt.Errorf("lora: lora_dropout = %g, want a rate in [0, 1)", c.Dropout)
	}
	for _, t := range c.TargetModules {
		if t == "" || strings.HasPrefix(t, ".") || strings.HasSuffix(t, ".") {
			return fmt.Errorf("lora: target module %q is not a module name (such as \"query\" or \"attention.self.query\")", t)
		}
	}
	return nil
}

// Scale is the factor of the update, Alpha/R, with the defaults applied.
func (c Config) Scale() float64 {
	r, alpha := c.R, c.Alpha
	if r == 0 {
		r = defaultRank
	}
	if alpha == 0 {
		alpha = defaultAlpha
	}
	return alpha / float64(r)
}

// matches reports whether the module name is targeted by target, as PEFT matches a
// target_modules entry: equal, or ending with "." + target.
func matches(module, target string) bool {
	return module == target || strings.HasSuffix(module, "."+target)
}
