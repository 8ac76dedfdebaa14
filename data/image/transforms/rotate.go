package transforms

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/goaccel/goaccel/data/image"
)

// RandomRotation is torchvision's RandomRotation(degrees, interpolation=NEAREST,
// expand=False, center=None, fill) on a PIL image: an angle uniform in Degrees (torchvision's
// RandomRotation(d) is Degrees {-d, d}), counter-clockwise about the image's centre, the
// size kept, each output pixel the source pixel its centre maps into (Pillow's rotate with
// NEAREST: 16.16 fixed-point steps), Fill where it maps outside. Only torchvision's default
// NEAREST is built; bilinear rotation and expand are not.
type RandomRotation struct {
	Degrees [2]float64
	Fill    [3]uint8
}

func (rr RandomRotation) angle(r *rand.Rand) float64 {
	return rr.Degrees[0] + (rr.Degrees[1]-rr.Degrees[0])*r.Float64()
}

// Apply implements Transform.
func (rr RandomRotation) Apply(m *image.RGB, r *rand.Rand) (*image.RGB, error) {
	if !(rr.Degrees[0] <= rr.Degrees[1]) || math.IsInf(rr.Degrees[0], 0) || math.IsInf(rr.Degrees[1], 0) {
		return nil, fmt.Errorf("transforms: RandomRotation.Degrees %v: want low <= high, finite", rr.Degrees)
	}
	return rotate(m, rr.angle(r), rr.Fill), nil
}

// round15 is Python's round(x, 15): correctly rounded to 15 decimals, halves to even.
func round15(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 15, 64), 64)
	return v
}

// degToRad is Python's math.radians factor, pi/180 rounded once as a float64 division.
var degToRad = func() float64 { pi := math.Pi; return pi / 180 }()

// rotate is Pillow's Image.rotate(angle, NEAREST, expand=False, fillcolor=fill), which
// torchvision's rotate calls.
func rotate(m *image.RGB, angle float64, fill [3]uint8) *image.RGB {
	// Python's angle % 360.0: the sign of the divisor.
	angle = math.Mod(angle, 360)
	if angle < 0 {
		angle += 360
	}
	w, h := m.Width, m.Height
	out := &image.RGB{Width: w, Height: h, Pix: make([]uint8, len(m.Pix))}
	switch {
	case angle == 0:
		copy(out.Pix, m.Pix)
		return out
	case angle == 180:
		return remap(m, out, func(x, y int) (int, int) { return w - 1 - x, h - 1 - y })
	case angle == 90 && w == h:
		return remap(m, out, func(x, y int) (int, int) { return w - 1 - y, x })
	case angle == 270 && w == h:
		return remap(m, out, func(x, y int) (int, int) { return y, h - 1 - x })
	}
	for i := 0; i < len(out.Pix); i += 3 {
		out.Pix[i], out.Pix[i+1], out.Pix[i+2] = fill[0], fill[1], fill[2]
	}
	rad := -(angle * degToRad)
	a := [6]float64{round15(math.Cos(rad)), round15(math.Sin(rad)), 0, round15(-math.Sin(rad)), round15(math.Cos(rad)), 0}
	cx, cy := float64(w)/2, float64(h)/2
	a[2] = float64(a[0]*-cx) + float64(a[1]*-cy) + a[2]
	a[5] = float64(a[3]*-cx) + float64(a[4]*-cy) + a[5]
	a[2] += cx
	a[5] += cy
	affineNearest(m, out, a)
	return out
}

func remap(m, out *image.RGB, src func(x, y int) (int, int)) *image.RGB {
	for y := range out.Height {
		for x := range out.Width {
			sx, sy := src(x, y)
			d, s := (y*out.Width+x)*3, (sy*m.Width+sx)*3
			copy(out.Pix[d:d+3], m.Pix[s:s+3])
		}
	}
	return out
}

// affineNearest is Pillow's ImagingTransformAffine with NEAREST: the source of output pixel
// (x, y) is a·(x+½, y+½), stepped in 16.16 fixed point when every corner maps within ±32768
// (its affine_fixed), else in float64 sums; pixels mapping outside keep out's fill.
func affineNearest(m, out *image.RGB, a [6]float64) {
	w, h := out.Width, out.Height
	inRange := func(x, y float64) bool {
		return math.Abs(float64(x*a[0])+float64(y*a[1])+a[2]) < 32768 && math.Abs(float64(x*a[3])+float64(y*a[4])+a[5]) < 32768
	}
	put := func(x, y, xin, yin int) {
		if xin >= 0 && xin < m.Width && yin >= 0 && yin < m.Height {
			d, s := (y*w+x)*3, (yin*m.Width+xin)*3
			copy(out.Pix[d:d+3], m.Pix[s:s+3])
		}
	}
	if inRange(0, 0) && inRange(float64(w), float64(h)) && inRange(0, float64(h)) && inRange(float64(w), 0) {
		fix := func(v float64) int32 {
			v = float64(v*65536) + 0.5
			if v < 0 {
				return int32(math.Floor(v))
			}
			return int32(v)
		}
		a0, a1, a3, a4 := fix(a[0]), fix(a[1]), fix(a[3]), fix(a[4])
		a2 := fix(a[2] + float64(a[0]*0.5) + float64(a[1]*0.5))
		a5 := fix(a[5] + float64(a[3]*0.5) + float64(a[4]*0.5))
		for y := range h {
			xx, yy := a2, a5
			for x := range w {
				put(x, y, int(xx>>16), int(yy>>16))
				xx += a0
				yy += a3
			}
			a2 += a1
			a5 += a4
		}
		return
	}
	xo := a[2] + float64(a[1]*0.5) + float64(a[0]*0.5)
	yo := a[5] + float64(a[4]*0.5) + float64(a[3]*0.5)
	for y := range h {
		xx, yy := xo, yo
		for x := range w {
			put(x, y, coordAny(xx), coordAny(yy))
			xx += a[0]
			yy += a[3]
		}
		xo += a[1]
		yo += a[4]
	}
}

// coordAny is Pillow's COORD: -1 below 0, else truncated.
func coordAny(v float64) int {
	if v < 0 {
		return -1
	}
	return int(v)
}
