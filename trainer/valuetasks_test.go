package trainer

import (
	"math"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/gomlx/compute"
	_ "github.com/gomlx/compute/gobackend"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// taskLoss runs task.Loss once on logits [B, K] taken as the model's output, labels [B, K]
// and the real mask, on the pure-Go backend.
func taskLoss(t *testing.T, task Task, logits, labels [][]float32, real []bool) (float64, error) {
	t.Helper()
	backend, err := compute.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	b, k := len(logits), len(logits[0])
	flatten := func(rows [][]float32) []float32 {
		var out []float32
		for _, r := range rows {
			out = append(out, r...)
		}
		return out
	}
	exec, err := model.NewExec(backend, model.NewStore(), func(s *model.Scope, l, y, mask *Node) *Node {
		return task.Loss(s, accelerator.GraphBatch{Inputs: []*Node{l}, Labels: y, Mask: mask})
	})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := exec.Call(tensors.FromFlatDataAndDimensions(flatten(logits), b, k),
		tensors.FromFlatDataAndDimensions(flatten(labels), b, k), tensors.FromValue(real))
	if err != nil {
		return 0, err
	}
	return float64(tensors.ToScalar[float32](outs[0])), nil
}

// identity is a "model" whose logits are its input.
func identity(_ *model.Scope, inputs []*Node) *Node { return inputs[0] }

// TestMultiLabelLoss: the loss is PyTorch's BCEWithLogitsLoss (mean over the labels and the
// real examples), computed here in float64 from its definition; the padding row counts not.
func TestMultiLabelLoss(t *testing.T) {
	logits := [][]float32{{2, -1, 0.5}, {-30, 40, 0}, {9, 9, 9}}
	flags := [][]float32{{1, 0, 0}, {0, 1, 1}, {0, 0, 0}}
	real := []bool{true, true, false}
	got, err := taskLoss(t, MultiLabelClassification(3, identity), logits, flags, real)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for i := range 2 {
		for j := range 3 {
			x, y := float64(logits[i][j]), float64(flags[i][j])
			p := 1 / (1 + math.Exp(-x))
			term := -(y*math.Log(p) + (1-y)*math.Log1p(-p))
			if math.IsInf(term, 0) || math.IsNaN(term) { // p rounds to 0 or 1 in float64: the limit
				term = math.Max(x, 0) - x*y + math.Log1p(math.Exp(-math.Abs(x)))
			}
			sum += term
		}
	}
	if want := sum / 6; math.Abs(got-want) > 1e-6 {
		t.Errorf("multi-label loss %.9f, BCE by its definition %.9f", got, want)
	}
}

// TestRegressionLoss: the loss is the mean squared error over the real examples.
func TestRegressionLoss(t *testing.T) {
	got, err := taskLoss(t, Regression(identity), [][]float32{{1.5}, {-2}, {100}}, [][]float32{{0.5}, {1}, {0}},
		[]bool{true, true, false})
	if err != nil {
		t.Fatal(err)
	}
	if want := (1.0 + 9.0) / 2; math.Abs(got-want) > 1e-6 {
		t.Errorf("regression loss %g, want %g", got, want)
	}
}

// TestValueTaskShapes: logits or labels of the wrong shape, or class labels given to a
// value task, are errors that say what is wanted.
func TestValueTaskShapes(t *testing.T) {
	if _, err := taskLoss(t, MultiLabelClassification(4, identity), [][]float32{{1, 2, 3}}, [][]float32{{1, 0, 0}},
		[]bool{true}); err == nil || !strings.Contains(err.Error(), "want [batch, 4]") {
		t.Errorf("3 logits for 4 labels: %v", err)
	}
	if _, err := taskLoss(t, Regression(identity), [][]float32{{1, 2}}, [][]float32{{1, 0}}, []bool{true}); err == nil ||
		!strings.Contains(err.Error(), "want [batch, 1]") {
		t.Errorf("2 outputs for regression: %v", err)
	}
}

// TestTokenClassificationLoss: the loss is the cross-entropy averaged over the counted
// tokens (label not -100, sentence real), as PyTorch's CrossEntropyLoss(ignore_index=-100)
// computes it on one batch; the weight Fit gives BackwardWeighted is their number.
func TestTokenClassificationLoss(t *testing.T) {
	backend, err := compute.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	logits := []float32{ // [2 sentences, 3 tokens, 2 tags]
		1, 0, 0, 2, 3, -1,
		5, 5, -2, 1, 0, 0,
	}
	labels := []int32{0, -100, 1, 1, 0, -100}
	real := []bool{true, true}
	task := TokenClassification([]string{"O", "B-X"}, identity)
	exec, err := model.NewExec(backend, model.NewStore(), func(s *model.Scope, l, y, mask *Node) (*Node, *Node) {
		b := accelerator.GraphBatch{Inputs: []*Node{l}, Labels: y, Mask: mask}
		return task.Loss(s, b), task.LossWeight(s, b)
	})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := exec.Call(tensors.FromFlatDataAndDimensions(logits, 2, 3, 2), tensors.FromFlatDataAndDimensions(labels, 2, 3),
		tensors.FromValue(real))
	if err != nil {
		t.Fatal(err)
	}
	ce := func(a, b float64, k int) float64 { // -log softmax([a b])[k]
		m := math.Max(a, b)
		lse := m + math.Log(math.Exp(a-m)+math.Exp(b-m))
		return lse - []float64{a, b}[k]
	}
	want := (ce(1, 0, 0) + ce(3, -1, 1) + ce(5, 5, 1) + ce(-2, 1, 0)) / 4
	if got := float64(tensors.ToScalar[float32](outs[0])); math.Abs(got-want) > 1e-6 {
		t.Errorf("token loss %.9f, want %.9f", got, want)
	}
	if w := tensors.ToScalar[float32](outs[1]); w != 4 {
		t.Errorf("weight %g, want the 4 counted tokens", w)
	}
}
