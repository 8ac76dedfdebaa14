package transforms

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/goaccel/goaccel/data/image"
)

// RandomResizedCrop is torchvision's RandomResizedCrop(size, scale, ratio, interpolation,
// antialias=True) on a PIL image: a window of random area and aspect ratio, cropped and
// resized (Resize's resampling) to Size x Size, or Height x Width when Size is 0.
//
// Scale is the window's area as a fraction of the image's, Ratio its width over height; each
// left as {0, 0} means torchvision's default, (0.08, 1) and (3/4, 4/3). The window comes from
// Params.
type RandomResizedCrop struct {
	Size          int
	Height, Width int
	Scale, Ratio  [2]float64
	Interpolation Interpolation
}

// scaleRatio gives the ranges with their defaults, checked.
func (c RandomResizedCrop) scaleRatio() (scale, ratio [2]float64, err error) {
	scale, ratio = c.Scale, c.Ratio
	if scale == [2]float64{} {
		scale = [2]float64{0.08, 1}
	}
	if ratio == [2]float64{} {
		ratio = [2]float64{3.0 / 4, 4.0 / 3}
	}
	if !(scale[0] >= 0 && scale[0] <= scale[1]) || math.IsInf(scale[1], 0) {
		return scale, ratio, fmt.Errorf("transforms: RandomResizedCrop.Scale %v: want 0 <= low <= high", scale)
	}
	if !(ratio[0] > 0 && ratio[0] <= ratio[1]) || math.IsInf(ratio[1], 0) {
		return scale, ratio, fmt.Errorf("transforms: RandomResizedCrop.Ratio %v: want 0 < low <= high", ratio)
	}
	return scale, ratio, nil
}

// Params draws the window for a w x h image as torchvision's RandomResizedCrop.get_params:
// up to ten tries, each drawing an area fraction uniform in Scale and then a log aspect
// ratio uniform in log(Ratio); the window's width round(sqrt(area*ratio)) and height
// round(sqrt(area/ratio)) (halves to even, as Python's round); the first that fits the image
// gets a corner uniform over the places it fits (top drawn first, then left). When none of
// the ten fits: the image's central window clamped to the ratio range (the whole image when
// its own ratio is inside it), corner at the floor of the halved margins.
func (c RandomResizedCrop) Params(w, h int, r *rand.Rand) (top, left, ch, cw int, err error) {
	scale, ratio, err := c.scaleRatio()
	if err != nil {
		return 0, 0, 0, 0, err
	}
	if w < 1 || h < 1 {
		return 0, 0, 0, 0, fmt.Errorf("transforms: RandomResizedCrop of a %dx%d image: want at least one pixel", w, h)
	}
	area := float64(w * h)
	logLo, logHi := math.Log(ratio[0]), math.Log(ratio[1])
	for range 10 {
		target := area * (scale[0] + (scale[1]-scale[0])*r.Float64())
		aspect := math.Exp(logLo + (logHi-logLo)*r.Float64())
		cw = int(math.RoundToEven(math.Sqrt(target * aspect)))
		ch = int(math.RoundToEven(math.Sqrt(target / aspect)))
		if cw > 0 && cw <= w && ch > 0 && ch <= h {
			top = r.IntN(h - ch + 1)
			left = r.IntN(w - cw + 1)
			return top, left, ch, cw, nil
		}
	}
	in := float64(w) / float64(h)
	switch {
	case in < ratio[0]:
		cw, ch = w, int(math.RoundToEven(float64(w)/ratio[0]))
	case in > ratio[1]:
		ch, cw = h, int(math.RoundToEven(float64(h)*ratio[1]))
	default:
		cw, ch = w, h
	}
	return (h - ch) / 2, (w - cw) / 2, ch, cw, nil
}

// outSize is the output's width and height.
func (c RandomResizedCrop) outSize() (ow, oh int, err error) {
	switch {
	case c.Size != 0 && (c.Height != 0 || c.Width != 0):
		return 0, 0, fmt.Errorf("transforms: RandomResizedCrop has Size %d and Height x Width %dx%d: set one", c.Size, c.Height, c.Width)
	case c.Size != 0:
		if c.Size < 1 {
			return 0, 0, fmt.Errorf("transforms: RandomResizedCrop.Size %d: want >= 1", c.Size)
		}
		return c.Size, c.Size, nil
	case c.Height < 1 || c.Width < 1:
		return 0, 0, fmt.Errorf("transforms: RandomResizedCrop needs Size or a positive Height and Width, have %dx%d", c.Height, c.Width)
	}
	return c.Width, c.Height, nil
}

// Apply implements Transform: Params, then the window resized (without copying it out first).
func (c RandomResizedCrop) Apply(m *image.RGB, r *rand.Rand) (*image.RGB, error) {
	ow, oh, err := c.outSize()
	if err != nil {
		return nil, err
	}
	if err := c.Interpolation.check(); err != nil {
		return nil, err
	}
	top, left, ch, cw, err := c.Params(m.Width, m.Height, r)
	if err != nil {
		return nil, err
	}
	return resample(m, left, top, cw, ch, ow, oh, c.Interpolation), nil
}
