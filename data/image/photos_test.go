package image_test

import (
	"bytes"
	"fmt"
	"image/jpeg"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/data/image"
)

// TestPhotosAgainstPillow measures, on a folder of JPEG photos each with the RGB bytes Pillow
// decoded from it (NAME.jpg.rgb), the per-channel difference of Decoder from Pillow and the
// decoding time on one thread: the figures of docs/images.md. It runs only when
// GOACCEL_IMAGE_PHOTOS names that folder (the photos are not committed).
func TestPhotosAgainstPillow(t *testing.T) {
	dir := os.Getenv("GOACCEL_IMAGE_PHOTOS")
	if dir == "" {
		t.Skip("GOACCEL_IMAGE_PHOTOS is not set: no photos to measure")
	}
	runtime.GOMAXPROCS(1)
	files, _ := filepath.Glob(filepath.Join(dir, "*.jpg"))
	sort.Strings(files)
	var b strings.Builder
	fmt.Fprintln(&b, "| photo | size | max abs diff R G B | mean abs diff R G B | image/jpeg.Decode ms | Decoder.Decode ms |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|")
	for _, f := range files {
		want, err := os.ReadFile(f + ".rgb")
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := image.Decoder{}.Decode(f, data)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Pix) != len(want) {
			t.Fatalf("%s: %d bytes, Pillow %d", f, len(m.Pix), len(want))
		}
		var mx [3]int
		var sum [3]float64
		for i := range want {
			d := int(m.Pix[i]) - int(want[i])
			if d < 0 {
				d = -d
			}
			mx[i%3] = max(mx[i%3], d)
			sum[i%3] += float64(d)
		}
		n := float64(len(want) / 3)
		raw := bestOf(func() error { _, err := jpeg.Decode(bytes.NewReader(data)); return err })
		full := bestOf(func() error { _, err := (image.Decoder{}).Decode(f, data); return err })
		fmt.Fprintf(&b, "| %s | %dx%d | %d %d %d | %.3f %.3f %.3f | %.2f | %.2f |\n", filepath.Base(f), m.Width, m.Height,
			mx[0], mx[1], mx[2], sum[0]/n, sum[1]/n, sum[2]/n, ms(raw), ms(full))
	}
	t.Log("\n" + b.String())
}

// bestOf is the best of 3 mean times of 10 calls.
func bestOf(f func() error) time.Duration {
	best := time.Duration(1 << 62)
	for range 3 {
		start := time.Now()
		for range 10 {
			if err := f(); err != nil {
				panic(err)
			}
		}
		best = min(best, time.Since(start)/10)
	}
	return best
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
