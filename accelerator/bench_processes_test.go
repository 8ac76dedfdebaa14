package accelerator

import (
	"encoding/json"
	"flag"
	"fmt"
	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/testutil"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// BenchmarkProcesses prints, in one run, the MLP benchmark's step rate (512 -> 4 x 1024 -> 10,
// Adam, global batch 256) on 1 process x 2 XLA CPU devices and on 2 processes x 1 device
// (real processes started by goaccel launch's library, MPI between them), the share of the
// 2-process step spent in the gradient all-reduce, and the bandwidth of goaccel's bucketed
// all-reduce against one raw MPI_Allreduce of the same bytes, alternating, in the same ranks,
// and the 2-process rate with gradient accumulation over 4 batches (batches per second; the
// gradients cross processes once per 4 batches):
//
//	go test ./accelerator -run '^$' -bench Processes -benchtime 1x
//
// It prints figures; it asserts nothing about speed.
func BenchmarkProcesses(b *testing.B) {
	testutil.NeedMPI(b)
	steps := *benchSteps
	single := func() benchFigures {
		a, err := New(Config{Backend: cpuPlugin(b), Devices: 2, Quiet: true, Seed: 7})
		if err != nil {
			b.Fatal(err)
		}
		defer a.Close()
		f, err := benchMLP(a, steps, 1)
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	before := single()
	dir := b.TempDir()
	err, out := launchWorkers(b, "bench", 2, 2, workerOut+"="+dir, "GOACCEL_BENCH_STEPS="+strconv.Itoa(steps))
	if err != nil {
		b.Fatalf("launch: %v\n%s", err, out)
	}
	two := readBench(b, dir, out)
	accDir := b.TempDir()
	err, out = launchWorkers(b, "bench", 2, 2, workerOut+"="+accDir, "GOACCEL_BENCH_STEPS="+strconv.Itoa(steps), "GOACCEL_BENCH_ACCUM=4")
	if err != nil {
		b.Fatalf("launch: %v\n%s", err, out)
	}
	acc4 := readBench(b, accDir, out)
	after := single()
	b.Logf("MLP 512->4x1024->10, Adam, global batch 256, %d timed batches (after 4 warm-up batches)", steps)
	b.Logf("  1 process  x 2 devices: %6.2f steps/s (before) %6.2f steps/s (after)", before.StepsPerSec, after.StepsPerSec)
	b.Logf("  2 processes x 1 device: %6.2f steps/s; gradient all-reduce %.1f%% of the step (%.1f MB per step)",
		two.StepsPerSec, 100*two.SyncShare, float64(two.SyncBytes)/1e6)
	b.Logf("  all-reduce of those %.1f MB, median of %d alternating rounds: goaccel bucketed %.2f GB/s, raw MPI_Allreduce %.2f GB/s: %.0f%%",
		float64(two.SyncBytes)/1e6, len(two.Fused), median(two.Fused), median(two.Raw), 100*median(two.Fused)/median(two.Raw))
	b.Logf("  2 processes x 1 device, gradient accumulation 4: %6.2f batches/s; all-reduces %.1f%% of the time (%.1f MB per 4 batches)",
		acc4.StepsPerSec, 100*acc4.SyncShare, float64(acc4.SyncBytes)/1e6)
	fmt.Printf("processes: 1x2 %.2f/%.2f steps/s, 2x1 %.2f steps/s, sync share %.3f, bucketed/raw all-reduce %.3f; "+
		"2x1 accumulation 4 %.2f batches/s, sync share %.3f\n",
		before.StepsPerSec, after.StepsPerSec, two.StepsPerSec, two.SyncShare, median(two.Fused)/median(two.Raw),
		acc4.StepsPerSec, acc4.SyncShare)
}

// readBench reads the figures a 2-process bench run wrote in dir.
func readBench(b *testing.B, dir, out string) benchFigures {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "bench.json"))
	if err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	var f benchFigures
	if err := json.Unmarshal(raw, &f); err != nil {
		b.Fatal(err)
	}
	return f
}

var benchSteps = flag.Int("bench.steps", 20, "BenchmarkProcesses: timed steps per layout")

// benchFigures is what one layout measured.
type benchFigures struct {
	StepsPerSec, SyncShare float64
	SyncBytes              int64
	Fused, Raw             []float64 // GB/s per round (2-process worker only)
}

