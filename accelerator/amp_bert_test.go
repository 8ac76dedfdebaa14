package accelerator

import (
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/models/bert"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// tokens is one example of the tiny BERT's task: 8 token ids, labelled 1 when token 5
// appears among them.
type tokens struct {
	ids   []int32
	label int32
}

func collateTokens(batch []tokens) ([]*tensors.Tensor, *tensors.Tensor, error) {
	ids := make([][]int32, len(batch))
	mask := make([][]int32, len(batch))
	labels := make([]int32, len(batch))
	for i, ex := range batch {
		ids[i], labels[i] = ex.ids, ex.label
		mask[i] = []int32{1, 1, 1, 1, 1, 1, 1, 1}
	}
	return []*tensors.Tensor{tensors.FromValue(ids), tensors.FromValue(mask)}, tensors.FromValue(labels), nil
}

// tinyBertSetup is the accelerator (pure Go, the given precision), a loader of the tiny
// BERT's task (64 examples, batches of 16) and the tiny BERT classifier.
func tinyBertSetup(t *testing.T, precision string) (*Accelerator, *data.Loader[tokens], *bert.Classifier) {
	t.Helper()
	a, err := New(Config{Backend: "go", Quiet: true, Seed: 7, MixedPrecision: precision})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	examples := make([]tokens, 64)
	for i := range examples {
		ex := tokens{ids: make([]int32, 8)}
		for k := range ex.ids {
			ex.ids[k] = int32(6 + (i*7+k*11)%20)
		}
		if i%2 == 0 {
			ex.ids[(i/2)%8], ex.label = 5, 1
		}
		examples[i] = ex
	}
	loader, err := data.NewLoader(data.FromSlice(examples), data.LoaderConfig[tokens]{BatchSize: 16, Collate: collateTokens})
	if err != nil {
		t.Fatal(err)
	}
	cfg := bert.TinyConfig(26)
	cfg.HiddenSize, cfg.NumAttentionHeads, cfg.IntermediateSize, cfg.MaxPositionEmbeddings, cfg.NumHiddenLayers = 16, 2, 32, 8, 1
	cfg.HiddenDropoutProb, cfg.AttentionProbsDropoutProb, cfg.InitializerRange = 0, 0, 0.1
	clf, err := bert.NewClassifier(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a, loader, clf
}

// precisionBertRun trains a tiny BERT classifier (its own casting: SetComputeDType) for 30 Adam steps
// at the given precision and returns the losses and the forward pass's matmul dtypes.
func precisionBertRun(t *testing.T, precision string) ([]float64, map[dtypes.DType]int) {
	t.Helper()
	a, loader, clf := tinyBertSetup(t, precision)
	job, err := a.Prepare(clf, optimizer.Adam().LearningRate(1e-3).Done(), loader)
	if err != nil {
		t.Fatal(err)
	}
	var mm map[dtypes.DType]int
	train := job.TrainStep(func(s *model.Scope, b GraphBatch) *Node {
		logits := clf.Logits(s, b.Inputs)
		mm = matmulDTypes(logits.Graph())
		lv := CrossEntropy(logits, b.Labels, b.Mask)
		a.Backward(s, lv)
		return lv
	})
	var losses []float64
	runBatches(t, job, train, 30, func(l float64) { losses = append(losses, l) })
	return losses, mm
}

// TestMixedPrecisionTinyBERT: the tiny BERT (a model with its own SetComputeDType) under
// "bf16" and "fp16" ends 30 steps within 2e-2 (relative) of float32's loss, with its matrix
// products in the low dtype and its first loss not float32's to the bit. (On the pure-Go
// backend, which rounds to the low dtype as XLA does; XLA's compilation of this graph alone
// takes 15 s on the shared test machine.)
func TestMixedPrecisionTinyBERT(t *testing.T) {
	t.Parallel()
	ref, _ := precisionBertRun(t, "no")
	if ref[29] >= ref[0] {
		t.Fatalf("the tiny BERT did not learn in fp32: loss %g -> %g", ref[0], ref[29])
	}
	for _, c := range []struct {
		precision string
		dt        dtypes.DType
	}{{"bf16", dtypes.BFloat16}, {"fp16", dtypes.Float16}} {
		losses, mm := precisionBertRun(t, c.precision)
		checkLowPrecision(t, c.precision, c.dt, losses, ref, mm)
	}
}

// TestMixedPrecisionBERTStoreNamesTheFix: the tiny BERT handed to Prepare as its Store (so
// goaccel casts its variables, and the model, which handles its own precision, asks for them
// as float32) fails its first step under bf16 with an error that says to pass the model.
func TestMixedPrecisionBERTStoreNamesTheFix(t *testing.T) {
	t.Parallel()
	a, loader, clf := tinyBertSetup(t, "bf16")
	job, err := a.Prepare(clf.Store(), optimizer.Adam().Done(), loader)
	if err != nil {
		t.Fatal(err)
	}
	train := job.TrainStep(func(s *model.Scope, b GraphBatch) *Node {
		lv := CrossEntropy(clf.Logits(s, b.Inputs), b.Labels, b.Mask)
		a.Backward(s, lv)
		return lv
	})
	for gb, err := range job.Batches() {
		if err != nil {
			t.Fatal(err)
		}
		_, err = train.Run(gb)
		t.Logf("the tiny BERT's Store under bf16: %v", err)
		if err == nil || !strings.Contains(err.Error(), "pass the model itself to Prepare") {
			t.Errorf("the tiny BERT's Store under bf16: got %v, want an error that says to pass the model", err)
		}
		return
	}
}
