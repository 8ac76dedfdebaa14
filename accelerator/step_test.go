package accelerator

import (
	"math"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// TestStepHandlesFromOneFactoryDiffer is the regression test of steps once cached by their
// function's code pointer: two closures made by the same factory share that pointer, and the
// second used to run the first one's graph. Each TrainStep / EvalStep now owns its graphs.
func TestStepHandlesFromOneFactoryDiffer(t *testing.T) {
	t.Parallel()
	a := newXLA(t, 2)
	x, y := toyData(16)
	job, err := a.Prepare(model.NewStore(), optimizer.Adam().LearningRate(1e-12).Done(), // the variables stay (almost) put
		&fixedSource{x: x, y: y, batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	scaled := func(k float64) StepFn {
		return func(s *model.Scope, b GraphBatch) *Node {
			l := CrossEntropy(mlpLogits(s, b.Inputs[0]), b.Labels, b.Mask)
			a.Backward(s, l)
			return MulScalar(l, k)
		}
	}
	var gb = firstBatch(t, job)
	one, err := job.TrainStep(scaled(1)).Run(gb)
	if err != nil {
		t.Fatal(err)
	}
	thousand, err := job.TrainStep(scaled(1000)).Run(gb)
	if err != nil {
		t.Fatal(err)
	}
	l1, l1000 := mustLoss(t, one), mustLoss(t, thousand)
	if math.Abs(l1000/l1-1000) > 1e-3 {
		t.Errorf("TrainStep(scaled(1000)) gave loss %g, TrainStep(scaled(1)) %g: want a ratio of 1000", l1000, l1)
	}

	evalScaled := func(k float64) EvalFn {
		return func(s *model.Scope, b GraphBatch) []*Node {
			return []*Node{MulScalar(OnesLike(ConvertDType(b.Labels, dtypes.Float32)), k)}
		}
	}
	for _, k := range []float64{2, 3} {
		g, err := job.Evaluate(&fixedSource{x: x, y: y, batch: 4}, job.EvalStep(evalScaled(k)))
		if err != nil {
			t.Fatal(err)
		}
		vals, err := g.Floats(0)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if v != k {
				t.Fatalf("EvalStep(evalScaled(%g)) row %d = %g, want %g", k, i, v, k)
			}
		}
	}
}

// firstBatch returns the first global batch of the job's training data.
func firstBatch(t *testing.T, job *Job) (gb *data.GlobalBatch) {
	t.Helper()
	for b, err := range job.Batches() {
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Fatal("the job's data yields no batch")
	return nil
}

// TestLossValueDTypes reads losses of every float dtype on the host and refuses, with an
// error, what is not a number: never a quiet 0.
func TestLossValueDTypes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		t    *tensors.Tensor
		want float64
		err  string
	}{
		{"float32", tensors.FromValue(float32(0.5)), 0.5, ""},
		{"float64", tensors.FromValue(0.25), 0.25, ""},
		{"bfloat16", tensors.FromValue(bfloat16.FromFloat32(0.75)), 0.75, ""},
		{"bool", tensors.FromValue(true), math.NaN(), "cannot be read as a number"},
		{"vector", tensors.FromValue([]float32{1, 2}), math.NaN(), "want a scalar"},
		{"missing", nil, math.NaN(), "failed or missing step"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Loss{t: c.t}.Value()
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !math.IsNaN(got) {
					t.Errorf("got %g, %v; want NaN and an error with %q", got, err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("got %g, %v; want %g", got, err, c.want)
			}
		})
	}
}

// TestArgsInputRanksChanged: a batch whose inputs change rank after the first is refused with
// both ranks named (Job.args checks every batch without allocating).
func TestArgsInputRanksChanged(t *testing.T) {
	t.Parallel()
	a := newXLA(t, 1)
	x, y := toyData(4)
	job, err := a.Prepare(model.NewStore(), optimizer.Adam().Done(), &fixedSource{x: x, y: y, batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	gb := firstBatch(t, job)
	if _, err := job.args(gb); err != nil {
		t.Fatal(err)
	}
	sh := *gb.Shards[0]
	sh.Inputs = []*tensors.Tensor{tensors.FromValue([][][]float32{{{1}}, {{2}}, {{3}}, {{4}}})}
	_, err = job.args(&data.GlobalBatch{Shards: []*data.Batch{&sh}})
	if err == nil || !strings.Contains(err.Error(), "changed from ranks [2] to [3]") {
		t.Fatalf("got %v, want the ranks [2] and [3] named", err)
	}
	if _, err := job.args(gb); err != nil {
		t.Errorf("the first batch again: %v", err)
	}
}
