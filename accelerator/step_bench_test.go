package accelerator

import (
	"testing"

	"github.com/goaccel/goaccel/data"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// BenchmarkStepFixedCost is the fixed, per-step cost of TrainStep.Run on one XLA CPU device:
// the toy MLP (8 -> 16 -> 3) on a global batch of 4, so that XLA's compute is next to nothing
// and what is left is the host's work around the execution (the executor's arguments, the
// label check, the stats, the execution's set-up and results) and XLA's own dispatch. The
// loss is read after every step, as a training loop that logs it does. With -benchmem it
// reports the Go allocations per step.
//
//	go test ./accelerator -run '^$' -bench StepFixedCost -benchmem
func BenchmarkStepFixedCost(b *testing.B) {
	a, err := New(Config{Backend: cpuPlugin(b), Devices: 1, Quiet: true, Seed: 7})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	x, y := toyData(4)
	job, err := a.Prepare(model.NewStore(), optimizer.Adam().LearningRate(1e-3).Done(), &fixedSource{x: x, y: y, batch: 4})
	if err != nil {
		b.Fatal(err)
	}
	var gb *data.GlobalBatch
	for bt, err := range job.Batches() {
		if err != nil {
			b.Fatal(err)
		}
		gb = bt
		break
	}
	train := job.TrainStep(func(s *model.Scope, bt GraphBatch) *Node {
		l := CrossEntropy(mlpLogits(s, bt.Inputs[0]), bt.Labels, bt.Mask)
		a.Backward(s, l)
		return l
	})
	for range 3 { // compile and warm up
		l, err := train.Run(gb)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := l.Value(); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		l, err := train.Run(gb)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := l.Value(); err != nil {
			b.Fatal(err)
		}
	}
}
