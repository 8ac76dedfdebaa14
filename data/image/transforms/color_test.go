package transforms

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestColorAdjustEqualsTorchvision: brightness, contrast and saturation equal torchvision's
// adjust_* on PIL images (ImageEnhance's blends against black, the gray mean, the gray image)
// byte for byte, factors 0 to 2.5, and hue -0.5 to 0.5 (its HSV round trip, also on
// 4096 colours spanning every hue sector); rotate (NEAREST, fill colour, angles past 360
// and the transposed right angles) equals torchvision's rotate; CenterCrop equals torchvision's center_crop (rounded
// corners, zero padding of an image smaller than the window) on six sizes
// (scripts/image_resize_reference.py --fixtures).
func TestColorAdjustEqualsTorchvision(t *testing.T) {
	dir := filepath.Join("testdata", "resize")
	raw, err := os.ReadFile(filepath.Join(dir, "enhance.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Source string
		Cases  []struct {
			Kind, File    string
			Source        string // ref.Source when empty
			Factor        float64
			Height, Width int
			Fill          []uint8
		}
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	src := readPNG(t, filepath.Join(dir, ref.Source))
	for _, c := range ref.Cases {
		src := src
		if c.Source != "" {
			src = readPNG(t, filepath.Join(dir, c.Source))
		}
		got := adjust(src, c.Kind, float32(c.Factor))
		if c.Kind == "rotate" {
			var fill [3]uint8
			copy(fill[:], c.Fill)
			got = rotate(src, c.Factor, fill)
		}
		if c.Kind == "centercrop" {
			if got, err = (CenterCrop{Height: c.Height, Width: c.Width}).Apply(src, nil); err != nil {
				t.Fatal(err)
			}
		}
		want := readPNG(t, filepath.Join(dir, c.File))
		if got.Width != want.Width || got.Height != want.Height {
			t.Errorf("%s: %dx%d, want %dx%d", c.File, got.Width, got.Height, want.Width, want.Height)
			continue
		}
		if d := compare(got, want); d.max != [3]int{} {
			t.Errorf("%s %g: %v against torchvision", c.File, c.Factor, d)
		}
	}
}

// TestColorJitterDraws: each factor uniform in [max(0, 1-x), 1+x] (hue in [-x, x]), the
// order of the four a uniform permutation (torchvision's randperm(4)); zero settings leave the
// image as it is; bad settings are errors.
func TestColorJitterDraws(t *testing.T) {
	j := ColorJitter{Brightness: 0.4, Contrast: 0.2, Saturation: 1.5, Hue: 0.1}
	r := rand.New(rand.NewPCG(4, 5))
	orders := map[[4]string]int{}
	var lo, hi [4]float64
	lo = [4]float64{9, 9, 9, 9}
	const n = 60000
	for range n {
		order, f := j.draw(r)
		orders[order]++
		for i := range 4 {
			lo[i], hi[i] = min(lo[i], float64(f[i])), max(hi[i], float64(f[i]))
		}
	}
	if len(orders) != 24 {
		t.Fatalf("%d orders: %v", len(orders), orders)
	}
	for o, c := range orders {
		if math.Abs(float64(c)/n-1.0/24) > 0.005 {
			t.Errorf("order %v drawn %.4f of the time, want 1/24", o, float64(c)/n)
		}
	}
	want := [4][2]float64{{0.6, 1.4}, {0.8, 1.2}, {0, 2.5}, {-0.1, 0.1}}
	for i := range 4 {
		if math.Abs(lo[i]-want[i][0]) > 0.01 || math.Abs(hi[i]-want[i][1]) > 0.01 {
			t.Errorf("factor %d in [%.3f, %.3f], want [%g, %g]", i, lo[i], hi[i], want[i][0], want[i][1])
		}
	}
	m := readPNG(t, filepath.Join("testdata", "resize", "chelsea.png"))
	same, err := ColorJitter{}.Apply(m, r)
	if err != nil || !slices.Equal(same.Pix, m.Pix) {
		t.Errorf("ColorJitter{} changed the image (%v)", err)
	}
	if _, err := j.Apply(m, r); err != nil {
		t.Error(err)
	}
	if _, err := (ColorJitter{Contrast: -1}).Apply(m, r); err == nil || !strings.Contains(err.Error(), "Contrast") {
		t.Errorf("negative contrast: %v", err)
	}
	if _, err := (ColorJitter{Hue: 0.6}).Apply(m, r); err == nil || !strings.Contains(err.Error(), "Hue 0.6") {
		t.Errorf("hue 0.6: %v", err)
	}
}

// TestRandomErasingDraws: the erased window follows torchvision's get_params (h from
// sqrt(area*ratio), both under the image's sides, ten tries, else nothing), with probability
// P; the window gets Value, or standard normal noise with Random; outside it nothing changes.
func TestRandomErasingDraws(t *testing.T) {
	const w, h = 40, 30
	e := RandomErasing{P: 0.5}
	r := rand.New(rand.NewPCG(8, 9))
	erased, n := 0, 20000
	var area float64
	for range n {
		pix := make([]float32, w*h*3)
		for i := range pix {
			pix[i] = 1
		}
		if err := e.Erase(pix, w, h, r); err != nil {
			t.Fatal(err)
		}
		zeros := 0
		for _, v := range pix {
			if v == 0 {
				zeros++
			}
		}
		if zeros > 0 {
			erased++
			area += float64(zeros/3) / (w * h)
		}
	}
	if got := float64(erased) / float64(n); math.Abs(got-0.5) > 0.015 {
		t.Errorf("erased %.4f of the time, want 0.5", got)
	}
	// Scale uniform in (0.02, 0.33): the mean area about 0.175 (a little less: the tries that
	// fail are the large ones).
	if mean := area / float64(erased); mean < 0.15 || mean > 0.18 {
		t.Errorf("mean erased area %.4f, want about 0.17", mean)
	}
	pix := make([]float32, w*h*3)
	if err := (RandomErasing{P: 1, Scale: [2]float64{0.1, 0.1}, Random: true}).Erase(pix, w, h, r); err != nil {
		t.Fatal(err)
	}
	var sum, sq float64
	k := 0
	for _, v := range pix {
		if v != 0 {
			sum += float64(v)
			sq += float64(v) * float64(v)
			k++
		}
	}
	if k < 300 || math.Abs(sum/float64(k)) > 0.2 || math.Abs(sq/float64(k)-1) > 0.25 {
		t.Errorf("random erasing: %d values, mean %.3f, mean square %.3f; want about 360, 0, 1", k, sum/float64(k), sq/float64(k))
	}
	if err := (RandomErasing{P: 2}).Erase(pix, w, h, r); err == nil || !strings.Contains(err.Error(), "P = 2") {
		t.Errorf("P 2: %v", err)
	}
	if err := (RandomErasing{P: 1}).Erase(pix[:5], w, h, r); err == nil || !strings.Contains(err.Error(), "5 values") {
		t.Errorf("short buffer: %v", err)
	}
}

// TestRandomRotationDraws: the angle is uniform in Degrees (torchvision's uniform_), a
// rotation by it as rotate gives; bad ranges are errors.
func TestRandomRotationDraws(t *testing.T) {
	m := readPNG(t, filepath.Join("testdata", "resize", "chelsea.png"))
	rr := RandomRotation{Degrees: [2]float64{-20, 35}, Fill: [3]uint8{1, 2, 3}}
	lo, hi, sum := 99.0, -99.0, 0.0
	const n = 20000
	r := rand.New(rand.NewPCG(2, 3))
	for range n {
		a := rr.angle(r)
		lo, hi, sum = min(lo, a), max(hi, a), sum+a
	}
	if lo < -20 || hi > 35 || lo > -19.9 || hi < 34.9 || math.Abs(sum/n-7.5) > 0.3 {
		t.Errorf("angles in [%.2f, %.2f] mean %.2f; want uniform in [-20, 35]", lo, hi, sum/n)
	}
	got, err := rr.Apply(m, rand.New(rand.NewPCG(7, 7)))
	if err != nil {
		t.Fatal(err)
	}
	want := rotate(m, rr.angle(rand.New(rand.NewPCG(7, 7))), rr.Fill)
	if !slices.Equal(got.Pix, want.Pix) {
		t.Error("Apply is not rotate by the drawn angle")
	}
	if _, err := (RandomRotation{Degrees: [2]float64{5, -5}}).Apply(m, r); err == nil || !strings.Contains(err.Error(), "Degrees") {
		t.Errorf("reversed range: %v", err)
	}
}
