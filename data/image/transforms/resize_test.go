package transforms

import (
	"encoding/json"
	"fmt"
	goimage "image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data/image"
)

// readPNG reads an 8-bit RGB PNG (as Pillow writes an RGB image) into image.RGB.
func readPNG(t testing.TB, path string) *image.RGB {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b := m.Bounds()
	out := &image.RGB{Width: b.Dx(), Height: b.Dy(), Pix: make([]uint8, 0, b.Dx()*b.Dy()*3)}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c, ok := m.At(x, y).(interface{ RGBA() (r, g, b, a uint32) })
			if !ok {
				t.Fatalf("%s: pixel type %T", path, m.At(x, y))
			}
			r, g, bl, _ := c.RGBA()
			out.Pix = append(out.Pix, uint8(r>>8), uint8(g>>8), uint8(bl>>8))
		}
	}
	if _, ok := m.(*goimage.RGBA); !ok {
		if _, ok := m.(*goimage.NRGBA); !ok {
			t.Fatalf("%s: decoded as %T, want an opaque RGB PNG", path, m)
		}
	}
	return out
}

// diff is the largest and the mean absolute difference per channel of two images of one size.
type diff struct {
	max  [3]int
	mean [3]float64
}

func compare(a, b *image.RGB) diff {
	var d diff
	var sum [3]int
	for i := range a.Pix {
		v := int(a.Pix[i]) - int(b.Pix[i])
		if v < 0 {
			v = -v
		}
		c := i % 3
		d.max[c] = max(d.max[c], v)
		sum[c] += v
	}
	n := float64(len(a.Pix) / 3)
	for c := range 3 {
		d.mean[c] = float64(sum[c]) / n
	}
	return d
}

func (d diff) String() string {
	return fmt.Sprintf("max %d %d %d, mean %.4f %.4f %.4f", d.max[0], d.max[1], d.max[2], d.mean[0], d.mean[1], d.mean[2])
}

var filterNames = map[string]Interpolation{
	"nearest": Nearest, "bilinear": Bilinear, "bicubic": Bicubic, "lanczos": Lanczos, "box": Box, "hamming": Hamming,
}

// TestResizeEqualsPillow: Resize with each filter, shrinking (antialiased), enlarging, one
// axis up and one down and to one column, on crops of scikit-image's photos (RGB, gray and
// RGBA ones, converted to RGB first as load_image converts them), equals Pillow 13.0.0's
// Image.resize byte for byte (scripts/image_resize_reference.py --fixtures wrote them).
func TestResizeEqualsPillow(t *testing.T) {
	dir := filepath.Join("testdata", "resize")
	raw, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Pillow string
		Cases  []struct {
			Source, Filter, File, Mode string
			Width, Height              int
		}
	}
	if err := json.Unmarshal(raw, &manifest); err != nil {
		t.Fatal(err)
	}
	if len(manifest.Cases) < 100 {
		t.Fatalf("%d cases in cases.json", len(manifest.Cases))
	}
	sources := map[string]*image.RGB{}
	for _, c := range manifest.Cases {
		src := sources[c.Source]
		if src == nil {
			src = readPNG(t, filepath.Join(dir, c.Source))
			sources[c.Source] = src
		}
		f, ok := filterNames[c.Filter]
		if !ok {
			t.Fatalf("filter %q", c.Filter)
		}
		got, err := Resize{Height: c.Height, Width: c.Width, Interpolation: f}.Apply(src, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := readPNG(t, filepath.Join(dir, c.File))
		if got.Width != want.Width || got.Height != want.Height {
			t.Fatalf("%s: %dx%d, want %dx%d", c.File, got.Width, got.Height, want.Width, want.Height)
		}
		if d := compare(got, want); d.max != [3]int{} {
			t.Errorf("%s (%s %dx%d -> %dx%d, %s): %v against Pillow %s", c.File, strings.ToUpper(c.Filter),
				src.Width, src.Height, c.Width, c.Height, c.Mode, d, manifest.Pillow)
		}
	}
}

// TestResizeOutputSize: torchvision's size rules: an int resizes the shorter edge and
// truncates the longer (int(size*long/short)), max_size caps the longer edge, (h, w) is exact;
// bad settings are errors that say what to set.
func TestResizeOutputSize(t *testing.T) {
	for _, c := range []struct {
		z            Resize
		w, h, ow, oh int
	}{
		{Resize{Size: 224}, 500, 375, 298, 224},
		{Resize{Size: 224}, 375, 500, 224, 298},
		{Resize{Size: 256}, 451, 300, 384, 256},
		{Resize{Size: 224}, 224, 224, 224, 224},
		{Resize{Size: 224, MaxSize: 256}, 1000, 375, 256, 96},
		{Resize{Size: 224, MaxSize: 300}, 375, 500, 224, 298},
		{Resize{Height: 224, Width: 100}, 500, 375, 100, 224},
		{Resize{Size: 10}, 1000, 3, 3333, 10},
	} {
		ow, oh, err := c.z.OutputSize(c.w, c.h)
		if err != nil || ow != c.ow || oh != c.oh {
			t.Errorf("%+v of %dx%d: %dx%d, %v; want %dx%d", c.z, c.w, c.h, ow, oh, err, c.ow, c.oh)
		}
	}
	for _, c := range []struct {
		z    Resize
		want string
	}{
		{Resize{}, "needs Size or a positive Height and Width"},
		{Resize{Size: 10, Height: 5, Width: 5}, "set one"},
		{Resize{Size: 224, MaxSize: 224}, "must be greater than Size"},
		{Resize{Height: 5, Width: 5, MaxSize: 9}, "only with Size"},
		{Resize{Size: -1}, "want >= 1"},
		{Resize{Size: 5, Interpolation: 9}, "interpolation 9"},
	} {
		if _, _, err := c.z.OutputSize(40, 30); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error with %q", c.z, err, c.want)
		}
	}
	m := &image.RGB{Width: 4, Height: 3, Pix: make([]uint8, 36)}
	if got, err := (Resize{Size: 3}).Apply(m, nil); err != nil || got != m {
		t.Errorf("Resize to the image's own size: %p, %v; want the image itself", got, err)
	}
}
