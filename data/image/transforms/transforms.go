// Package transforms holds torchvision's image transforms with their names, parameters and
// meanings, on goaccel's HWC images (image.RGB). Each random transform draws from the
// generator it is given; through data.LoaderConfig.Augment that is the example's own
// (data.ExampleKey.Rand), so an example gets the same crop and flip on every topology:
//
// train := transforms.Compose{transforms.RandomCrop{Size: 32, Padding: 4}, transforms.RandomHorizontalFlip{P: 0.5}}
// cfg.Augment = func(ex image.Example, key data.ExampleKey) (image.Example, error) {
// m, err := train.Apply(ex.Image, key.Rand())
// ex.Image = m
// return ex, err
// }
//
// On 8-bit images (Transform): Resize (Pillow's resampling, byte-equal to Image.resize),
// RandomResizedCrop, RandomCrop, CenterCrop, RandomHorizontalFlip, RandomRotation (nearest),
// ColorJitter (brightness, contrast, saturation, hue). To floats (HWC float32): ToTensor
// (/255) and Normalize (ToTensor and Normalize in one step); RandomErasing works on those
// floats in place. Pipeline chains the two halves; ViTEval and ConvNextEval are
// transformers' evaluation processors.
package transforms

import (
	"fmt"
	"math/rand/v2"

	"github.com/goaccel/goaccel/data/image"
)

// Transform is one step of a pipeline: it returns a new image (m is left as it was) and may
// draw from r (nil for the deterministic ones).
type Transform interface {
	Apply(m *image.RGB, r *rand.Rand) (*image.RGB, error)
}

// Compose applies its transforms in order, as torchvision.transforms.Compose.
type Compose []Transform

