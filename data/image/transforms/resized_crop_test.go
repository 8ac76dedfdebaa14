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

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/image"
)

type cropReference struct {
	Torchvision string
	Draws       int
	Configs     []struct {
		Name          string
		Height, Width int
		Scale, Ratio  [2]float64
		Counts        map[string][][2]int
	}
}

// ks is the two-sample Kolmogorov-Smirnov statistic of two samples of a discrete variable
// given as value -> count: the largest gap between their empirical distribution functions.
func ks(a, b map[int]int) float64 {
	var values []int
	na, nb := 0, 0
	for v, n := range a {
		values = append(values, v)
		na += n
	}
	for v, n := range b {
		if _, ok := a[v]; !ok {
			values = append(values, v)
		}
		nb += n
	}
	slices.Sort(values)
	d, ca, cb := 0.0, 0, 0
	for _, v := range values {
		ca += a[v]
		cb += b[v]
		d = max(d, math.Abs(float64(ca)/float64(na)-float64(cb)/float64(nb)))
	}
	return d
}

// ksBound is the two-sample KS test's critical value at level alpha for samples of n and m:
// c(alpha) sqrt((n+m)/(n m)) with c(alpha) = sqrt(-ln(alpha/2)/2) (conservative for
// discrete variables).
func ksBound(alpha float64, n, m int) float64 {
	return math.Sqrt(-math.Log(alpha/2)/2) * math.Sqrt(float64(n+m)/float64(n*m))
}

// windowStats draws n windows with params, one generator per example as the loader gives
// them (data.ExampleKey{Seed: 1, Index: k}.Rand()), and counts each statistic's values.
func windowStats(t *testing.T, n, w, h int, params func(r *rand.Rand) (top, left, ch, cw int)) map[string]map[int]int {
	stats := map[string]map[int]int{"top": {}, "left": {}, "height": {}, "width": {}, "area": {}}
	for k := range n {
		top, left, ch, cw := params(data.ExampleKey{Seed: 1, Index: k}.Rand())
		if top < 0 || left < 0 || ch < 1 || cw < 1 || top+ch > h || left+cw > w {
			t.Fatalf("window top %d left %d %dx%d outside a %dx%d image", top, left, cw, ch, w, h)
		}
		stats["top"][top]++
		stats["left"][left]++
		stats["height"][ch]++
		stats["width"][cw]++
		stats["area"][int(1000*float64(ch*cw)/float64(h*w))]++
	}
	return stats
}

// TestRandomResizedCropMatchesTorchvision: over 100,000 windows per configuration (a 500x375
// photo, a portrait, CIFAR's 32x32, a 1000x120 panorama where the ten tries often fail and
// the fallback shows, and narrow scale and ratio ranges), the distributions of the windows'
// top, left, height, width and area fraction equal those of torchvision's get_params
// (scripts/image_crop_reference.py, 100,000 draws each): a two-sample Kolmogorov-Smirnov
// test at level 0.001 per statistic, bound 0.0087. Both sides are seeded, so the test cannot
// flake; samplers with a plain-uniform ratio or a side (not area) uniform in scale fail it.
func TestRandomResizedCropMatchesTorchvision(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "crop_boxes.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref cropReference
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	n := ref.Draws
	if testing.Short() {
		n = 30000
	}
	bound := ksBound(0.001, n, ref.Draws)
	wrongRatio, wrongScale := 0, 0
	for _, cfg := range ref.Configs {
		c := RandomResizedCrop{Size: 224, Scale: cfg.Scale, Ratio: cfg.Ratio}
		got := windowStats(t, n, cfg.Width, cfg.Height, func(r *rand.Rand) (int, int, int, int) {
			top, left, ch, cw, err := c.Params(cfg.Width, cfg.Height, r)
			if err != nil {
				t.Fatal(err)
			}
			return top, left, ch, cw
		})
		worst := 0.0
		for stat, counts := range cfg.Counts {
			want := map[int]int{}
			for _, vc := range counts {
				want[vc[0]] = vc[1]
			}
			d := ks(got[stat], want)
			worst = max(worst, d)
			if d > bound {
				t.Errorf("%s: %s's KS distance to torchvision's %.4f, over the bound %.4f", cfg.Name, stat, d, bound)
			}
		}
		t.Logf("%s: largest KS distance %.4f (bound %.4f)", cfg.Name, worst, bound)

		// The test's power: two plausible wrong samplers are told apart.
		for variant, count := range map[string]*int{"uniform ratio": &wrongRatio, "uniform side": &wrongScale} {
			bad := windowStats(t, n, cfg.Width, cfg.Height, func(r *rand.Rand) (int, int, int, int) {
				return wrongWindow(cfg.Width, cfg.Height, cfg.Scale, cfg.Ratio, variant, r)
			})
			for stat, counts := range cfg.Counts {
				want := map[int]int{}
				for _, vc := range counts {
					want[vc[0]] = vc[1]
				}
				if ks(bad[stat], want) > bound {
					*count++
					break
				}
			}
		}
	}
	t.Logf("wrong samplers rejected: uniform ratio on %d, uniform side on %d of %d configurations", wrongRatio, wrongScale, len(ref.Configs))
	if wrongRatio < 3 || wrongScale < 4 {
		t.Errorf("the KS test rejected a uniform-ratio sampler on %d and a uniform-side one on %d of %d configurations",
			wrongRatio, wrongScale, len(ref.Configs))
	}
}

