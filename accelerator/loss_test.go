package accelerator

import (
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// TestPerExampleCrossEntropyMisuse: logits or labels of the wrong shape are an error that
// names PerExampleCrossEntropy and both shapes.
func TestPerExampleCrossEntropyMisuse(t *testing.T) {
	a := newXLA(t, 1)
	x, y := toyData(8)
	job, err := a.Prepare(model.NewStore(), optimizer.Adam().Done(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, wrong := range map[string]func(logits, labels *Node) (*Node, *Node){
		"labels [B, 1]":    func(l, y *Node) (*Node, *Node) { return l, Reshape(y, -1, 1) },
		"logits [B*C]":     func(l, y *Node) (*Node, *Node) { return Reshape(l, -1), y },
		"labels of 2 rows": func(l, y *Node) (*Node, *Node) { return l, Slice(y, AxisRange(0, 2)) },
	} {
		t.Run(name, func(t *testing.T) {
			eval := job.EvalStep(func(s *model.Scope, b GraphBatch) []*Node {
				return []*Node{PerExampleCrossEntropy(wrong(mlpLogits(s, b.Inputs[0]), b.Labels))}
			})
			_, err := job.Evaluate(&fixedSource{x: x, y: y, batch: 4}, eval)
			if err == nil || !strings.Contains(err.Error(), "accelerator: PerExampleCrossEntropy: want logits [B, C] and labels [B]") {
				t.Errorf("got %v, want an error naming accelerator: PerExampleCrossEntropy and the shapes", err)
			}
		})
	}
}
