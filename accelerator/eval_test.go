package accelerator

import (
	"slices"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// TestEvaluateCountsEachExampleOnce gathers per-example outputs over 4 devices and checks
// that exactly the N real examples come back, once each, in dataset order — also when N is
// not divisible, and when there are fewer examples than devices.
func TestEvaluateCountsEachExampleOnce(t *testing.T) {
	t.Parallel()
	a := newXLA(t, 4)
	cases := []struct {
		name      string
		n, perDev int
		wantSlots int // example slots run on the devices, padding included
	}{
		{"10 examples, 4 devices, batch 2", 10, 2, 16},
		{"divisible: 16 examples, 4 devices, batch 2", 16, 2, 16},
		{"fewer examples than devices: 3 on 4", 3, 2, 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x, y := toyData(c.n)
			train := &fixedSource{x: x, y: y, batch: c.perDev}
			job, err := a.Prepare(model.NewStore(), optimizer.Adam().Done(), train)
			if err != nil {
				t.Fatal(err)
			}
			eval := &fixedSource{x: x, y: y, batch: c.perDev}
			slots := 0
			evalStep := job.EvalStep(func(s *model.Scope, b GraphBatch) []*Node {
				// Output each example's first feature and its label: checkable per row.
				first := Slice(b.Inputs[0], AxisRange(), AxisElem(0))
				return []*Node{Reshape(first, -1), b.Labels}
			})
			var parts []*Gathered
			if err := a.distribute(eval); err != nil {
				t.Fatal(err)
			}
			for st, err := range eval.Epoch() {
				if err != nil {
					t.Fatal(err)
				}
				g, err := evalStep.Run(st)
				if err != nil {
					t.Fatal(err)
				}
				slots += g.Len()
				parts = append(parts, g)
			}
			if slots != c.wantSlots {
				t.Errorf("ran %d slots, want %d", slots, c.wantSlots)
			}
			got, err := GatherForMetrics(parts...)
			if err != nil {
				t.Fatal(err)
			}
			if got.Len() != c.n {
				t.Fatalf("gathered %d examples, want exactly %d", got.Len(), c.n)
			}
			if want := seqInts(c.n); !slices.Equal(got.Indices, want) {
				t.Errorf("indices %v, want %v", got.Indices, want)
			}
			feats, err := got.Floats(0)
			if err != nil {
				t.Fatal(err)
			}
			labels, err := got.IntLabels()
			if err != nil {
				t.Fatal(err)
			}
			outLabels, _ := got.Floats(1)
			for i := range c.n {
				if float32(feats[i]) != x[i][0] || labels[i] != int(y[i]) || int(outLabels[i]) != int(y[i]) {
					t.Errorf("row %d: feature %g label %d (graph %g), want %g and %d", i, feats[i], labels[i], outLabels[i], x[i][0], y[i])
				}
			}
			// Evaluate does the same in one call.
			all, err := job.Evaluate(&fixedSource{x: x, y: y, batch: c.perDev}, evalStep)
			if err != nil {
				t.Fatal(err)
			}
			if all.Len() != c.n || !slices.Equal(all.Indices, seqInts(c.n)) {
				t.Errorf("Evaluate returned %d rows %v, want %d in order", all.Len(), all.Indices, c.n)
			}
		})
	}
}

func seqInts(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
