// Command cifar10 is the PyTorch DDP tutorial's program in Go: a ResNet-18 for 32x32 images
// trained on CIFAR-10 with the tutorial's recipe, data-parallel over every device goaccel
// finds (and every process under goaccel launch). The dataset is torchvision's CIFAR10 read
// without Python (the Python batches or the binary ones, --data_dir), behind the
// DistributedSampler that the loader holds (the epoch advances by itself); the training
// images get RandomCrop(32, padding=4) and RandomHorizontalFlip, each example's draws keyed
// by (seed, epoch, index) so that the run is the same on any topology; Normalize with
// CIFAR-10's mean and std; SGD with momentum 0.9 and weight decay 5e-4 on a cosine schedule;
// BatchNorm over the whole global batch of a process (models/nn); train() and test() are
// trainer.Fit's, with rank-0 printing and checkpoints, exact gathered accuracy, and resume.
//
//	go run ./examples/cifar10                                   # a built-in synthetic set, a narrow ResNet-18
//	go run ./examples/cifar10 --data_dir ~/data/cifar-10-batches-py --epochs 30
//	go tool goaccel launch --nproc_per_node 2 ./cifar10 --data_dir ...   # two processes
//
// scripts/cifar10_torch.py is the same program in PyTorch, for side-by-side figures.
package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/image"
	"github.com/goaccel/goaccel/data/image/transforms"
	_ "github.com/goaccel/goaccel/hostmalloc" // GOACCEL_HOST_MALLOC=keep: glibc keeps XLA's freed memory for reuse
	"github.com/goaccel/goaccel/models/nn"
	"github.com/goaccel/goaccel/optim"
	"github.com/goaccel/goaccel/trainer"
	"github.com/goaccel/goaccel/trainer/args"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	flag "github.com/spf13/pflag"
)

// options are the program's flags: the shared training flags (trainer/args) and its own.
type options struct {
	args.Training
	DataDir  string
	Width    int     // channels of the first stage (64: ResNet-18); 0: 64 with --data_dir, 8 on the built-in set
	Momentum float64 // SGD's
	Augment  bool
	Shuffle  bool   // a new order of the training set every epoch
	SaveInit string // a safetensors file for the initial weights, under torch's names
	Float64  bool   // weights, activations and statistics in float64
}

func defaultOptions() options {
	o := options{Training: args.Defaults(), Momentum: 0.9, Augment: true, Shuffle: true}
	o.BatchSize, o.LearningRate, o.WeightDecay, o.Schedule, o.Epochs = 128, 0.1, 5e-4, "cosine", 5
	return o
}

func newFlagSet(o *options) *flag.FlagSet {
	fs := args.NewFlagSet("cifar10", nil)
	o.AddFlags(fs)
	fs.Lookup("learning_rate").Usage = "peak learning rate of SGD (also --lr)"
	fs.Lookup("weight_decay").Usage = "SGD's weight decay (L2, on every parameter, as torch.optim.SGD's weight_decay)"
	fs.Lookup("model_dir").Usage = "not used: the model is a ResNet-18 built here (--width)"
	fs.StringVar(&o.DataDir, "data_dir", "", "CIFAR-10 in either of its formats (cifar-10-batches-py or cifar-10-batches-bin, or the folder above); empty: a built-in synthetic set of 32x32 images")
	fs.IntVar(&o.Width, "width", 0, "channels of the ResNet's first stage, doubled at each of the next three (64: ResNet-18); 0: 64 with --data_dir, 8 on the built-in set")
	fs.Float64Var(&o.Momentum, "momentum", o.Momentum, "SGD's momentum")
	fs.BoolVar(&o.Augment, "augment", o.Augment, "RandomCrop(32, padding=4) and RandomHorizontalFlip on the training images")
	fs.BoolVar(&o.Shuffle, "shuffle", o.Shuffle, "a new order of the training images every epoch (DistributedSampler's shuffle; false: the files' order)")
	fs.StringVar(&o.SaveInit, "save_init", "", "write the initial weights and BatchNorm statistics to this safetensors file, under the "+
		"state_dict names of scripts/cifar10_torch.py's model (its --init), before the first step")
	fs.BoolVar(&o.Float64, "float64", false, "train in float64 (weights, activations, BatchNorm's statistics): slow, for comparing with "+
		"scripts/cifar10_torch.py --double without float32's rounding")
	return fs
}

