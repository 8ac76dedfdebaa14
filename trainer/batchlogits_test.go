package trainer

import (
	"bytes"
	"math"
	"path/filepath"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/models/nn"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// TestSingleLabelClassificationOfBatchGetsTheMask: the model function of
// SingleLabelClassificationOfBatch receives the batch, mask included, in training, so a
// BatchNorm over the inputs keeps the padding out of its statistics. Six examples in global
// batches of 3 on 2 devices make shares of 2 slots, the second device's last one a masked
// repeat; the running mean after the two steps must be torch's update over the real
// examples only (the repeat would pull it elsewhere).
func TestSingleLabelClassificationOfBatchGetsTheMask(t *testing.T) {
	acc := accOn(t, 2)
	sawMask := false
	task := SingleLabelClassificationOfBatch(3, func(s *model.Scope, b accelerator.GraphBatch) *Node {
		if b.Mask == nil {
			t.Error("the model function got a batch without its mask")
		} else if s.IsTraining(b.Mask.Graph()) {
			sawMask = true
		}
		h := nn.BatchNorm(s.In("bn"), b.Inputs[0], b.Mask, nn.BatchNormConfig{})
		return layers.Dense(s.In("out"), h, true, 3)
	})
	store := model.NewStore()
	tr, err := New(acc, store, optimizer.Adam().Done(), task)
	if err != nil {
		t.Fatal(err)
	}
	examples := toyExamples(6, 0)
	loader, err := data.NewLoader(examples, data.LoaderConfig[example]{GlobalBatchSize: 3, Collate: collateToy})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Fit(loader, nil, Config{OutputDir: filepath.Join(t.TempDir(), "run"),
		Epochs: 1, LearningRate: 0.01, Output: &bytes.Buffer{}, DisableCheckpoints: true}); err != nil {
		t.Fatal(err)
	}
	if !sawMask {
		t.Fatal("the training step's model function never ran in training mode")
	}
	var got []float32
	for v := range store.IterVariables() {
		if v.Path() == "/bn/running_mean" || filepath.Base(v.Path()) == "running_mean" {
			val, err := v.Value()
			if err != nil {
				t.Fatal(err)
			}
			_ = val.ConstFlatData(func(a any) { got = append(got, a.([]float32)...) })
		}
	}
	if len(got) != 8 {
		t.Fatalf("running_mean of %d values, want 8 (a variable named running_mean under /bn)", len(got))
	}
	for j := range 8 {
		var mean [2]float64
		for i := range 6 {
			mean[i/3] += float64(examples[i].x[j]) / 3
		}
		want := 0.9*(0.1*mean[0]) + 0.1*mean[1] // momentum 0.1, from zeros
		if math.Abs(float64(got[j])-want) > 1e-6 {
			t.Errorf("running_mean[%d] = %.7f, want %.7f (the real examples' means only)", j, got[j], want)
		}
	}
}
