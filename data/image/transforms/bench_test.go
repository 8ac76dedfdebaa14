package transforms

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/image"
)

// benchPhoto is a 500x375 photo (an ImageNet-sized one): the chelsea crop enlarged.
func benchPhoto(b *testing.B) *image.RGB {
	src := readPNG(b, filepath.Join("testdata", "resize", "chelsea.png"))
	m, err := Resize{Height: 375, Width: 500, Interpolation: Bicubic}.Apply(src, nil)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// cpuTime is this process's user+system CPU time: on the shared machine the rate per CPU
// second is steadier than per wall second (benchmarks run on one goroutine).
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// report adds images/s (wall) and images/cpu-s.
func report(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu.Seconds(), "images/cpu-s")
	}
}

// BenchmarkResize500x375To224: Resize(224) (the shorter edge, so 298x224), bilinear, one image
// per op; scripts/image_transforms_bench.py runs it beside Pillow.
func BenchmarkResize500x375To224(b *testing.B) {
	m := benchPhoto(b)
	z := Resize{Size: 224}
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := z.Apply(m, nil); err != nil {
			b.Fatal(err)
		}
	}
	report(b, cpu0)
}

// BenchmarkRandomResizedCropFlipNormalize: RandomResizedCrop(224) + RandomHorizontalFlip(0.5)
// + ToTensor + Normalize on a 500x375 photo, each image with its own example key, floats
// written into one reused buffer (as a loader's collate would).
func BenchmarkRandomResizedCropFlipNormalize(b *testing.B) {
	m := benchPhoto(b)
	p := Pipeline{
		Transforms: Compose{RandomResizedCrop{Size: 224}, RandomHorizontalFlip{P: 0.5}},
		Normalize:  &Normalize{Mean: imagenetMean, Std: imagenetStd},
	}
	buf := make([]float32, 0, 224*224*3)
	i := 0
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		var err error
		if buf, _, _, err = p.Floats(buf[:0], m, data.ExampleKey{Seed: 1, Index: i}.Rand()); err != nil {
			b.Fatal(err)
		}
		i++
	}
	report(b, cpu0)
}