func main() {
	o := defaultOptions()
	args.Main("cifar10", newFlagSet(&o), &o.Training, nil, func() (int, error) {
		_, code, err := run(o, os.Stdout)
		return code, err
	})
}

// CIFAR-10's per-channel mean and standard deviation of the training images (the values the
// tutorials normalise with).
var cifarNorm = transforms.Normalize{Mean: [3]float32{0.4914, 0.4822, 0.4465}, Std: [3]float32{0.2470, 0.2435, 0.2616}}

// run is the whole program: setup, data and sampler, model, optimizer, then Fit's epochs of
// train() and test(), and the best accuracy.
func run(o options, out io.Writer) (*trainer.Result, int, error) {
	if err := o.Check(); err != nil {
		return nil, 0, err
	}
	switch {
	case o.Width < 0:
		return nil, 0, fmt.Errorf("--width %d: want a positive number of channels (0: the default)", o.Width)
	case o.Momentum < 0:
		return nil, 0, fmt.Errorf("--momentum %g: want >= 0", o.Momentum)
	case o.UsePEFT:
		return nil, 0, fmt.Errorf("--use_peft: the ResNet here has no LoRA targets (it trains every weight)")
	case o.Float64 && o.MixedPrecision != "" && o.MixedPrecision != "no":
		return nil, 0, fmt.Errorf("--float64 with --mixed_precision %s: choose one", o.MixedPrecision)
	case o.ModelDir != "":
		return nil, 0, fmt.Errorf("--model_dir %s: this program builds its ResNet-18 itself (--width)", o.ModelDir)
	}
	if o.SaveInit != "" {
		if st, err := os.Stat(filepath.Dir(o.SaveInit)); err != nil || !st.IsDir() {
			return nil, 0, fmt.Errorf("--save_init %s: its folder %s does not exist", o.SaveInit, filepath.Dir(o.SaveInit))
		}
	}
	train, test, classes, err := loadData(o.DataDir, o.Seed)
	if err != nil {
		return nil, 0, err
	}
	width := o.Width
	if width == 0 {
		width = 64
		if o.DataDir == "" {
			width = 8
		}
	}
	loggers, err := o.Loggers()
	if err != nil {
		return nil, 0, err
	}
	acc, err := o.NewAccelerator(out)
	if err != nil {
		return nil, 0, err
	}
	defer acc.Close()
	dir, err := trainer.ChooseRunDir(acc, o.OutputDir, "cifar10")
	if err != nil {
		return nil, 0, err
	}
	intr := trainer.NotifyInterrupt(os.Stderr)
	defer intr.Stop()

	cfg := data.LoaderConfig[image.Example]{BatchSize: o.BatchSize, GlobalBatchSize: o.GlobalBatchSize, Seed: o.Seed,
		Workers: o.Workers, Collate: collate(o.Float64)}
	testLoader, err := data.NewLoader[image.Example](test, cfg)
	if err != nil {
		return nil, 0, args.NameFlags(err)
	}
	cfg.Shuffle = o.Shuffle
	if o.Augment {
		cfg.Augment = augment
	}
	trainLoader, err := data.NewLoader[image.Example](train, cfg)
	if err != nil {
		return nil, 0, args.NameFlags(err)
	}
	opt, err := optim.SGD(optim.SGDConfig{Momentum: o.Momentum, WeightDecay: o.WeightDecay})
	if err != nil {
		return nil, 0, args.NameFlags(err)
	}
	store := model.NewStore()
	net := resnet18{width: width, classes: len(classes)}
	task := trainer.SingleLabelClassificationOfBatch(len(classes), func(s *model.Scope, b accelerator.GraphBatch) *Node {
		return net.logits(s, b.Inputs[0], b.Mask) // BatchNorm's statistics leave out the padding
	})
	tr, err := trainer.New(acc, store, opt, task)
	if err != nil {
		return nil, 0, err
	}
	acc.Printf("ResNet-18 (width %d), %d classes; training on %d images, testing on %d", width, len(classes), train.Len(), test.Len())
	fit := o.Fit(dir, o.LearningRate, "accuracy", trainer.Config{Output: out, Interrupt: intr, Loggers: loggers,
		Extra: map[string]any{"data_dir": o.DataDir, "width": width, "momentum": o.Momentum, "augment": o.Augment, "shuffle": o.Shuffle}})
	if o.SaveInit != "" {
		fit.Callbacks.OnTrainBegin = func(ev trainer.TrainBeginEvent) error {
			if ev.Step != 0 {
				return fmt.Errorf("--save_init %s: the run resumes at step %d; the initial weights are a new run's (use another --output_dir)",
					o.SaveInit, ev.Step)
			}
			if !acc.IsMainProcess() {
				return nil
			}
			if err := exportTorch(o.SaveInit, store); err != nil {
				return fmt.Errorf("--save_init %s: %w", o.SaveInit, err)
			}
			return nil
		}
	}
	res, err := tr.Fit(trainLoader, testLoader, fit)
	if err != nil {
		return nil, 0, args.NameFlags(err)
	}
	if res.Interrupted {
		return res, intr.ExitCode(), nil
	}
	acc.Printf("best test accuracy %.4f (step %d of %d)", res.Best, res.BestStep, res.Steps)
	return res, 0, acc.WaitForEveryone()
}

