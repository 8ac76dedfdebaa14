// Command mlp measures goaccel's per-step overhead: train steps/s of the same MLP with Adam
// prepared by goaccel and run by GoMLX's stock train.Trainer, alternating in one process so
// that both see the same machine load. It prints one JSON object per measurement and a final
// ratio (goaccel / stock; >= 0.95 is the target).
//
//	go run ./cmd/goaccel/internal/bench/mlp --hidden 1024 --batch 256            # CPU
//	./mlp --hidden 4096 --batch 4096 --backend xla:cuda             # GPU
package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	_ "github.com/goaccel/goaccel/hostmalloc" // GOACCEL_HOST_MALLOC=keep: glibc keeps XLA's freed memory for reuse
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/loss"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	flag "github.com/spf13/pflag"
)

var (
	flagBackend = flag.String("backend", "", "backend (see accelerator.Config.Backend); empty: discover")
	flagHidden  = flag.Int("hidden", 1024, "width of the hidden layers")
	flagLayers  = flag.Int("layers", 4, "number of hidden layers")
	flagBatch   = flag.Int("batch", 256, "batch size")
	flagSteps   = flag.Int("steps", 20, "timed steps per round")
	flagRounds  = flag.Int("rounds", 3, "alternating rounds (stock, goaccel, stock, goaccel, ...)")
	flagWarmup  = flag.Int("warmup", 3, "untimed steps (compilation) before the first round")
)

func mlp(s *model.Scope, x *Node) *Node {
	for i := range *flagLayers {
		x = activation.Relu(layers.Dense(s.In("hidden_%d", i), x, true, *flagHidden))
	}
	return layers.Dense(s.In("out"), x, true, 10)
}

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mlp:", err)
		os.Exit(1)
	}
}

func run() error {
	acc, err := accelerator.New(accelerator.Config{Backend: *flagBackend, Devices: 1, Seed: 1})
	if err != nil {
		return err
	}
	backend := acc.Backend()
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, *flagBatch*512)
	for i := range x {
		x[i] = rng.Float32() - 0.5
	}
	y := make([]int32, *flagBatch)
	for i := range y {
		y[i] = int32(rng.IntN(10))
	}
	mask := make([]bool, *flagBatch)
	for i := range mask {
		mask[i] = true
	}
	idx := make([]int, *flagBatch)
	// Both implementations get fresh host tensors every step (the stock trainer takes
	// ownership of its batch and frees it), so both pay the same copy.
	newStep := func() *data.GlobalBatch {
		return &data.GlobalBatch{Shards: []*data.Batch{{
			Inputs: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(x, *flagBatch, 512)},
			Labels: tensors.FromFlatDataAndDimensions(y, *flagBatch), Mask: tensors.FromValue(mask),
			Real: mask, Indices: idx, Positions: idx,
		}}}
	}

	// GoMLX's stock trainer.
	stockStore := model.NewStore()
	stockStore.RootScope().SetParam("initializer_seed", int64(1))
	trainer := train.NewTrainer(backend, stockStore, mlp, loss.SparseCategoricalCrossEntropyLogits,
		optimizer.Adam().LearningRate(1e-4).Done(), nil, nil)
	stockStep := func() (float64, error) {
		m, err := trainer.TrainStep(train.Batch{Inputs: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(x, *flagBatch, 512)},
			Labels: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(y, *flagBatch, 1)}})
		if err != nil {
			return 0, err
		}
		return float64(m[0].Value().(float32)), nil
	}

	// The same model prepared by goaccel.
	job, err := acc.Prepare(model.NewStore(), optimizer.Adam().LearningRate(1e-4).Done(), nil)
	if err != nil {
		return err
	}
	trainStep := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *Node {
		l := accelerator.CrossEntropy(mlp(s, b.Inputs[0]), b.Labels, b.Mask)
		acc.Backward(s, l)
		return l
	})
	accelStep := func() (float64, error) {
		l, err := trainStep.Run(newStep())
		if err != nil {
			return 0, err
		}
		return l.Value()
	}

	for range *flagWarmup {
		if _, err := stockStep(); err != nil {
			return fmt.Errorf("stock trainer: %w", err)
		}
		if _, err := accelStep(); err != nil {
			return fmt.Errorf("goaccel: %w", err)
		}
	}
	timeIt := func(fn func() (float64, error)) (float64, float64, error) {
		start := time.Now()
		var last float64
		for range *flagSteps {
			l, err := fn()
			if err != nil {
				return 0, 0, err
			}
			last = l
		}
		return float64(*flagSteps) / time.Since(start).Seconds(), last, nil
	}
	var stockTotal, accelTotal float64
	for round := range *flagRounds {
		for _, impl := range []string{"gomlx-trainer", "goaccel"} {
			fn := stockStep
			if impl == "goaccel" {
				fn = accelStep
			}
			sps, last, err := timeIt(fn)
			if err != nil {
				return fmt.Errorf("%s: %w", impl, err)
			}
			if impl == "goaccel" {
				accelTotal += sps
			} else {
				stockTotal += sps
			}
			out, _ := json.Marshal(map[string]any{"impl": impl, "round": round, "work": "mlp",
				"shape":   map[string]int{"batch": *flagBatch, "hidden": *flagHidden, "layers": *flagLayers},
				"backend": acc.Info().Backend, "steps_per_s": round3(sps), "examples_per_s": round3(sps * float64(*flagBatch)),
				"last_loss": round3(last)})
			fmt.Println(string(out))
		}
	}
	out, _ := json.Marshal(map[string]any{"ratio_goaccel_over_stock": round3(accelTotal / stockTotal),
		"goaccel_steps_per_s": round3(accelTotal / float64(*flagRounds)), "stock_steps_per_s": round3(stockTotal / float64(*flagRounds))})
	fmt.Println(string(out))
	return nil
}

func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }
