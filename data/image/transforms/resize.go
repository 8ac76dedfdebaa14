package transforms

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/goaccel/goaccel/data/image"
)

// Interpolation is a resampling filter, named as torchvision's InterpolationMode names them.
// Every one resamples as Pillow's Image.resize does on 8-bit images (torchvision's Resize on
// PIL images calls it): the filters widen with the reduction when shrinking (antialiased),
// two separable passes, horizontal first, with 22-bit fixed-point weights and each pass
// rounded to 8 bits. The zero value is Bilinear, torchvision's default.
type Interpolation int

// The filters, with their supports at scale 1.
const (
	Bilinear Interpolation = iota // triangle, support 1 (PIL.Image.BILINEAR)
	Nearest                       // the pixel whose centre is nearest (PIL.Image.NEAREST)
	Bicubic                       // cubic convolution with a = -0.5, support 2 (PIL.Image.BICUBIC)
	Lanczos                       // sinc windowed by sinc, support 3 (PIL.Image.LANCZOS)
	Box                           // each source pixel counted once, support 1/2 (PIL.Image.BOX)
	Hamming                       // sinc windowed by Hamming, support 1 (PIL.Image.HAMMING)
)

var interpolationNames = [...]string{"bilinear", "nearest", "bicubic", "lanczos", "box", "hamming"}

// String gives the lower-case torchvision name.
func (f Interpolation) String() string {
	if f < 0 || int(f) >= len(interpolationNames) {
		return fmt.Sprintf("Interpolation(%d)", int(f))
	}
	return interpolationNames[f]
}

func (f Interpolation) check() error {
	if f < 0 || int(f) >= len(interpolationNames) {
		return fmt.Errorf("transforms: interpolation %d: want Bilinear, Nearest, Bicubic, Lanczos, Box or Hamming", int(f))
	}
	return nil
}

// Resize is torchvision's Resize(size, interpolation, max_size, antialias=True) on a PIL
// image. Set either Size or Height and Width:
//   - Size (torchvision's int size): the shorter edge becomes Size and the longer
//     int(Size*long/short), truncated as torchvision truncates; MaxSize, when not 0, caps the
//     longer edge (the shorter one then scaled down the same way) and must exceed Size;
//   - Height and Width (torchvision's (h, w)): exactly that size.
//
// An image already of the output size is returned as it is, as torchvision returns it.
type Resize struct {
	Size          int
	Height, Width int
	MaxSize       int
	Interpolation Interpolation
}

// OutputSize gives the width and height Resize makes of a w x h image.
func (z Resize) OutputSize(w, h int) (ow, oh int, err error) {
	if err := z.Interpolation.check(); err != nil {
		return 0, 0, err
	}
	if w < 1 || h < 1 {
		return 0, 0, fmt.Errorf("transforms: Resize of a %dx%d image: want at least one pixel", w, h)
	}
	switch {
	case z.Size != 0 && (z.Height != 0 || z.Width != 0):
		return 0, 0, fmt.Errorf("transforms: Resize has Size %d and Height x Width %dx%d: set one", z.Size, z.Height, z.Width)
	case z.Size != 0:
		if z.Size < 1 {
			return 0, 0, fmt.Errorf("transforms: Resize.Size %d: want >= 1", z.Size)
		}
		short, long := w, h
		if w > h {
			short, long = h, w
		}
		newShort, newLong := z.Size, int(float64(z.Size*long)/float64(short))
		if z.MaxSize != 0 {
			if z.MaxSize <= z.Size {
				return 0, 0, fmt.Errorf("transforms: Resize.MaxSize %d must be greater than Size %d", z.MaxSize, z.Size)
			}
			if newLong > z.MaxSize {
				newShort, newLong = int(float64(z.MaxSize*newShort)/float64(newLong)), z.MaxSize
			}
		}
		if newShort < 1 || newLong < 1 {
			return 0, 0, fmt.Errorf("transforms: Resize of a %dx%d image to shorter edge %d gives %dx%d", w, h, z.Size, newLong, newShort)
		}
		if w <= h {
			return newShort, newLong, nil
		}
		return newLong, newShort, nil
	case z.Height < 1 || z.Width < 1:
		return 0, 0, fmt.Errorf("transforms: Resize needs Size or a positive Height and Width, have Height %d, Width %d", z.Height, z.Width)
	case z.MaxSize != 0:
		return 0, 0, fmt.Errorf("transforms: Resize.MaxSize goes only with Size (the shorter edge), not Height x Width")
	}
	return z.Width, z.Height, nil
}

// Apply implements Transform.
func (z Resize) Apply(m *image.RGB, _ *rand.Rand) (*image.RGB, error) {
	ow, oh, err := z.OutputSize(m.Width, m.Height)
	if err != nil {
		return nil, err
	}
	if ow == m.Width && oh == m.Height {
		return m, nil
	}
	return resample(m, 0, 0, m.Width, m.Height, ow, oh, z.Interpolation), nil
}

