package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/bytesize"
	"github.com/goaccel/goaccel/internal/flagsuggest"
	"github.com/goaccel/goaccel/models/auto"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	flag "github.com/spf13/pflag"
)

// estimateOptions are the flags of `goaccel estimate`.
type estimateOptions struct {
	batchSize, seqLen, devices, numLabels  int
	imageSize                              int
	sharding, mixedPrecision, deviceMemory string
}

// estimateCmd prints the memory plan of a classifier's training step (Adam) for a model folder
// of any family models/auto loads (config.json's model_type), compiled on XLA's CPU plugin
// without running: the same plan TrainStep.Run prints.
func estimateCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("goaccel estimate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o estimateOptions
	fs.IntVar(&o.batchSize, "batch_size", 32, "per-device batch")
	fs.IntVar(&o.seqLen, "seq_len", auto.DefaultMaxLen, "tokens per example, special tokens included")
	fs.IntVar(&o.imageSize, "image_size", 0, "an image family's image side in pixels (0: config.json's image_size)")
	fs.IntVar(&o.devices, "devices", 1, "XLA CPU devices the batch is sharded over (and the state, with --sharding)")
	fs.IntVar(&o.numLabels, "num_labels", 0, "classes of the fresh classification head (0: the config's)")
	fs.StringVar(&o.sharding, "sharding", "no", `"no", "zero1" (optimizer state sharded over the devices), "zero2" (and gradients), "zero3" (and weights)`)
	fs.StringVar(&o.mixedPrecision, "mixed_precision", "no", `"no" (fp32), "bf16" or "fp16" activations`)
	fs.StringVar(&o.deviceMemory, "device_memory", "", `a budget per device to check the plan against ("2GiB"; default $GOACCEL_DEVICE_MEMORY)`)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: goaccel estimate [flags] MODEL_DIR\n\n"+
			"Prints the memory plan per device of a training step (Adam) of the classifier in MODEL_DIR\n"+
			"(a Hugging Face folder with config.json, or a Hub id in the local cache; model_type %s):\n"+
			"weights, gradients, optimizer state and the compiled step's temporaries, from XLA's compiled\n"+
			"memory statistics. Nothing is trained or loaded but the config.\n\n"+
			"Exit status: 0 the plan fits the budget (or there is none), 1 an error, 2 a usage error,\n"+
			"%d the plan does not fit --device_memory ($GOACCEL_DEVICE_MEMORY): the largest part and the ways out go to stderr.\n\n",
			strings.Join(auto.Families(), ", "), exitDoesNotFit)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "goaccel estimate: %v\n", suggestFlag(fs, err))
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	plan, family, input, params, err := estimate(fs.Arg(0), o)
	if err != nil {
		fmt.Fprintln(stderr, "goaccel estimate:", err)
		return 1
	}
	precision := o.mixedPrecision
	if precision == "no" {
		precision = "fp32"
	}
	fmt.Fprintf(stdout, "goaccel estimate: %s: %s classifier, %d parameters; per-device batch %d x %s on %d device(s), Adam, precision %s\n",
		fs.Arg(0), family, params, o.batchSize, input, o.devices, precision)
	fmt.Fprintf(stdout, "goaccel: %s\n", plan)
	if plan.Budget > 0 {
		verdict := "fits"
		if !plan.Fits() {
			verdict = "does not fit"
		}
		name, _ := plan.Largest()
		fmt.Fprintf(stdout, "goaccel estimate: %s per device %s the budget of %s (largest part: %s)\n",
			bytesize.Format(plan.Total()), verdict, bytesize.Format(plan.Budget), name)
	}
	if err := plan.Check(); err != nil {
		fmt.Fprintf(stderr, "goaccel estimate: %v\ngoaccel estimate: here: --sharding zero1 or zero3 over --devices, or a smaller --batch_size\n", err)
		return exitDoesNotFit
	}
	return 0
}

// exitDoesNotFit is the exit status of `goaccel estimate` when the plan does not fit the
// budget, apart from 1 (an error) and 2 (a usage error), so that a script can gate on it.
const exitDoesNotFit = 3

// suggestFlag adds the nearest known flag to pflag's unknown-flag error.
func suggestFlag(fs *flag.FlagSet, err error) error {
	given, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	if best := flagsuggest.Nearest(fs, given); best != "" {
		return fmt.Errorf("unknown flag --%s (did you mean --%s?)", given, best)
	}
	return fmt.Errorf("unknown flag --%s (see goaccel estimate --help)", given)
}