// benchMLP times steps batches of the benchmark MLP at global batch 256 on a, with gradient
// accumulation over accum batches (steps is rounded up to a multiple of accum).
func benchMLP(a *Accelerator, steps, accum int) (benchFigures, error) {
	steps = (steps + accum - 1) / accum * accum
	job, err := a.Prepare(model.NewStore(), optimizer.Adam().LearningRate(1e-4).Done(), nil, WithGradientAccumulation(accum))
	if err != nil {
		return benchFigures{}, err
	}
	train := job.TrainStep(func(s *model.Scope, b GraphBatch) *Node {
		x := b.Inputs[0]
		for i := range 4 {
			x = activation.Relu(layers.Dense(s.In("hidden_%d", i), x, true, 1024))
		}
		l := CrossEntropy(layers.Dense(s.In("out"), x, true, 10), b.Labels, b.Mask)
		a.Backward(s, l)
		return l
	})
	per := 256 / a.NumReplicas()
	rng := rand.New(rand.NewPCG(uint64(a.ProcessIndex()), 2))
	batch := func() *data.GlobalBatch {
		gb := &data.GlobalBatch{}
		for range a.NumDevices() {
			gb.Shards = append(gb.Shards, randomShard(rng, per, 512))
		}
		return gb
	}
	run := func(n int) (time.Duration, error) {
		start := time.Now()
		for range n {
			l, err := train.Run(batch())
			if err != nil {
				return 0, err
			}
			if _, err := l.Value(); err != nil {
				return 0, err
			}
		}
		return time.Since(start), nil
	}
	if _, err := run(4); err != nil {
		return benchFigures{}, err
	}
	warm := train.Stats()
	d, err := run(steps)
	if err != nil {
		return benchFigures{}, err
	}
	st := train.Stats()
	f := benchFigures{StepsPerSec: float64(steps) / d.Seconds(), SyncBytes: st.SyncBytes}
	if a.NumProcesses() > 1 {
		f.SyncShare = (st.Sync - warm.Sync).Seconds() / d.Seconds()
	}
	return f, nil
}

// benchWorker is a rank of BenchmarkProcesses' 2-process layout.
func benchWorker(a *Accelerator) error {
	steps, _ := strconv.Atoi(os.Getenv("GOACCEL_BENCH_STEPS"))
	accum, _ := strconv.Atoi(os.Getenv("GOACCEL_BENCH_ACCUM"))
	f, err := benchMLP(a, max(steps, 1), max(accum, 1))
	if err != nil {
		return err
	}
	if accum > 1 || os.Getenv(benchStepOnly) != "" { // the accumulation run: no all-reduce bandwidth rounds
		return writeBench(a, f)
	}
	g, ok := a.grp.(*collective.MPI)
	if !ok {
		return fmt.Errorf("the bench worker is not in an MPI group")
	}
	// The same bytes as the MLP's gradients: one buffer per variable, as the step passes them.
	sizes := []int{512 * 1024, 1024, 1024 * 1024, 1024, 1024 * 1024, 1024, 1024 * 1024, 1024, 1024 * 10, 10}
	bufs := make([][]float32, len(sizes))
	var flat []float32
	for i, n := range sizes {
		bufs[i] = make([]float32, n)
		flat = append(flat, bufs[i]...)
	}
	bytes := float64(4 * len(flat))
	for range 9 {
		start := time.Now()
		if err := g.AllreduceSum(bufs); err != nil {
			return err
		}
		f.Fused = append(f.Fused, bytes/time.Since(start).Seconds()/1e9)
		start = time.Now()
		if err := g.Comm().AllreduceRaw(flat); err != nil {
			return err
		}
		f.Raw = append(f.Raw, bytes/time.Since(start).Seconds()/1e9)
	}
	return writeBench(a, f)
}

// writeBench writes a 2-process bench run's figures (rank 0's) as bench.json in $GOACCEL_TEST_OUT.
func writeBench(a *Accelerator, f benchFigures) error {
	if !a.IsMainProcess() {
		return nil
	}
	out, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(os.Getenv(workerOut), "bench.json"), out, 0o644)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// randomShard is a benchmark's shard of per examples: inputs [per, width] uniform in
// [-0.5, 0.5), labels among 10 classes, every example real.
func randomShard(rng *rand.Rand, per, width int) *data.Batch {
	x, y := make([]float32, per*width), make([]int32, per)
	for i := range x {
		x[i] = rng.Float32() - 0.5
	}
	for i := range y {
		y[i] = int32(rng.IntN(10))
	}
	real := slices.Repeat([]bool{true}, per)
	return &data.Batch{
		Inputs: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(x, per, width)},
		Labels: tensors.FromValue(y), Mask: tensors.FromValue(real), Real: real,
		Indices: make([]int, per), Positions: make([]int, per)}
}
