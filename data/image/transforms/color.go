package transforms

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/goaccel/goaccel/data/image"
)

// ColorJitter is torchvision's ColorJitter(brightness, contrast, saturation, hue) on a PIL
// image: each non-zero setting x of the first three draws a factor uniform in
// [max(0, 1-x), 1+x], Hue (at most 0.5) one uniform in [-Hue, Hue]; the adjustments run in a
// uniformly random order (torchvision's randperm of four), each as torchvision does it on PIL:
// Pillow's ImageEnhance blends (8-bit, truncated) for brightness (against black), contrast
// (against the mean gray level) and saturation (against the gray image), and for hue a round
// trip through Pillow's HSV with the hue byte shifted (wrapping). A zero setting skips its
// adjustment.
type ColorJitter struct {
	Brightness, Contrast, Saturation, Hue float64
}

var jitterKinds = [4]string{"brightness", "contrast", "saturation", "hue"}

// draw gives the order of the adjustments and their factors (by kind).
func (j ColorJitter) draw(r *rand.Rand) (order [4]string, factors [4]float32) {
	for i, p := range r.Perm(4) {
		order[i] = jitterKinds[p]
	}
	for i, x := range [3]float64{j.Brightness, j.Contrast, j.Saturation} {
		if x != 0 {
			lo := max(0, 1-x)
			factors[i] = float32(lo + (1+x-lo)*r.Float64())
		}
	}
	if j.Hue != 0 {
		factors[3] = float32(-j.Hue + 2*j.Hue*r.Float64())
	}
	return order, factors
}

// Apply implements Transform.
func (j ColorJitter) Apply(m *image.RGB, r *rand.Rand) (*image.RGB, error) {
	settings := [4]float64{j.Brightness, j.Contrast, j.Saturation, j.Hue}
	for i, x := range settings {
		if !(x >= 0) || math.IsInf(x, 0) || (i == 3 && x > 0.5) {
			return nil, fmt.Errorf("transforms: ColorJitter %s %g: want >= 0 (Hue at most 0.5)", [4]string{"Brightness", "Contrast", "Saturation", "Hue"}[i], x)
		}
	}
	if j == (ColorJitter{}) {
		return m, nil
	}
	order, factors := j.draw(r)
	for _, kind := range order {
		for i, k := range jitterKinds {
			if k == kind && settings[i] != 0 {
				m = adjust(m, kind, factors[i])
			}
		}
	}
	return m, nil
}

// luma is Pillow's convert("L") of one RGB pixel: ITU-R 601-2 weights in 16-bit fixed point.
func luma(r, g, b uint8) uint8 {
	return uint8((uint32(r)*19595 + uint32(g)*38470 + uint32(b)*7471 + 0x8000) >> 16)
}

// adjust is torchvision's adjust_brightness, adjust_contrast or adjust_saturation on a PIL
// image, Image.blend(degenerate, m, factor), or its adjust_hue.
func adjust(m *image.RGB, kind string, factor float32) *image.RGB {
	out := &image.RGB{Width: m.Width, Height: m.Height, Pix: make([]uint8, len(m.Pix))}
	switch kind {
	case "brightness":
		for i, v := range m.Pix {
			out.Pix[i] = blend(0, v, factor)
		}
	case "contrast":
		// ImageStat's mean of the gray image, rounded as int(mean + 0.5).
		sum := 0
		for i := 0; i < len(m.Pix); i += 3 {
			sum += int(luma(m.Pix[i], m.Pix[i+1], m.Pix[i+2]))
		}
		mean := uint8(int(float64(sum)/float64(len(m.Pix)/3) + 0.5))
		for i, v := range m.Pix {
			out.Pix[i] = blend(mean, v, factor)
		}
	case "saturation":
		for i := 0; i < len(m.Pix); i += 3 {
			g := luma(m.Pix[i], m.Pix[i+1], m.Pix[i+2])
			for c := range 3 {
				out.Pix[i+c] = blend(g, m.Pix[i+c], factor)
			}
		}
	case "hue":
		// np.int32(hue_factor * 255).astype(np.uint8), added with uint8 wrapping.
		shift := uint8(int32(float64(factor) * 255))
		for i := 0; i < len(m.Pix); i += 3 {
			h, s, v := rgbToHSV(m.Pix[i], m.Pix[i+1], m.Pix[i+2])
			out.Pix[i], out.Pix[i+1], out.Pix[i+2] = hsvToRGB(h+shift, s, v)
		}
	}
	return out
}