// trainAugment is the tutorials' augmentation of CIFAR-10's training images.
var trainAugment = transforms.Compose{transforms.RandomCrop{Size: 32, Padding: 4}, transforms.RandomHorizontalFlip{P: 0.5}}

// augment draws an example's crop and flip from its key: the same on every topology.
func augment(ex image.Example, key data.ExampleKey) (image.Example, error) {
	m, err := trainAugment.Apply(ex.Image, key.Rand())
	if err != nil {
		return ex, fmt.Errorf("%s: %w", ex.Source, err)
	}
	ex.Image = m
	return ex, nil
}

// collate makes a batch: the images normalised ([B, 32, 32, 3], NHWC; float32, or float64
// with f64, the model's dtype following the input's) and the labels.
func collate(f64 bool) func(batch []image.Example) ([]*tensors.Tensor, *tensors.Tensor, error) {
	return func(batch []image.Example) ([]*tensors.Tensor, *tensors.Tensor, error) {
		pix := make([]float32, 0, len(batch)*32*32*3)
		labels := make([]int32, len(batch))
		for i, ex := range batch {
			if ex.Image.Width != 32 || ex.Image.Height != 32 {
				return nil, nil, fmt.Errorf("%s: a %dx%d image, want 32x32", ex.Source, ex.Image.Width, ex.Image.Height)
			}
			var err error
			if pix, err = cifarNorm.Floats(pix, ex.Image); err != nil {
				return nil, nil, err
			}
			labels[i] = int32(ex.Label)
		}
		if !f64 {
			return []*tensors.Tensor{tensors.FromFlatDataAndDimensions(pix, len(batch), 32, 32, 3)}, tensors.FromValue(labels), nil
		}
		wide := make([]float64, len(pix))
		for i, v := range pix {
			wide[i] = float64(v)
		}
		return []*tensors.Tensor{tensors.FromFlatDataAndDimensions(wide, len(batch), 32, 32, 3)}, tensors.FromValue(labels), nil
	}
}

// loadData reads CIFAR-10's train and test splits from dir, or makes the built-in set.
func loadData(dir string, seed int64) (train, test data.Dataset[image.Example], classes []string, err error) {
	if dir == "" {
		train, test, classes = synthetic(1000, seed), synthetic(200, seed+1), syntheticClasses
		return train, test, classes, nil
	}
	tr, err := image.LoadCIFAR(dir, true)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--data_dir: %w", err)
	}
	te, err := image.LoadCIFAR(dir, false)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--data_dir: %w", err)
	}
	return tr, te, tr.Classes, nil
}

// syntheticClasses name the built-in set's 10 classes: a colour and a stripe direction each.
var syntheticClasses = []string{"red-h", "red-v", "green-h", "green-v", "blue-h", "blue-v", "gray-h", "gray-v", "yellow-h", "yellow-v"}

