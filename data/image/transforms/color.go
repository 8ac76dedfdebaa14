package transforms

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/goaccel/goaccel/data/image"
)

// ColorJitter is torchvision's ColorJitter(brightness, contrast, saturation) on a PIL image,
// without hue: each non-zero setting x draws a factor uniform in [max(0, 1-x), 1+x], and the
// adjustments run in a uniformly random order, each as Pillow's ImageEnhance blends it (8-bit,
// truncated): brightness against black, contrast against the image's mean gray level,
// saturation against its gray version. A zero setting skips its adjustment.
type ColorJitter struct {
	Brightness, Contrast, Saturation float64
}

var jitterKinds = [3]string{"brightness", "contrast", "saturation"}

// draw gives the order of the adjustments and their factors (by kind).
func (j ColorJitter) draw(r *rand.Rand) (order [3]string, factors [3]float32) {
	perm := r.Perm(3)
	for i, p := range perm {
		order[i] = jitterKinds[p]
	}
	for i, x := range [3]float64{j.Brightness, j.Contrast, j.Saturation} {
		if x != 0 {
			lo := max(0, 1-x)
			factors[i] = float32(lo + (1+x-lo)*r.Float64())
		}
	}
	return order, factors
}

// Apply implements Transform.
func (j ColorJitter) Apply(m *image.RGB, r *rand.Rand) (*image.RGB, error) {
	for i, x := range [3]float64{j.Brightness, j.Contrast, j.Saturation} {
		if !(x >= 0) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("transforms: ColorJitter %s %g: want >= 0", [3]string{"Brightness", "Contrast", "Saturation"}[i], x)
		}
	}
	if j == (ColorJitter{}) {
		return m, nil
	}
	order, factors := j.draw(r)
	settings := [3]float64{j.Brightness, j.Contrast, j.Saturation}
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
// image: Image.blend(degenerate, m, factor).
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
	}
	return out
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