// rgbToHSV is Pillow's convert("HSV") of one pixel (colorsys' formulas in C float, the hue
// and saturation truncated to bytes).
func rgbToHSV(r, g, b uint8) (h, s, v uint8) {
	maxc, minc := max(r, g, b), min(r, g, b)
	if maxc == minc {
		return 0, 0, maxc
	}
	cr := float32(maxc - minc)
	sat := cr / float32(maxc)
	rc, gc, bc := float32(maxc-r)/cr, float32(maxc-g)/cr, float32(maxc-b)/cr
	var hue float32
	switch {
	case r == maxc:
		hue = bc - gc
	case g == maxc:
		hue = float32(2 + float64(rc) - float64(bc))
	default:
		hue = float32(4 + float64(gc) - float64(rc))
	}
	hue = float32(math.Mod(float64(hue)/6+1, 1))
	return clipInt(int(float64(hue) * 255)), clipInt(int(float64(sat) * 255)), maxc
}

// hsvToRGB is Pillow's HSV to RGB conversion of one pixel.
func hsvToRGB(h, s, v uint8) (r, g, b uint8) {
	if s == 0 {
		return v, v, v
	}
	sector := int(math.Floor(float64(h) * 6 / 255))
	f := float32(float64(h)*6/255 - float64(sector))
	fs := float32(float64(s) / 255)
	p := clipInt(int(math.Round(float64(v) * (1 - float64(fs)))))
	q := clipInt(int(math.Round(float64(v) * (1 - float64(fs*f)))))
	t := clipInt(int(math.Round(float64(v) * (1 - float64(float64(fs)*(1-float64(f)))))))
	switch sector % 6 {
	case 0:
		return v, t, p
	case 1:
		return q, v, p
	case 2:
		return p, v, t
	case 3:
		return p, q, v
	case 4:
		return t, p, v
	}
	return v, p, q
}

func clipInt(v int) uint8 {
	return uint8(min(max(v, 0), 255))
}

// blend is Pillow's ImagingBlend of one value: a + alpha*(b-a) in C float, truncated, clipped
// to 0..255 (only needed when alpha is outside [0, 1]).
func blend(a, b uint8, alpha float32) uint8 {
	v := float32(a) + float32(alpha*float32(int(b)-int(a)))
	if v <= 0 {
		return 0
	}
	if v >= 255 {
		return 255
	}
	return uint8(v)
}

// RandomErasing is torchvision's RandomErasing(p, scale, ratio, value) on the float tensor
// (after ToTensor and Normalize, where torchvision places it): with probability P, a window of
// random area (Scale, a fraction of the image's; default (0.02, 0.33)) and aspect ratio
// height/width (Ratio, log-uniform; default (0.3, 3.3)) set to Value per channel, or with
// Random to standard normal noise per value (torchvision's value="random"). Up to ten tries
// for a window strictly inside the image, as torchvision; none fitting leaves the image.
type RandomErasing struct {
	P            float64
	Scale, Ratio [2]float64
	Value        [3]float32
	Random       bool
}

// Erase applies RandomErasing in place to pix, an HWC w x h x 3 float image.
func (e RandomErasing) Erase(pix []float32, w, h int, r *rand.Rand) error {
	if !(e.P >= 0 && e.P <= 1) {
		return fmt.Errorf("transforms: RandomErasing.P = %g, want a probability in [0, 1]", e.P)
	}
	scale, ratio := e.Scale, e.Ratio
	if scale == [2]float64{} {
		scale = [2]float64{0.02, 0.33}
	}
	if ratio == [2]float64{} {
		ratio = [2]float64{0.3, 3.3}
	}
	if !(scale[0] >= 0 && scale[0] <= scale[1] && scale[1] <= 1) {
		return fmt.Errorf("transforms: RandomErasing.Scale %v: want 0 <= low <= high <= 1", scale)
	}
	if !(ratio[0] > 0 && ratio[0] <= ratio[1]) || math.IsInf(ratio[1], 0) {
		return fmt.Errorf("transforms: RandomErasing.Ratio %v: want 0 < low <= high", ratio)
	}
	if w < 1 || h < 1 || len(pix) != w*h*3 {
		return fmt.Errorf("transforms: RandomErasing of %d values as a %dx%dx3 image", len(pix), w, h)
	}
	if r.Float64() >= e.P {
		return nil
	}
	area := float64(w * h)
	logLo, logHi := math.Log(ratio[0]), math.Log(ratio[1])
	for range 10 {
		target := area * (scale[0] + (scale[1]-scale[0])*r.Float64())
		aspect := math.Exp(logLo + (logHi-logLo)*r.Float64())
		eh := int(math.RoundToEven(math.Sqrt(target * aspect)))
		ew := int(math.RoundToEven(math.Sqrt(target / aspect)))
		if !(eh < h && ew < w) {
			continue
		}
		top, left := r.IntN(h-eh+1), r.IntN(w-ew+1)
		for y := top; y < top+eh; y++ {
			row := pix[(y*w+left)*3 : (y*w+left+ew)*3]
			for i := range row {
				if e.Random {
					row[i] = float32(r.NormFloat64())
				} else {
					row[i] = e.Value[i%3]
				}
			}
		}
		return nil
	}
	return nil
}