// synthetic is n 32x32 images of the built-in classes: a tinted background with stripes
// (horizontal or vertical, of a random phase and period) and noise, seeded.
func synthetic(n int, seed int64) data.Slice[image.Example] {
	tints := [][3]float64{{200, 60, 60}, {60, 180, 60}, {60, 80, 200}, {128, 128, 128}, {200, 190, 50}}
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	out := make(data.Slice[image.Example], n)
	for i := range out {
		label := rng.IntN(10)
		tint, vertical := tints[label/2], label%2 == 1
		period, phase := 4+rng.IntN(5), rng.IntN(8)
		m := &image.RGB{Width: 32, Height: 32, Pix: make([]uint8, 32*32*3)}
		for y := range 32 {
			for x := range 32 {
				along := y
				if vertical {
					along = x
				}
				stripe := 0.6
				if (along+phase)/period%2 == 0 {
					stripe = 1.2
				}
				for c := range 3 {
					v := tint[c]*stripe + rng.NormFloat64()*20
					m.Pix[(y*32+x)*3+c] = uint8(min(max(v, 0), 255))
				}
			}
		}
		out[i] = image.Example{Image: m, Label: label, Source: fmt.Sprintf("synthetic[%d]", i)}
	}
	return out
}

// resnet18 is ResNet-18 for 32x32 inputs (the CIFAR variant: a 3x3 stem, no max-pool), NHWC:
// the stem, four stages of two basic blocks (width, 2, 4 and 8 times width channels; strides
// 1, 2, 2, 2), global average pooling and a linear classifier. Every convolution is followed
// by nn.BatchNorm and none has a bias, as in torchvision's and the tutorials' ResNets.
type resnet18 struct{ width, classes int }

// logits maps images [B, 32, 32, 3] to logits [B, classes]; mask ([B], the real examples)
// keeps padding out of BatchNorm's statistics in training (in evaluation the running
// statistics normalise and it is not used).
func (r resnet18) logits(s *model.Scope, x, mask *Node) *Node {
	bn := func(s *model.Scope, x *Node) *Node { return nn.BatchNorm(s, x, mask, nn.BatchNormConfig{}) }
	h := activation.Relu(bn(s.In("bn1"), conv(s.In("conv1"), x, r.width, 3, 1)))
	in := r.width
	for stage := range 4 {
		out, layer := r.width<<stage, s.In("layer%d", stage+1)
		for block := range 2 {
			stride := 1
			if stage > 0 && block == 0 {
				stride = 2
			}
			b := layer.In("%d", block)
			y := activation.Relu(bn(b.In("bn1"), conv(b.In("conv1"), h, out, 3, stride)))
			y = bn(b.In("bn2"), conv(b.In("conv2"), y, out, 3, 1))
			shortcut := h
			if stride != 1 || in != out {
				shortcut = bn(b.In("shortcut_bn"), conv(b.In("shortcut"), h, out, 1, stride))
			}
			h, in = activation.Relu(Add(y, shortcut)), out
		}
	}
	// torch.nn.Linear's default initialisation, the weight and the bias uniform in ±1/sqrt(in).
	bound := 1 / math.Sqrt(float64(in))
	fc := s.In("fc").WithInitializer(initializer.RandomUniformFn(s, -bound, bound))
	return layers.Dense(fc, ReduceMean(h, 1, 2), true, r.classes)
}

// conv is torch.nn.Conv2d(in, out, k, stride, padding=k/2, bias=False) on NHWC, with its
// default initialisation (uniform in ±1/sqrt(fan_in)): the padding on both sides, as PyTorch
// pads (XLA's SAME padding pads a stride-2 input at its end only), given to the convolution
// itself (GoMLX v0.28.3 has no gradient for a separate Pad).
func conv(s *model.Scope, x *Node, out, k, stride int) *Node {
	in := x.Shape().Dimensions[3]
	bound := 1 / math.Sqrt(float64(in*k*k))
	kernel := s.WithInitializer(initializer.RandomUniformFn(s, -bound, bound)).
		VariableWithShape("weight", shapes.Make(x.DType(), k, k, in, out)).NodeValue(x.Graph())
	p := k / 2
	return Convolve(x, kernel).Strides(stride).PaddingPerDim([][2]int{{p, p}, {p, p}}).Done()
}