// The filters' kernels, written so that no two operations can fuse (an explicit float64
// conversion rounds): Pillow's wheels compute them without FMA, and a fused multiply-add
// could move a weight across a rounding boundary of its 22-bit integer.

func boxKernel(x float64) float64 {
	if x > -0.5 && x <= 0.5 {
		return 1
	}
	return 0
}

func triangleKernel(x float64) float64 {
	x = math.Abs(x)
	if x < 1 {
		return 1 - x
	}
	return 0
}

func cubicKernel(x float64) float64 {
	const a = -0.5
	x = math.Abs(x)
	if x < 1 {
		p := float64((a+2)*x) - (a + 3)
		return float64(float64(p*x)*x) + 1
	}
	if x < 2 {
		p := float64(float64(x-5)*x) + 8
		p = float64(p*x) - 4
		return p * a
	}
	return 0
}

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	x = float64(x * math.Pi)
	return math.Sin(x) / x
}

func lanczosKernel(x float64) float64 {
	if -3 <= x && x < 3 {
		return float64(sinc(x) * sinc(x/3))
	}
	return 0
}

// Pillow writes Hamming's constants as C floats.
var hamming0, hamming1 = float64(float32(0.54)), float64(float32(0.46))

func hammingKernel(x float64) float64 {
	x = math.Abs(x)
	if x == 0 {
		return 1
	}
	if x >= 1 {
		return 0
	}
	x = float64(x * math.Pi)
	return float64(math.Sin(x)/x) * (hamming0 + float64(hamming1*math.Cos(x)))
}

func kernel(f Interpolation) (func(float64) float64, float64) {
	switch f {
	case Box:
		return boxKernel, 0.5
	case Bicubic:
		return cubicKernel, 2
	case Lanczos:
		return lanczosKernel, 3
	case Hamming:
		return hammingKernel, 1
	}
	return triangleKernel, 1
}

// precision is Pillow's PRECISION_BITS for 8-bit images: 32 - 8 bits of value - 2 of headroom.
const precision = 22

// weights are one pass's taps: output i reads n[i] inputs from first[i] with the integer
// weights k[i*size : i*size+n[i]].
type weights struct {
	first, n []int
	k        []int32
	size     int
}

// taps computes the weights of resampling inSize pixels to outSize, as Pillow's
// precompute_coeffs and normalize_coeffs_8bpc: the kernel is stretched by the reduction
// (antialiasing), each output's weights normalised to sum 1, then scaled to 2^22 and rounded
// half away from zero.
func taps(inSize, outSize int, f Interpolation) weights {
	kern, support := kernel(f)
	scale := float64(inSize) / float64(outSize)
	filterScale := max(scale, 1)
	support *= filterScale
	size := int(math.Ceil(support))*2 + 1
	w := weights{first: make([]int, outSize), n: make([]int, outSize), k: make([]int32, outSize*size), size: size}
	ss := 1 / filterScale
	buf := make([]float64, size)
	for i := range outSize {
		center := (float64(i) + 0.5) * scale
		lo := max(int(center-support+0.5), 0)
		hi := min(int(center+support+0.5), inSize)
		n := hi - lo
		sum := 0.0
		for x := range n {
			buf[x] = kern(float64(float64(x+lo)-center+0.5) * ss)
			sum += buf[x]
		}
		k := w.k[i*size : i*size+size]
		for x := range n {
			v := buf[x]
			if sum != 0 {
				v /= sum
			}
			if v < 0 {
				k[x] = int32(-0.5 + v*(1<<precision))
			} else {
				k[x] = int32(0.5 + v*(1<<precision))
			}
		}
		w.first[i], w.n[i] = lo, n
	}
	return w
}

func clip8(v int32) uint8 {
	v >>= precision
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v)
}

// resample resizes the w x h window of m whose corner is (x0, y0) to ow x oh, as Pillow's
// Image.resize of that window cropped out first (the window's edges are the image's edges).
//
// Pillow 13 runs the vertical pass first when the image loses more than twice as many rows
// as columns (oh < h and 2(w-ow) < h-oh), else the horizontal one: measured on 456 random
// sizes from 3 to 800 pixels, every filter; each order rounds its intermediate to 8 bits,
// so the order shows in the pixels.
func resample(m *image.RGB, x0, y0, w, h, ow, oh int, f Interpolation) *image.RGB {
	if f == Nearest {
		return nearest(m, x0, y0, w, h, ow, oh)
	}
	win := plane{pix: m.Pix, stride: m.Width * 3, off: (y0*m.Width + x0) * 3, w: w, h: h}
	switch {
	case ow == w && oh == h:
		return win.copyOut()
	case ow == w:
		return win.vertical(taps(h, oh, f)).image()
	case oh == h:
		return win.horizontal(taps(w, ow, f)).image()
	case oh < h && 2*(w-ow) < h-oh:
		horiz := taps(w, ow, f)
		first, last := horiz.span()
		horiz.shift(first)
		cols := plane{pix: win.pix, stride: win.stride, off: win.off + first*3, w: last - first, h: h}
		return cols.vertical(taps(h, oh, f)).horizontal(horiz).image()
	}
	vert := taps(h, oh, f)
	first, last := vert.span()
	vert.shift(first)
	rows := plane{pix: win.pix, stride: win.stride, off: win.off + first*win.stride, w: w, h: last - first}
	return rows.horizontal(taps(w, ow, f)).vertical(vert).image()
}