// wrongWindow is get_params with one mistake: the ratio uniform instead of its log, or the
// side (not the area) uniform in the scale range.
func wrongWindow(w, h int, scale, ratio [2]float64, variant string, r *rand.Rand) (top, left, ch, cw int) {
	area := float64(w * h)
	for range 10 {
		s := scale[0] + (scale[1]-scale[0])*r.Float64()
		aspect := math.Exp(math.Log(ratio[0]) + (math.Log(ratio[1])-math.Log(ratio[0]))*r.Float64())
		if variant == "uniform ratio" {
			aspect = ratio[0] + (ratio[1]-ratio[0])*(math.Log(aspect)-math.Log(ratio[0]))/(math.Log(ratio[1])-math.Log(ratio[0]))
		} else {
			side := math.Sqrt(scale[0]) + (math.Sqrt(scale[1])-math.Sqrt(scale[0]))*(s-scale[0])/(scale[1]-scale[0])
			s = side * side
		}
		cw = int(math.RoundToEven(math.Sqrt(area * s * aspect)))
		ch = int(math.RoundToEven(math.Sqrt(area * s / aspect)))
		if cw > 0 && cw <= w && ch > 0 && ch <= h {
			return r.IntN(h - ch + 1), r.IntN(w - cw + 1), ch, cw
		}
	}
	return 0, 0, h, w
}

// TestRandomResizedCropFallback: when no try fits, the central window clamped to the ratio
// range, corner at the floor of the halved margins (torchvision's fallback); a window that
// is the whole image when the image's ratio is inside the range.
func TestRandomResizedCropFallback(t *testing.T) {
	// Scale (4, 5): every try asks for more than the image, so the fallback decides.
	for _, c := range []struct {
		w, h, top, left, ch, cw int
	}{
		{1000, 100, 0, 433, 100, 133}, // too wide: h kept, w = round(100 * 4/3)
		{100, 1001, 434, 0, 133, 100}, // too tall: w kept, h = round(100 / (3/4))
		{120, 100, 0, 0, 100, 120},    // inside the range: the whole image
	} {
		top, left, ch, cw, err := RandomResizedCrop{Size: 8, Scale: [2]float64{4, 5}}.Params(c.w, c.h, rand.New(rand.NewPCG(1, 1)))
		if err != nil || top != c.top || left != c.left || ch != c.ch || cw != c.cw {
			t.Errorf("%dx%d: top %d left %d %dx%d (%v); want top %d left %d %dx%d", c.w, c.h, top, left, cw, ch, err, c.top, c.left, c.cw, c.ch)
		}
	}
	for _, c := range []struct {
		c    RandomResizedCrop
		want string
	}{
		{RandomResizedCrop{Size: 8, Scale: [2]float64{0.9, 0.1}}, "Scale"},
		{RandomResizedCrop{Size: 8, Ratio: [2]float64{0, 1}}, "Ratio"},
		{RandomResizedCrop{}, "needs Size"},
		{RandomResizedCrop{Size: 8, Height: 2, Width: 2}, "set one"},
		{RandomResizedCrop{Size: 8, Interpolation: -1}, "interpolation -1"},
	} {
		if _, err := c.c.Apply(&image.RGB{Width: 4, Height: 4, Pix: make([]uint8, 48)}, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error with %q", c.c, err, c.want)
		}
	}
}

// TestRandomResizedCropIsCropThenResize: Apply gives what Params' window cropped out and then
// resized gives (torchvision's resized_crop on a PIL image), for every filter.
func TestRandomResizedCropIsCropThenResize(t *testing.T) {
	src := readPNG(t, filepath.Join("testdata", "resize", "chelsea.png"))
	for f := range Interpolation(len(interpolationNames)) {
		for k := range 20 {
			c := RandomResizedCrop{Height: 30, Width: 20 + k, Interpolation: f}
			got, err := c.Apply(src, data.ExampleKey{Seed: 3, Index: k}.Rand())
			if err != nil {
				t.Fatal(err)
			}
			top, left, ch, cw, _ := c.Params(src.Width, src.Height, data.ExampleKey{Seed: 3, Index: k}.Rand())
			want, err := Resize{Height: 30, Width: 20 + k, Interpolation: f}.Apply(crop(src, top, left, ch, cw), nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := compare(got, want); d.max != [3]int{} {
				t.Errorf("%v, window top %d left %d %dx%d: %v from crop-then-resize", f, top, left, cw, ch, d)
			}
		}
	}
}
