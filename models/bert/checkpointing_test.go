package bert

import (
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data/text"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// rematRun is what a few training steps of the micro BERT produced.
type rematRun struct {
	losses []float64
	vars   map[string][]float32
	dots   int // matrix products in the training graph: the recompute adds some
}

// trainMicro runs steps SGD steps of the micro BERT (HF's initialiser range, dropout on, seed 7) on a fixed batch,
// computed in dt, with or without GradientCheckpointing. SGD, not Adam: the key biases' gradient is zero in
// exact arithmetic (softmax ignores a shift of every score), and Adam's normalisation turns
// the rounding noise there into steps of the learning rate's size, whatever the graph.
func trainMicro(t *testing.T, backend compute.Backend, dt dtypes.DType, checkpointing bool, steps int) rematRun {
	t.Helper()
	tok, err := NewTokenizerFromVocab(microVocab, 10)
	if err != nil {
		t.Fatal(err)
	}
	store := model.NewStore()
	if err := store.SetRNGStateFromSeed(7); err != nil {
		t.Fatal(err)
	}
	cfg := microConfig(tok.VocabSize())
	cfg.InitializerRange = 0.02 // HF's: microConfig's large weights turn float32 rounding chaotic
	cfg.GradientCheckpointing = checkpointing
	clf, err := NewClassifier(cfg, store)
	if err != nil {
		t.Fatal(err)
	}
	if err := clf.SetComputeDType(dt); err != nil {
		t.Fatal(err)
	}
	in, labels, err := tok.Collate([]text.Labeled{{Text: "the movie was great !", Label: 2},
		{Text: "don't run", Label: 0}, {Text: "hello world , the cafe is fun", Label: 1}, {Text: "unaffable", Label: 2}})
	if err != nil {
		t.Fatal(err)
	}
	opt := optimizer.StochasticGradientDescent().WithDecay(false).WithLearningRate(0.1).Done()
	var g *Graph
	step := trainExec(t, backend, clf, opt, func(graph *Graph) { g = graph })
	run := rematRun{}
	for i := range steps {
		out, err := step.Call(in[0], in[1], in[2], labels)
		if err != nil {
			t.Fatalf("checkpointing=%v: step %d: %v", checkpointing, i+1, err)
		}
		run.losses = append(run.losses, float64(tensors.MustCopyFlatData[float32](out[0])[0]))
	}
	for _, n := range g.Nodes() {
		if n.Type() == NodeTypeDotGeneral || n.Type() == NodeTypeFusedDense {
			run.dots++
		}
	}
	run.vars = variableValues(t, clf.Store(), clf.Config, true)
	return run
}

// TestGradientCheckpointingSameTraining checks that activation checkpointing changes the
// training graph (the backward pass recomputes the layers' matrix products) but not the
// training: 3 SGD steps with dropout give the same losses (1e-6 relative) and the same
// variables as without, on the pure-Go backend and on XLA's CPU plugin, in float32 and in
// bfloat16 (half.Product's gradients under the recompute).
func TestGradientCheckpointingSameTraining(t *testing.T) {
	for name, backend := range testBackends(t) {
		for _, dt := range []dtypes.DType{dtypes.Float32, dtypes.BFloat16} {
			t.Run(name+"/"+dt.String(), func(t *testing.T) { sameTrainingWithRemat(t, backend, dt) })
		}
	}
}

// sameTrainingWithRemat is TestGradientCheckpointingSameTraining on one backend and dtype.
func sameTrainingWithRemat(t *testing.T, backend compute.Backend, dt dtypes.DType) {
	plain, remat := trainMicro(t, backend, dt, false, 3), trainMicro(t, backend, dt, true, 3)
	t.Logf("losses %v (plain) %v (checkpointing); matrix products in the graph: %d plain, %d checkpointing",
		plain.losses, remat.losses, plain.dots, remat.dots)
	if remat.dots <= plain.dots {
		t.Errorf("checkpointing graph has %d matrix products, plain %d: no recompute in the backward pass",
			remat.dots, plain.dots)
	}
	for i := range plain.losses {
		if rel := math.Abs(remat.losses[i]-plain.losses[i]) / math.Abs(plain.losses[i]); !(rel <= 1e-6) {
			t.Errorf("step %d: loss %.9g with checkpointing, %.9g without (relative difference %.2g)",
				i+1, remat.losses[i], plain.losses[i], rel)
		}
	}
	names := make([]string, 0, len(plain.vars))
	for n := range plain.vars {
		names = append(names, n)
	}
	sort.Strings(names)
	worst := 0.0
	for _, n := range names {
		if d := testutil.MaxAbsDiff(t, n, plain.vars[n], remat.vars[n]); !(d <= 1e-6) {
			t.Errorf("%s differs by %.3g after 3 steps with checkpointing", n, d)
		} else {
			worst = max(worst, d)
		}
	}
	t.Logf("largest variable difference after 3 steps: %.3g", worst)
}

// TestGradientCheckpointingNotInConfigJSON checks that the option stays out of config.json
// both ways: it is a training choice, and Hugging Face deprecated the key there.
func TestGradientCheckpointingNotInConfigJSON(t *testing.T) {
	cfg := TinyConfig(10)
	cfg.GradientCheckpointing = true
	js, err := cfg.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), "checkpointing") {
		t.Errorf("config.json carries the option:\n%s", js)
	}
	parsed, err := ParseConfig([]byte(`{"gradient_checkpointing": true}`), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	if parsed.GradientCheckpointing {
		t.Error("an old config.json's gradient_checkpointing key turned the option on")
	}
}