// span is the range of inputs the weights read.
func (t weights) span() (first, last int) {
	n := len(t.first)
	return t.first[0], t.first[n-1] + t.n[n-1]
}

// shift counts the inputs from first.
func (t weights) shift(first int) {
	for i := range t.first {
		t.first[i] -= first
	}
}

// plane is a w x h RGB window of a pixel buffer: row y starts at off + y*stride.
type plane struct {
	pix         []uint8
	stride, off int
	w, h        int
}

func (p plane) row(y int) []uint8 { return p.pix[p.off+y*p.stride : p.off+y*p.stride+p.w*3] }

func (p plane) copyOut() *image.RGB {
	out := &image.RGB{Width: p.w, Height: p.h, Pix: make([]uint8, p.w*p.h*3)}
	for y := range p.h {
		copy(out.Pix[y*p.w*3:(y+1)*p.w*3], p.row(y))
	}
	return out
}

// image wraps a plane that horizontal or vertical made (its own compact buffer).
func (p plane) image() *image.RGB { return &image.RGB{Width: p.w, Height: p.h, Pix: p.pix} }

// horizontal is Pillow's horizontal 8-bit pass: each row resampled to len(t.first) columns.
func (p plane) horizontal(t weights) plane {
	ow := len(t.first)
	out := plane{pix: make([]uint8, p.h*ow*3), stride: ow * 3, w: ow, h: p.h}
	for y := range p.h {
		in := p.row(y)
		dst := out.row(y)
		for i := range ow {
			k := t.k[i*t.size : i*t.size+t.n[i]]
			px := in[t.first[i]*3:]
			s0, s1, s2 := int32(1<<(precision-1)), int32(1<<(precision-1)), int32(1<<(precision-1))
			for _, kx := range k {
				q := px[:3:3]
				s0 += int32(q[0]) * kx
				s1 += int32(q[1]) * kx
				s2 += int32(q[2]) * kx
				px = px[3:]
			}
			d := dst[i*3 : i*3+3 : i*3+3]
			d[0], d[1], d[2] = clip8(s0), clip8(s1), clip8(s2)
		}
	}
	return out
}

// vertical is Pillow's vertical 8-bit pass: each column resampled to len(t.first) rows.
func (p plane) vertical(t weights) plane {
	oh := len(t.first)
	out := plane{pix: make([]uint8, oh*p.w*3), stride: p.w * 3, w: p.w, h: oh}
	acc := make([]int32, p.w*3)
	for j := range oh {
		for i := range acc {
			acc[i] = 1 << (precision - 1)
		}
		for y, ky := range t.k[j*t.size : j*t.size+t.n[j]] {
			row := p.row(t.first[j] + y)
			acc := acc[:len(row)]
			for i, q := range row {
				acc[i] += int32(q) * ky
			}
		}
		dst := out.row(j)
		dst = dst[:len(acc)]
		for i, s := range acc {
			dst[i] = clip8(s)
		}
	}
	return out
}

// nearest is Pillow's NEAREST resize: an affine scale whose source coordinate starts at half
// a step and grows by the step (a float sum, as Pillow accumulates it), truncated.
func nearest(m *image.RGB, x0, y0, w, h, ow, oh int) *image.RGB {
	sx := float64(float32(w)) / float64(ow)
	sy := float64(float32(h)) / float64(oh)
	xs := make([]int, ow)
	xo := sx * 0.5
	for x := range ow {
		xs[x] = coord(xo, w)
		xo += sx
	}
	out := &image.RGB{Width: ow, Height: oh, Pix: make([]uint8, ow*oh*3)}
	yo := sy * 0.5
	for y := range oh {
		yi := coord(yo, h)
		yo += sy
		if yi < 0 {
			continue
		}
		in := m.Pix[((y0+yi)*m.Width+x0)*3:]
		row := out.Pix[y*ow*3 : (y+1)*ow*3]
		for x, xi := range xs {
			if xi >= 0 {
				copy(row[x*3:x*3+3], in[xi*3:xi*3+3])
			}
		}
	}
	return out
}

// coord is Pillow's COORD: -1 below 0, else truncated; -1 too at or past size (left black,
// as Pillow leaves such pixels).
func coord(v float64, size int) int {
	if v < 0 {
		return -1
	}
	if i := int(v); i < size {
		return i
	}
	return -1
}
