package trainer

import (
	"strings"
	"testing"
)

// TestDeprecatedOptimNames: trainer's deprecated optimizer names are optim's (a bad config gets
// optim's error; the no-decay rule is optim's).
func TestDeprecatedOptimNames(t *testing.T) {
	if _, err := Adam(AdamConfig{LearningRate: -1}); err == nil || !strings.HasPrefix(err.Error(), "optim: Adam: AdamConfig.LearningRate = -1") {
		t.Errorf("Adam(AdamConfig{LearningRate: -1}): error %v, want optim's", err)
	}
	if opt, err := Adam(AdamConfig{LearningRate: 1e-3}); err != nil || opt == nil {
		t.Errorf("Adam: %v, %v", opt, err)
	}
	if !NoWeightDecay("encoder/LayerNorm/gain") || NoWeightDecay("encoder/dense/weights") {
		t.Error("NoWeightDecay is not optim's rule")
	}
}