// estimate compiles the classifier's training step for a synthetic batch and returns its
// plan, the model's family (config.json's model_type, of any family models/auto loads), its
// input per example ("seq_len 128", or an image family's "224x224 images") and its
// parameter count.
func estimate(dir string, o estimateOptions) (accelerator.MemoryPlan, string, string, int, error) {
	var zero accelerator.MemoryPlan
	if err := o.check(); err != nil {
		return zero, "", "", 0, err
	}
	cfg, path, err := auto.ReadConfig(dir)
	if err != nil {
		return zero, "", "", 0, err
	}
	size := o.seqLen
	if cfg.Facts().Image != nil {
		size = o.imageSize // 0: the config's
	}
	blank, err := auto.BlankOf(cfg, o.numLabels, size, path)
	if err != nil {
		return zero, "", "", 0, err
	}
	e, err := newEstimateJob(blank, o)
	if err != nil {
		return zero, "", "", 0, err
	}
	defer e.acc.Close()
	plan, err := e.train.MemoryPlan(e.batch)
	if err != nil {
		return zero, "", "", 0, err
	}
	if o.sharding != "no" {
		if plan, err = plan.WithSharding(o.sharding, o.devices); err != nil {
			return zero, "", "", 0, fmt.Errorf("--sharding: %w", err)
		}
	}
	input := fmt.Sprintf("seq_len %d", blank.Size)
	if blank.Facts.Image != nil {
		input = fmt.Sprintf("%dx%d images", blank.Size, blank.Size)
	}
	return plan, blank.Family, input, e.params, nil
}

// check refuses the shapes that no step has.
func (o estimateOptions) check() error {
	if o.batchSize < 1 || o.seqLen < 2 || o.devices < 1 || o.numLabels < 0 || o.imageSize < 0 {
		return fmt.Errorf("--batch_size %d, --seq_len %d, --devices %d, --num_labels %d, --image_size %d: want >= 1, >= 2, >= 1, >= 0 and >= 0",
			o.batchSize, o.seqLen, o.devices, o.numLabels, o.imageSize)
	}
	return nil
}

// estimateJob is a classifier's training step, prepared on XLA's CPU plugin with a synthetic
// global batch to compile it for.
type estimateJob struct {
	acc    *accelerator.Accelerator
	train  *accelerator.TrainStep
	batch  *data.GlobalBatch
	params int
}

// newEstimateJob prepares blank's classifier with Adam for o's shapes; the caller closes acc.
func newEstimateJob(blank *auto.Blank, o estimateOptions) (*estimateJob, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	var budget int64
	if o.deviceMemory != "" {
		var err error
		if budget, err = bytesize.Parse(o.deviceMemory); err != nil {
			return nil, fmt.Errorf("--device_memory: %w", err)
		}
	}
	acc, err := accelerator.New(accelerator.Config{Backend: "xla:cpu", Devices: o.devices, Quiet: true,
		MixedPrecision: o.mixedPrecision, DeviceMemory: budget})
	if err != nil {
		return nil, accelerator.NameFlags(err, map[string]string{"Devices": "--devices", "MixedPrecision": "--mixed_precision"})
	}
	job, err := acc.Prepare(blank.Classifier, optimizer.Adam().Done(), nil)
	if err != nil {
		acc.Close()
		return nil, err
	}
	train := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *Node {
		l := accelerator.CrossEntropy(blank.Logits(s, b.Inputs), b.Labels, b.Mask)
		acc.Backward(s, l)
		return l
	})
	batch := syntheticBatch(o.devices, o.batchSize, o.seqLen, blank.Inputs)
	if img := blank.Facts.Image; img != nil {
		batch = syntheticImages(o.devices, o.batchSize, blank.Size, img.Channels)
	}
	return &estimateJob{acc: acc, train: train, batch: batch, params: blank.Classifier.NumParameters()}, nil
}

// syntheticImages is a global batch of an image classifier's input (pixels, [b, side, side,
// channels] float32, zeros) and labels for devices devices, every slot real.
func syntheticImages(devices, b, side, channels int) *data.GlobalBatch {
	gb := syntheticBatch(devices, b, 1, 0)
	for _, sh := range gb.Shards {
		sh.Inputs = []*tensors.Tensor{tensors.FromFlatDataAndDimensions(make([]float32, b*side*side*channels), b, side, side, channels)}
	}
	return gb
}

// syntheticBatch is a global batch of a text classifier's inputs (token ids, attention mask
// and, with 3 inputs, token types; all [b, seqLen] int32) and labels for devices devices,
// every slot real.
func syntheticBatch(devices, b, seqLen, inputs int) *data.GlobalBatch {
	gb := &data.GlobalBatch{}
	for range devices {
		sh := &data.Batch{Real: make([]bool, b), Indices: make([]int, b), Positions: make([]int, b)}
		ones := make([]int32, b*seqLen)
		for i := range ones {
			ones[i] = 1
		}
		for i := range b {
			sh.Real[i], sh.Indices[i], sh.Positions[i] = true, i, i
		}
		sh.Inputs = []*tensors.Tensor{
			tensors.FromFlatDataAndDimensions(make([]int32, b*seqLen), b, seqLen),
			tensors.FromFlatDataAndDimensions(ones, b, seqLen),
			tensors.FromFlatDataAndDimensions(make([]int32, b*seqLen), b, seqLen),
		}[:inputs]
		sh.Labels = tensors.FromFlatDataAndDimensions(make([]int32, b), b)
		sh.Mask = tensors.FromFlatDataAndDimensions(sh.Real, b)
		gb.Shards = append(gb.Shards, sh)
	}
	return gb
}
