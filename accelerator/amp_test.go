package accelerator

import (
	"math"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// newPrecision returns an Accelerator on one XLA CPU device at the given MixedPrecision.
func newPrecision(t *testing.T, precision string) *Accelerator {
	t.Helper()
	a, err := New(Config{Backend: cpuPlugin(t), Devices: 1, Quiet: true, Seed: 7, MixedPrecision: precision})
	if err != nil {
		t.Fatalf("New(MixedPrecision %q): %v", precision, err)
	}
	t.Cleanup(a.Close)
	return a
}

// matmulDTypes counts the matrix products (DotGeneral, FusedDense) of g by the dtype of their
// operands (what they multiply in; the result may be wider, as bert's float32 results).
func matmulDTypes(g *Graph) map[dtypes.DType]int {
	n := map[dtypes.DType]int{}
	for _, node := range g.Nodes() {
		if tp := node.Type(); tp == NodeTypeDotGeneral || tp == NodeTypeFusedDense {
			n[node.Inputs()[0].DType()]++
		}
	}
	return n
}

// ampRun trains the toy MLP (GoMLX layers.Dense, no SetComputeDType) for 30 Adam steps and
// returns the losses, the final store and the matmul dtypes of the traced forward pass.
func ampRun(t *testing.T, a *Accelerator) ([]float64, *Job, map[dtypes.DType]int) {
	t.Helper()
	x, y := toyData(48)
	store := model.NewStore()
	job, err := a.Prepare(store, optimizer.Adam().LearningRate(0.01).Done(), &fixedSource{x: x, y: y, batch: 16})
	if err != nil {
		t.Fatal(err)
	}
	var mm map[dtypes.DType]int
	train := job.TrainStep(func(s *model.Scope, b GraphBatch) *Node {
		logits := mlpLogits(s, b.Inputs[0])
		mm = matmulDTypes(logits.Graph()) // the forward pass's (the backward's follow GoMLX's accumulator dtype)
		lv := CrossEntropy(logits, b.Labels, b.Mask)
		a.Backward(s, lv)
		return lv
	})
	var losses []float64
	runBatches(t, job, train, 30, func(l float64) { losses = append(losses, l) })
	return losses, job, mm
}

// runBatches runs n batches of train, over as many epochs as it takes, calling after with
// each batch's loss.
func runBatches(t *testing.T, job *Job, train *TrainStep, n int, after func(loss float64)) {
	t.Helper()
	for n > 0 {
		for gb, err := range job.Batches() {
			if err != nil {
				t.Fatal(err)
			}
			l, err := train.Run(gb)
			if err != nil {
				t.Fatal(err)
			}
			after(mustLoss(t, l))
			if n--; n == 0 {
				return
			}
		}
	}
}

// checkLowPrecision checks a run at a low precision (dt) against float32's: the loss after
// 30 steps within 2e-2 (relative), the first loss not float32's to the bit, matmuls (mm, of
// the forward pass) in dt.
func checkLowPrecision(t *testing.T, precision string, dt dtypes.DType, losses, ref []float64, mm map[dtypes.DType]int) {
	t.Helper()
	rel := math.Abs(losses[29]-ref[29]) / ref[29]
	t.Logf("%s: loss after 30 steps %.5f, fp32 %.5f (relative %.2g; step 1: %.7f, fp32 %.7f); forward matmuls by operand dtype %v",
		precision, losses[29], ref[29], rel, losses[0], ref[0], mm)
	if rel > 2e-2 {
		t.Errorf("%s: loss after 30 steps %g, fp32 %g: relative difference %g > 2e-2", precision, losses[29], ref[29], rel)
	}
	if losses[0] == ref[0] {
		t.Errorf("%s: the first loss is float32's to the bit (%g): the low precision was not used", precision, ref[0])
	}
	if mm[dt] == 0 {
		t.Errorf("%s: forward matmuls by operand dtype %v: none in %s", precision, mm, dt)
	}
}

// TestMixedPrecisionLayersModel: the toy MLP, built from GoMLX layers with nothing to
// implement, trains under "bf16" and "fp16" to within 2e-2 (relative) of float32's loss after
// 30 steps, its matrix products are in the low dtype (not silently float32), and the
// variables and the optimizer's state stay float32.
func TestMixedPrecisionLayersModel(t *testing.T) {
	t.Parallel()
	ref, _, refMM := ampRun(t, newPrecision(t, "no"))
	if refMM[dtypes.Float32] == 0 {
		t.Fatalf("fp32 run: no float32 matmul in the graph: %v", refMM)
	}
	for _, c := range []struct {
		precision string
		dt        dtypes.DType
	}{{"bf16", dtypes.BFloat16}, {"fp16", dtypes.Float16}} {
		t.Run(c.precision, func(t *testing.T) {
			losses, job, mm := ampRun(t, newPrecision(t, c.precision))
			scale, skipped, err := job.LossScale()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: loss scale %g, %d update(s) skipped", c.precision, scale, skipped)
			checkLowPrecision(t, c.precision, c.dt, losses, ref, mm)
			if mm[dtypes.Float32] != 0 {
				t.Errorf("%s: matmuls by dtype %v: want all in %s", c.precision, mm, c.dt)
			}
			for v := range job.Store().IterVariables() {
				if dt := v.DType(); dt.IsFloat() && dt != dtypes.Float32 {
					t.Errorf("%s: variable %s is %s, want float32", c.precision, v.Path(), dt)
				}
			}
		})
	}
}

// TestMixedPrecisionErrors: an unknown precision names the valid ones (fp16 included); a
// float32 constant mixed with bf16 activations is an error naming the op; fp16 with a loss
// that is not a float scalar is an error naming it.
func TestMixedPrecisionErrors(t *testing.T) {
	_, err := New(Config{Backend: "go", MixedPrecision: "fp8", Quiet: true})
	if err == nil || !strings.Contains(err.Error(), `"fp8"`) || !strings.Contains(err.Error(), `"fp16"`) || !strings.Contains(err.Error(), `"bf16"`) {
		t.Errorf("MixedPrecision fp8: got %v", err)
	}
	t.Setenv("GOACCEL_MIXED_PRECISION", "FP16")
	if a, err := New(Config{Backend: "go", Quiet: true}); err != nil {
		t.Errorf("$GOACCEL_MIXED_PRECISION=FP16: %v", err)
	} else {
		if a.Info().Precision != "fp16" {
			t.Errorf("$GOACCEL_MIXED_PRECISION=FP16: precision %q, want fp16", a.Info().Precision)
		}
		a.Close()
	}
	t.Setenv("GOACCEL_MIXED_PRECISION", "half")
	_, err = New(Config{Backend: "go", Quiet: true})
	if err == nil || !strings.Contains(err.Error(), "$GOACCEL_MIXED_PRECISION") || !strings.Contains(err.Error(), `"fp16"`) {
		t.Errorf("$GOACCEL_MIXED_PRECISION=half: got %v", err)
	}
	t.Setenv("GOACCEL_MIXED_PRECISION", "")
	run := func(precision string, fn StepFn) error {
		a := newPrecision(t, precision)
		x, y := toyData(16)
		job, err := a.Prepare(model.NewStore(), optimizer.Adam().Done(), &fixedSource{x: x, y: y, batch: 16})
		if err != nil {
			t.Fatal(err)
		}
		for gb, err := range job.Batches() {
			if err != nil {
				t.Fatal(err)
			}
			_, err = job.TrainStep(fn).Run(gb)
			return err
		}
		return nil
	}
	err = run("bf16", func(s *model.Scope, b GraphBatch) *Node {
		logits := mlpLogits(s, b.Inputs[0])
		logits = Add(logits, Const(logits.Graph(), [][]float32{{0.1, 0.2, 0.3}})) // a float32 constant
		lv := CrossEntropy(logits, b.Labels, b.Mask)
		acc := b.Mask.Graph().State(backwardKey{}).(*backwardState).job.acc
		acc.Backward(s, lv)
		return lv
	})
	t.Logf("float32 constant under bf16: %v", err)
	if err == nil || !strings.Contains(err.Error(), "MixedPrecision \"bf16\"") || !strings.Contains(err.Error(), "Add") {
		t.Errorf("a float32 constant under bf16: got %v, want an error naming MixedPrecision and the op", err)
	}
	err = run("fp16", func(s *model.Scope, b GraphBatch) *Node {
		lv := ConvertDType(ReduceAllSum(ArgMax(mlpLogits(s, b.Inputs[0]), -1)), dtypes.Int32)
		acc := b.Mask.Graph().State(backwardKey{}).(*backwardState).job.acc
		acc.Backward(s, lv)
		return lv
	})
	t.Logf("an int32 loss under fp16: %v", err)
	if err == nil || !strings.Contains(err.Error(), "fp16") || !strings.Contains(err.Error(), "float scalar") || !strings.Contains(err.Error(), "Int32") {
		t.Errorf("an int32 loss under fp16: got %v, want an error naming it", err)
	}
}

// TestMixedPrecisionDropoutAndEval: under autocast on 2 devices, a model with dropout (the
// random state read and advanced through the shadow scope) trains, and its evaluation
// outputs come back float32, every example once.
func TestMixedPrecisionDropoutAndEval(t *testing.T) {
	t.Parallel()
	a, err := New(Config{Backend: cpuPlugin(t), Devices: 2, Quiet: true, Seed: 7, MixedPrecision: "bf16"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	x, y := toyData(32)
	job, err := a.Prepare(model.NewStore(), optimizer.Adam().LearningRate(0.01).Done(), &fixedSource{x: x, y: y, batch: 8})
	if err != nil {
		t.Fatal(err)
	}
	logits := func(s *model.Scope, x *Node) *Node {
		h := layers.DropoutStatic(s, Tanh(layers.Dense(s.In("hidden"), x, true, 16)), 0.2)
		return layers.Dense(s.In("out"), h, true, 3)
	}
	train := job.TrainStep(func(s *model.Scope, b GraphBatch) *Node {
		lv := CrossEntropy(logits(s, b.Inputs[0]), b.Labels, b.Mask)
		a.Backward(s, lv)
		return lv
	})
	var losses []float64
	runBatches(t, job, train, 4, func(l float64) { losses = append(losses, l) })
	rng := job.Store().GetVariable(rngStatePath)
	before, _ := storeValues(job.Store())
	runBatches(t, job, train, 1, func(l float64) { losses = append(losses, l) })
	after, _ := storeValues(job.Store())
	if rng == nil || before[rngStatePath] == after[rngStatePath] {
		t.Errorf("the random state did not advance under autocast with dropout: %v", after[rngStatePath])
	}
	for _, l := range losses {
		if math.IsNaN(l) || math.IsInf(l, 0) {
			t.Fatalf("losses %v", losses)
		}
	}
	eval := job.EvalStep(func(s *model.Scope, b GraphBatch) []*Node { return []*Node{logits(s, b.Inputs[0])} })
	res, err := job.Evaluate(&fixedSource{x: x, y: y, batch: 8}, eval)
	if err != nil {
		t.Fatal(err)
	}
	got, err := res.Floats(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 32*3 || res.Outputs[0].DType() != dtypes.Float32 {
		t.Fatalf("evaluation gave %d values of %s, want %d float32", len(got), res.Outputs[0].DType(), 32*3)
	}
	t.Logf("losses %.4f; first logits %.4f", losses, got[:3])
}
