package accelerator

import (
	"strconv"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// TestLabelsOutOfRange: a label outside the loss's classes is an error naming the example,
// in the first (traced) batch and in a later one, for training and evaluation, and no update
// is made with it. (Before, a 3-class head trained on label 3 without a word.)
func TestLabelsOutOfRange(t *testing.T) {
	t.Parallel()
	a := newXLA(t, 2)
	for _, c := range []struct {
		name  string
		bad   int    // dataset index of the bad label; the global batch is 8 examples
		where string // its place, counted from 1
	}{{"first batch", 3, "batch 1 of epoch 1"}, {"later batch", 9, "batch 2 of epoch 1"}} {
		t.Run(c.name, func(t *testing.T) {
			x, y := toyData(16)
			y[c.bad] = 3 // mlpLogits has 3 classes
			job, err := a.Prepare(model.NewStore(), optimizer.Adam().Done(), &fixedSource{x: x, y: y, batch: 4})
			if err != nil {
				t.Fatal(err)
			}
			train := job.TrainStep(func(s *model.Scope, b GraphBatch) *Node {
				l := CrossEntropy(mlpLogits(s, b.Inputs[0]), b.Labels, b.Mask)
				a.Backward(s, l)
				return l
			})
			var runErr error
			steps := 0
			for gb, err := range job.Batches() {
				if err != nil {
					t.Fatal(err)
				}
				if _, runErr = train.Run(gb); runErr != nil {
					break
				}
				steps++
			}
			want := "label 3 of example " + strconv.Itoa(c.bad)
			if runErr == nil || !strings.Contains(runErr.Error(), want) || !strings.Contains(runErr.Error(), "out of bounds") {
				t.Fatalf("got %v, want an error with %q", runErr, want)
			}
			if !strings.Contains(runErr.Error(), c.where) {
				t.Errorf("got %v, want it to name %q", runErr, c.where)
			}
			if step, err := job.GlobalStep(); err != nil || step != int64(steps) {
				t.Errorf("global step %d (%v) after the error, want %d: the bad batch must make no update", step, err, steps)
			}
			eval := job.EvalStep(func(s *model.Scope, b GraphBatch) []*Node {
				return []*Node{PerExampleCrossEntropy(mlpLogits(s, b.Inputs[0]), b.Labels)}
			})
			_, err = job.Evaluate(&fixedSource{x: x, y: y, batch: 4}, eval)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Evaluate: got %v, want an error with %q", err, want)
			}
		})
	}
}

// TestPerExampleCrossEntropyMisuse: logits or labels of the wrong shape are an error that
// names PerExampleCrossEntropy and both shapes.
func TestPerExampleCrossEntropyMisuse(t *testing.T) {
	t.Parallel()
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

// TestFirstBadLabel checks the host scan of the labels in each dtype a loader may give them:
// the first value outside [0, classes) (or, for float labels, not a whole number) and its row,
// none for good labels, and a refusal of a dtype that cannot hold class indices.
func TestFirstBadLabel(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		flat    any
		row     int
		value   float64
		refused bool
	}{
		{"int32 good", []int32{0, 2, 1}, -1, 0, false},
		{"int32 too big", []int32{0, 3, 5}, 1, 3, false},
		{"int32 negative", []int32{0, 1, -1}, 2, -1, false},
		{"int64 too big", []int64{2, 1 << 40}, 1, 1 << 40, false},
		{"int too big", []int{0, 0, 0, 7}, 3, 7, false},
		{"uint8 too big", []uint8{1, 255}, 1, 255, false},
		{"float32 good", []float32{0, 1, 2}, -1, 0, false},
		{"float32 fraction", []float32{0, 1.5}, 1, 1.5, false},
		{"float64 too big", []float64{3}, 0, 3, false},
		{"bool refused", []bool{true}, -1, 0, true},
	} {
		row, v, ok := firstBadLabel(c.flat, 3)
		if ok == c.refused || row != c.row || v != c.value {
			t.Errorf("%s: firstBadLabel = (row %d, value %v, ok %v), want (row %d, value %v, ok %v)",
				c.name, row, v, ok, c.row, c.value, !c.refused)
		}
	}
}
