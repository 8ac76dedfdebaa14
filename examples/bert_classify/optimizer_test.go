package main

import (
	"math"
	"testing"

	"github.com/gomlx/compute"
	_ "github.com/gomlx/compute/gobackend"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// TestOptimizerIsPyTorchs checks the example's optimizer against torch.optim.Adam and
// Hugging Face's AdamW on one step of two weights with known gradients, on the pure-Go
// backend: the first step moves a weight by lr·g/(|g|+eps), so a gradient of 1e-7 tells
// PyTorch's eps (1e-8: lr/1.1) from GoMLX's default (1e-7: lr/2); with --weight_decay the
// classifier's weight also loses lr·wd·w and its bias does not.
func TestOptimizerIsPyTorchs(t *testing.T) {
	backend, err := compute.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatalf("pure-Go backend: %v", err)
	}
	const lr, g, w0 = 0.01, 1e-7, 2.0
	adamPart := lr * g / (g + 1e-8)
	for _, wd := range []float64{0, 0.1} {
		o := defaultOptions()
		o.WeightDecay = wd
		opt, err := o.optimizer(lr)
		if err != nil {
			t.Fatal(err)
		}
		store := model.NewStore()
		weight := store.RootScope().At("classifier").VariableWithValue("weight", float32(w0))
		bias := store.RootScope().At("classifier").VariableWithValue("bias", float32(w0))
		exec, err := model.NewExec(backend, store, func(s *model.Scope, gr *Graph) *Node {
			loss := MulScalar(Add(weight.NodeValue(gr), bias.NodeValue(gr)), g)
			opt.UpdateGraph(s, gr, loss)
			return loss
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := exec.Call(); err != nil {
			t.Fatalf("one optimizer step: %v", err)
		}
		for _, c := range []struct {
			v    *model.Variable
			want float64
		}{{weight, w0 - adamPart - lr*wd*w0}, {bias, w0 - adamPart}} {
			got := float64(tensors.ToScalar[float32](c.v.MustValue()))
			if math.Abs(got-c.want) > 1e-6 {
				t.Errorf("--weight_decay %g: %s = %.7f after one step, want %.7f (PyTorch's eps 1e-8, no decay of biases)",
					wd, c.v.Path(), got, c.want)
			}
		}
	}
}
