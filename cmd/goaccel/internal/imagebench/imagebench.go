// Package imagebench measures goaccel's image input pipeline alone: images per second decoded,
// augmented, normalised and collated into NHWC float32 batches by data.Loader's workers, on
// CIFAR's Python batches, on folders of 32x32 PNGs and on folders of JPEG photos, and decoding
// alone. Its test (TestPipelineFigures) prints the figures beside torchvision's DataLoader on the
// same files (pipeline_torch.py); docs/images.md records them.
package imagebench

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/image"
	"github.com/goaccel/goaccel/data/image/transforms"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
)

// Kinds of input the benchmark reads, below its data folder (make_bench_data.py writes them).
const (
	CIFAR = "cifar" // cifar-10-batches-py: RandomCrop(32, 4) + flip + normalise
	PNG32 = "png32" // png32/<class>/*.png: the same pipeline
	JPEG  = "jpeg"  // jpeg/<class>/*.jpg: RandomResizedCrop(224) + flip + normalise
	// JPEGCenter is jpeg/ through CenterCrop(224) + flip + normalise: no resampling, so
	// the rest of the pipeline is decoding.
	JPEGCenter = "jpeg-center"
)

// Result is one measurement: wall time, and the CPU time of the process (user + system, all
// its threads), which a machine shared with other jobs disturbs less.
type Result struct {
	What    string
	Images  int
	Seconds float64
	CPU     float64
}

// PerSecond is images per second of wall time.
func (r Result) PerSecond() float64 { return float64(r.Images) / r.Seconds }

func (r Result) String() string {
	return fmt.Sprintf("%s: %d images in %.2f s = %.0f images/s, %.0f images per CPU-second", r.What, r.Images, r.Seconds,
		r.PerSecond(), float64(r.Images)/r.CPU)
}

// cpuSeconds is the process's CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// mean and std are ImageNet's (the JPEG recipe) and CIFAR-10's.
var (
	imagenet = transforms.Normalize{Mean: [3]float32{0.485, 0.456, 0.406}, Std: [3]float32{0.229, 0.224, 0.225}}
	cifar    = transforms.Normalize{Mean: [3]float32{0.4914, 0.4822, 0.4465}, Std: [3]float32{0.2470, 0.2435, 0.2616}}
)

// dataset opens kind below dir, with the pipeline's augmentation and normalisation.
func dataset(kind, dir string) (data.Dataset[image.Example], transforms.Transform, transforms.Normalize, error) {
	small := transforms.Compose{transforms.RandomCrop{Size: 32, Padding: 4}, transforms.RandomHorizontalFlip{P: 0.5}}
	switch kind {
	case CIFAR:
		c, err := image.LoadCIFAR(dir, true)
		return c, small, cifar, err
	case PNG32:
		f, err := image.OpenFolder(filepath.Join(dir, "png32"), image.FolderOptions{})
		return f, small, cifar, err
	case JPEG, JPEGCenter:
		f, err := image.OpenFolder(filepath.Join(dir, "jpeg"), image.FolderOptions{})
		var crop transforms.Transform = transforms.RandomResizedCrop{Size: 224}
		if kind == JPEGCenter {
			crop = transforms.CenterCrop{Size: 224}
		}
		return f, transforms.Compose{crop, transforms.RandomHorizontalFlip{P: 0.5}}, imagenet, err
	}
	return nil, nil, transforms.Normalize{}, fmt.Errorf("imagebench: kind %q: want %s, %s, %s or %s", kind, CIFAR, PNG32, JPEG, JPEGCenter)
}

// Pipeline runs one shuffled epoch of kind below dir through a data.Loader with workers
// goroutines and batches of batch, and times it from the first batch to the last (the
// first batch's images not counted, so the figure is the steady rate, as for torch).
func Pipeline(kind, dir string, workers, batch int) (Result, error) {
	ds, aug, norm, err := dataset(kind, dir)
	if err != nil {
		return Result{}, err
	}
	l, err := data.NewLoader[image.Example](ds, data.LoaderConfig[image.Example]{
		BatchSize: batch, Shuffle: true, Seed: 1, DropLast: true, Workers: workers,
		Augment: func(ex image.Example, key data.ExampleKey) (image.Example, error) {
			m, err := aug.Apply(ex.Image, key.Rand())
			ex.Image = m
			return ex, err
		},
		Collate: func(ex []image.Example) ([]*tensors.Tensor, *tensors.Tensor, error) { return Collate(ex, norm) },
	})
	if err != nil {
		return Result{}, err
	}
	var start time.Time
	var cpu float64
	n, first := 0, true
	for gb, err := range l.Epoch() {
		if err != nil {
			return Result{}, err
		}
		if first {
			start, cpu, first = time.Now(), cpuSeconds(), false
			continue
		}
		for _, b := range gb.Shards {
			n += b.Size()
		}
	}
	return Result{What: fmt.Sprintf("goaccel %s, %d workers", kind, workers), Images: n, Seconds: time.Since(start).Seconds(),
		CPU: cpuSeconds() - cpu}, nil
}

// Collate normalises the images of a batch (all of one size) straight into the float32
// tensor [N, H, W, 3] that the loader hands out, so the batch is written once, and makes the
// int32 labels.
func Collate(ex []image.Example, norm transforms.Normalize) ([]*tensors.Tensor, *tensors.Tensor, error) {
	w, h := ex[0].Image.Width, ex[0].Image.Height
	size := w * h * 3
	t := tensors.FromShape(shapes.Make(dtypes.Float32, len(ex), h, w, 3))
	labels := make([]int32, len(ex))
	var err error
	merr := tensors.MutableFlatData(t, func(flat []float32) {
		for i, e := range ex {
			if e.Image.Width != w || e.Image.Height != h {
				err = fmt.Errorf("imagebench: %s: %dx%d, the batch's first is %dx%d", e.Source, e.Image.Width, e.Image.Height, w, h)
				return
			}
			if _, err = norm.Floats(flat[i*size:i*size:(i+1)*size], e.Image); err != nil {
				return
			}
			labels[i] = int32(e.Label)
		}
	})
	if err == nil {
		err = merr
	}
	if err != nil {
		return nil, nil, err
	}
	return []*tensors.Tensor{t}, tensors.FromValue(labels), nil
}

// DecodeOnly decodes every file of kind's folder below dir (read and decode, nothing else) on
// workers goroutines: the decoder's share of Pipeline's time.
func DecodeOnly(kind, dir string, workers int) (Result, error) {
	if kind == JPEGCenter {
		kind = JPEG
	}
	var files []string
	err := filepath.Walk(filepath.Join(dir, kind), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return Result{}, err
	}
	sort.Strings(files)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	start, cpu := time.Now(), cpuSeconds()
	for w := range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(files) {
					return
				}
				if _, err := image.Load(files[i]); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return Result{}, err
		}
	}
	return Result{What: fmt.Sprintf("goaccel %s decode only, %d goroutines", kind, workers), Images: len(files), Seconds: time.Since(start).Seconds(),
		CPU: cpuSeconds() - cpu}, nil
}
