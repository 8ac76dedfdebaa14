package accelerator

import (
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
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

// TestArgsInputRanksChanged: a batch whose inputs change rank after the first is refused with
// both ranks named (Job.args checks every batch without allocating).
func TestArgsInputRanksChanged(t *testing.T) {
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
