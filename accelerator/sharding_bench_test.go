package accelerator

import (
	"slices"
	"testing"
	"time"

	"github.com/goaccel/goaccel/data"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// BenchmarkShardedStepMLP measures the step time of an MLP (8 -> 1024 -> 1024 -> 3, Adam,
// global batch 64) on 4 XLA CPU devices unsharded, under zero1 and under zero3, and on 1
// device, side by side: rounds alternate the four, each round times 20 steps (the loss read
// after each), and the medians' ratios to unsharded on 4 devices are reported (zero1/no,
// zero3/no, 1dev/no).
//
//	go test -run '^$' -bench BenchmarkShardedStepMLP -benchtime 1x ./accelerator
func BenchmarkShardedStepMLP(b *testing.B) {
	const rounds, steps = 5, 20
	levels := []string{"no", "zero1", "zero3", "1dev"}
	x, y := toyData(64 * 4)
	runners := map[string]*benchRunner{}
	for _, level := range levels {
		devices, sharding := 4, level
		if level == "1dev" {
			devices, sharding = 1, "no"
		}
		a := newXLASharded(b, devices, sharding)
		loader, err := data.NewLoader[toyPoint](toyPoints(x, y), data.LoaderConfig[toyPoint]{GlobalBatchSize: 64, Collate: collateToyPoints})
		if err != nil {
			b.Fatal(err)
		}
		job, err := a.Prepare(model.NewStore(), optimizer.Adam().LearningRate(1e-3).Done(), loader)
		if err != nil {
			b.Fatal(err)
		}
		train := job.TrainStep(func(s *model.Scope, gb GraphBatch) *Node {
			h := Tanh(layers.Dense(s.In("l1"), gb.Inputs[0], true, 1024))
			h = Tanh(layers.Dense(s.In("l2"), h, true, 1024))
			lv := CrossEntropy(layers.Dense(s.In("out"), h, true, 3), gb.Labels, gb.Mask)
			a.Backward(s, lv)
			return lv
		})
		r := &benchRunner{train: train}
		for gb, err := range job.Batches() {
			if err != nil {
				b.Fatal(err)
			}
			r.batch = gb
			break
		}
		for range 3 { // compile and warm up
			if _, err := r.step(); err != nil {
				b.Fatal(err)
			}
		}
		runners[level] = r
	}
	times := map[string][]time.Duration{}
	for range b.N {
		for range rounds {
			for _, level := range levels {
				start := time.Now()
				for range steps {
					if _, err := runners[level].step(); err != nil {
						b.Fatal(err)
					}
				}
				times[level] = append(times[level], time.Since(start)/steps)
			}
		}
	}
	median := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2]
	}
	base := median(times["no"])
	b.ReportMetric(float64(base.Microseconds()), "us/step(no)")
	for _, level := range levels[1:] {
		m := median(times[level])
		b.ReportMetric(float64(m.Microseconds()), "us/step("+level+")")
		b.ReportMetric(float64(m)/float64(base), level+"/no")
	}
}

// benchRunner runs one TrainStep on the same global batch.
type benchRunner struct {
	train *TrainStep
	batch *data.GlobalBatch
}

// step runs the step and reads its loss (so that the step has finished).
func (r *benchRunner) step() (float64, error) {
	l, err := r.train.Run(r.batch)
	if err != nil {
		return 0, err
	}
	return l.Value()
}
