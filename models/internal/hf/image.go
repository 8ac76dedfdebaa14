package hf

import (
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// The image classifier's head (ImageClassification), the same in every image family as in
// transformers' *ForImageClassification: the family pools its features into one vector per
// image (ViT: the final LayerNorm's CLS token; ResNet and ConvNeXt: the pooled last stage),
// and a linear "classifier" makes the logits. Its problem_type rules are a sequence
// classifier's (HeadProblemType: single-label unless config.json says otherwise; the task's
// loss follows it), and PEFT's modules_to_save "classifier" saves it with a LoRA adapter.

// ImageClassifierTensors lists the image head's tensors, "classifier.weight" [numLabels,
// width] and "classifier.bias" [numLabels], as transformers names them.
func ImageClassifierTensors(numLabels, width int) []TensorSpec {
	var l TensorList
	l.Linear("classifier", numLabels, width, true)
	return l
}

// ImageClassifier is the image head on the pooled features [B, width]: the linear layer
// "classifier" under s (weight [numLabels, width], fresh from init; bias [numLabels], fresh
// zeros), float32 logits [B, numLabels]. The product runs in b's compute dtype (mixed
// precision), and an adapter of b that targets the layer adds its update. It panics on
// pooled features of another rank (graph building turns the panic into an error).
func (b *Base) ImageClassifier(s *model.Scope, pooled *Node, numLabels int, init model.VariableInitializer) *Node {
	if pooled.Rank() != 2 {
		exceptions.Panicf("%s: the image classifier wants pooled features [batch, width], got %s", b.family, pooled.Shape())
	}
	g := pooled.Graph()
	width := pooled.Shape().Dimensions[1]
	cs := s.At("classifier")
	w := cs.WithInitializer(init).VariableWithShape("weight", shapes.Make(dtypes.Float32, numLabels, width)).NodeValue(g)
	bias := cs.WithInitializer(Zeros).VariableWithShape("bias", shapes.Make(dtypes.Float32, numLabels)).NodeValue(g)
	return b.slot.Adapter().Linear(cs, pooled, b.compute.Dense(pooled, w, bias))
}
