package trainer

import (
	"flag"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

var (
	benchSteps  = flag.Int("bench.steps", 20, "BenchmarkTrainerOverhead: steps per round (one epoch)")
	benchRounds = flag.Int("bench.rounds", 4, "BenchmarkTrainerOverhead: alternating rounds; the first is warm-up")
)

// benchRow is one example of the MLP workload: 512 features and a class out of 10.
type benchRow struct {
	x []float32
	y int32
}

func benchLoader(tb testing.TB, rows []benchRow, batch int) *data.Loader[benchRow] {
	l, err := data.NewLoader(data.FromSlice(rows), data.LoaderConfig[benchRow]{BatchSize: batch, Workers: 1,
		Collate: func(ex []benchRow) ([]*tensors.Tensor, *tensors.Tensor, error) {
			flat := make([]float32, 0, len(ex)*512)
			ys := make([]int32, len(ex))
			for i, e := range ex {
				flat = append(flat, e.x...)
				ys[i] = e.y
			}
			return []*tensors.Tensor{tensors.FromFlatDataAndDimensions(flat, len(ex), 512)}, tensors.FromValue(ys), nil
		}})
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// benchMLP is the MLP workload of cmd/goaccel/internal/bench/mlp: 512 -> 4 x 1024 (ReLU) -> 10.
func benchMLP(s *model.Scope, x *Node) *Node {
	for i := range 4 {
		x = activation.Relu(layers.Dense(s.In("hidden_%d", i), x, true, 1024))
	}
	return layers.Dense(s.In("out"), x, true, 10)
}

// BenchmarkTrainerOverhead compares the trainer's loop with the bare prepared step on the
// MLP workload (512 -> 4x1024 -> 10, Adam, batch 256, one XLA CPU device), alternating in
// one process so that both see the same machine load: Fit runs one epoch per round, and
// at the end of each epoch a callback runs the same number of bare Job.Step calls (the loop a
// user would write: range over Job.Batches, Step, read the loss) on a second prepared job.
// Each round times the steps after the first of its epoch (the first includes compilation
// and the epoch's start). Reported: steps/s of both and their ratio over the rounds after
// the first (target >= 0.97).
//
//	go test ./trainer -run '^$' -bench TrainerOverhead -benchtime 1x
func BenchmarkTrainerOverhead(b *testing.B) {
	acc := accOn(b, 1)
	steps, rounds := *benchSteps, *benchRounds
	const batch = 256
	rng := rand.New(rand.NewPCG(1, 2))
	rows := make([]benchRow, steps*batch)
	for i := range rows {
		x := make([]float32, 512)
		for j := range x {
			x[j] = rng.Float32() - 0.5
		}
		rows[i] = benchRow{x: x, y: int32(rng.IntN(10))}
	}
	lossFn := func(s *model.Scope, bt accelerator.GraphBatch) *Node {
		return accelerator.CrossEntropy(benchMLP(s, bt.Inputs[0]), bt.Labels, bt.Mask)
	}

	// The bare job: what a hand-written loop does.
	bare, err := acc.Prepare(model.NewStore(), optimizer.Adam().LearningRate(1e-4).Done(), benchLoader(b, rows, batch))
	if err != nil {
		b.Fatal(err)
	}
	bareStep := bare.TrainStep(func(s *model.Scope, bt accelerator.GraphBatch) *Node {
		l := lossFn(s, bt)
		acc.Backward(s, l)
		return l
	})
	runBare := func() (time.Duration, error) {
		var first time.Time
		n := 0
		for st, err := range bare.Batches() {
			if err != nil {
				return 0, err
			}
			l, err := bareStep.Run(st)
			if err != nil {
				return 0, err
			}
			if _, err := l.Value(); err != nil {
				return 0, err
			}
			if n++; n == 1 {
				first = time.Now()
			}
		}
		return time.Since(first), nil
	}

	var trainerTimes, bareTimes []time.Duration
	var epochFirst, epochLast time.Time
	stepInEpoch := 0
	tr, err := New(acc, model.NewStore(), optimizer.Adam().Done(), Task{Loss: lossFn})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	_, err = tr.Fit(benchLoader(b, rows, batch), nil, Config{
		OutputDir: filepath.Join(b.TempDir(), "run"), Epochs: rounds, LearningRate: 1e-4, Output: io.Discard,
		DisableCheckpoints: true,
		Callbacks: Callbacks{
			OnStep: func(StepEvent) error {
				if stepInEpoch++; stepInEpoch == 1 {
					epochFirst = time.Now()
				}
				epochLast = time.Now()
				return nil
			},
			OnEpochEnd: func(EpochEvent) error {
				trainerTimes = append(trainerTimes, epochLast.Sub(epochFirst))
				stepInEpoch = 0
				d, err := runBare()
				bareTimes = append(bareTimes, d)
				return err
			},
		},
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	var sumTrainer, sumBare time.Duration
	var ratios []float64
	for r := range trainerTimes {
		tSps := float64(steps-1) / trainerTimes[r].Seconds()
		bSps := float64(steps-1) / bareTimes[r].Seconds()
		b.Logf("round %d: trainer %.2f steps/s, bare Job.Step %.2f steps/s, ratio %.3f%s", r, tSps, bSps, tSps/bSps,
			map[bool]string{true: " (warm-up, not counted)"}[r == 0])
		if r > 0 {
			ratios = append(ratios, tSps/bSps)
			sumTrainer += trainerTimes[r]
			sumBare += bareTimes[r]
		}
	}
	if len(trainerTimes) < 2 {
		b.Fatalf("ran %d rounds, need at least 2", len(trainerTimes))
	}
	counted := float64((steps - 1) * (len(trainerTimes) - 1))
	ratio := sumBare.Seconds() / sumTrainer.Seconds()
	b.ReportMetric(counted/sumTrainer.Seconds(), "trainer_steps/s")
	b.ReportMetric(counted/sumBare.Seconds(), "bare_steps/s")
	slices.Sort(ratios)
	median := (ratios[(len(ratios)-1)/2] + ratios[len(ratios)/2]) / 2
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(median, "median_round_ratio")
	b.Logf("trainer/bare throughput ratio over rounds 1..%d: %.3f (median of the rounds %.3f; target >= 0.97)",
		len(trainerTimes)-1, ratio, median)
}