// Apply implements Transform.
func (c Compose) Apply(m *image.RGB, r *rand.Rand) (*image.RGB, error) {
	for _, t := range c {
		var err error
		if m, err = t.Apply(m, r); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// RandomHorizontalFlip mirrors the image left to right with probability P (torchvision's
// default 0.5 is not implied: 0 never flips).
type RandomHorizontalFlip struct{ P float64 }

// Apply implements Transform: one draw, r.Float64() < P, as torchvision's torch.rand(1) < p.
func (f RandomHorizontalFlip) Apply(m *image.RGB, r *rand.Rand) (*image.RGB, error) {
	if !(f.P >= 0 && f.P <= 1) {
		return nil, fmt.Errorf("transforms: RandomHorizontalFlip.P = %g, want a probability in [0, 1]", f.P)
	}
	if r.Float64() >= f.P {
		return m, nil
	}
	out := &image.RGB{Width: m.Width, Height: m.Height, Pix: make([]uint8, len(m.Pix))}
	for y := range m.Height {
		row := y * m.Width * 3
		for x := range m.Width {
			copy(out.Pix[row+x*3:row+x*3+3], m.Pix[row+(m.Width-1-x)*3:row+(m.Width-1-x)*3+3])
		}
	}
	return out, nil
}

// Padding modes of RandomCrop, as torchvision names them.
const (
	PadConstant  = "constant"  // Fill
	PadEdge      = "edge"      // the edge pixel repeated
	PadReflect   = "reflect"   // mirrored without the edge: 2 1 | 0 1 2
	PadSymmetric = "symmetric" // mirrored with the edge: 1 0 | 0 1 2
)

// RandomCrop is torchvision's RandomCrop(size, padding, pad_if_needed=False, fill,
// padding_mode): the image padded by Padding on every side, then a Size x Size window at a
// uniform top-left corner (top drawn first, then left, each over every position that fits).
type RandomCrop struct {
	Size, Padding int
	Mode          string // PadConstant when empty
	Fill          uint8  // the constant mode's value, on every channel
}

// Apply implements Transform.
func (c RandomCrop) Apply(m *image.RGB, r *rand.Rand) (*image.RGB, error) {
	p, err := pad(m, c.Padding, c.Mode, c.Fill)
	if err != nil {
		return nil, err
	}
	if c.Size < 1 || c.Size > p.Width || c.Size > p.Height {
		return nil, fmt.Errorf("transforms: RandomCrop.Size %d of a %dx%d image padded by %d: want 1 to the padded size",
			c.Size, m.Width, m.Height, c.Padding)
	}
	top := r.IntN(p.Height - c.Size + 1)
	left := r.IntN(p.Width - c.Size + 1)
	return crop(p, top, left, c.Size, c.Size), nil
}

// CenterCrop is torchvision's CenterCrop(size): the central Size x Size window, or Height x
// Width when Size is 0. The corner is at round((h-height)/2), round((w-width)/2), halves to
// even as torchvision's int(round(...)); an image smaller than the window is first padded with
// zeros, (d//2 before, (d+1)//2 after) as torchvision pads it.
type CenterCrop struct{ Size, Height, Width int }

// Apply implements Transform.
func (c CenterCrop) Apply(m *image.RGB, _ *rand.Rand) (*image.RGB, error) {
	ch, cw := c.Height, c.Width
	switch {
	case c.Size != 0 && (ch != 0 || cw != 0):
		return nil, fmt.Errorf("transforms: CenterCrop has Size %d and Height x Width %dx%d: set one", c.Size, ch, cw)
	case c.Size != 0:
		ch, cw = c.Size, c.Size
	}
	if ch < 1 || cw < 1 {
		return nil, fmt.Errorf("transforms: CenterCrop of %dx%d (Size %d): want a positive size", cw, ch, c.Size)
	}
	if ch <= m.Height && cw <= m.Width {
		return crop(m, roundHalfEven(m.Height-ch), roundHalfEven(m.Width-cw), ch, cw), nil
	}
	// Padded: the image sits at (padTop, padLeft) of a ph x pw canvas.
	padTop, padLeft := max(ch-m.Height, 0)/2, max(cw-m.Width, 0)/2
	ph, pw := m.Height+padTop+(max(ch-m.Height, 0)+1)/2, m.Width+padLeft+(max(cw-m.Width, 0)+1)/2
	top, left := roundHalfEven(ph-ch)-padTop, roundHalfEven(pw-cw)-padLeft
	out := &image.RGB{Width: cw, Height: ch, Pix: make([]uint8, cw*ch*3)}
	for y := range ch {
		sy := top + y
		if sy < 0 || sy >= m.Height {
			continue
		}
		for x := range cw {
			if sx := left + x; sx >= 0 && sx < m.Width {
				copy(out.Pix[(y*cw+x)*3:(y*cw+x)*3+3], m.Pix[(sy*m.Width+sx)*3:(sy*m.Width+sx)*3+3])
			}
		}
	}
	return out, nil
}

// roundHalfEven is round(d/2) with Python's rounding of halves to even.
func roundHalfEven(d int) int {
	if d%2 == 0 {
		return d / 2
	}
	if (d/2)%2 == 0 {
		return d / 2
	}
	return d/2 + 1
}

func crop(m *image.RGB, top, left, h, w int) *image.RGB {
	out := &image.RGB{Width: w, Height: h, Pix: make([]uint8, w*h*3)}
	for y := range h {
		src := ((top+y)*m.Width + left) * 3
		copy(out.Pix[y*w*3:(y+1)*w*3], m.Pix[src:src+w*3])
	}
	return out
}

// pad adds n pixels on every side in mode (torchvision's padding_mode).
func pad(m *image.RGB, n int, mode string, fill uint8) (*image.RGB, error) {
	if n < 0 {
		return nil, fmt.Errorf("transforms: padding %d: want >= 0", n)
	}
	if n == 0 {
		return m, nil
	}
	if mode == "" {
		mode = PadConstant
	}
	var source func(i, size int) int // the source coordinate of padded coordinate i-n, or -1 for Fill
	switch mode {
	case PadConstant:
		source = func(i, size int) int {
			if i < 0 || i >= size {
				return -1
			}
			return i
		}
	case PadEdge:
		source = func(i, size int) int { return min(max(i, 0), size-1) }
	case PadReflect, PadSymmetric:
		limit := n
		if mode == PadReflect {
			limit = n + 1
		}
		if m.Width < limit || m.Height < limit {
			return nil, fmt.Errorf("transforms: padding %d in %s mode needs an image of at least %d pixels a side, have %dx%d",
				n, mode, limit, m.Width, m.Height)
		}
		edge := 0
		if mode == PadSymmetric {
			edge = 1
		}
		source = func(i, size int) int {
			switch {
			case i < 0:
				return -i - edge
			case i >= size:
				return 2*size - 2 - i + edge
			}
			return i
		}
	default:
		return nil, fmt.Errorf("transforms: padding mode %q: want %s, %s, %s or %s", mode, PadConstant, PadEdge, PadReflect, PadSymmetric)
	}
	w, h := m.Width+2*n, m.Height+2*n
	out := &image.RGB{Width: w, Height: h, Pix: make([]uint8, w*h*3)}
	for y := range h {
		sy := source(y-n, m.Height)
		for x := range w {
			sx := source(x-n, m.Width)
			d := (y*w + x) * 3
			if sy < 0 || sx < 0 {
				out.Pix[d], out.Pix[d+1], out.Pix[d+2] = fill, fill, fill
				continue
			}
			copy(out.Pix[d:d+3], m.Pix[(sy*m.Width+sx)*3:(sy*m.Width+sx)*3+3])
		}
	}
	return out, nil
}

// Normalize is ToTensor followed by Normalize(mean, std): Floats gives each pixel value v of
// channel c as (v/255 - Mean[c]) / Std[c], float32, HWC.
type Normalize struct{ Mean, Std [3]float32 }

// Floats appends m's normalised values to dst and returns it.
func (n Normalize) Floats(dst []float32, m *image.RGB) ([]float32, error) {
	for c := range 3 {
		if !(n.Std[c] > 0) {
			return nil, fmt.Errorf("transforms: Normalize.Std[%d] = %g, want > 0", c, n.Std[c])
		}
	}
	for i, v := range m.Pix {
		c := i % 3
		dst = append(dst, (float32(v)/255-n.Mean[c])/n.Std[c])
	}
	return dst, nil
}
