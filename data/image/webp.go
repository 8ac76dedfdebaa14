package image

import stdimage "image"

// webpToRGB converts a lossy WebP's planes (VP8's 4:2:0 YUV, limited range) as libwebp
// does for Pillow: its fancy upsampler (dsp/upsampling.c), then its 14-bit fixed-point
// BT.601 conversion (dsp/yuv.h). golang.org/x/image/webp hands the planes over as a JPEG-style
// (full range) image.YCbCr, which would shift the colours.
func webpToRGB(m *stdimage.YCbCr, p []uint8) {
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	cw := (w + 1) / 2
	ch := (h + 1) / 2
	c0 := m.COffset(b.Min.X, b.Min.Y)
	row := func(plane []uint8, k int) []uint8 { return plane[c0+k*m.CStride : c0+k*m.CStride+cw] }
	u, v := make([]int, w), make([]int, w)
	for y := range h {
		// The chroma rows around luma row y, and whether y is the upper row of the pair
		// (weighting a) or the lower one (weighting c).
		var a, c int
		top := true
		switch {
		case y == 0:
			a, c = 0, 0
		case y%2 == 1:
			a, c = (y-1)/2, min((y+1)/2, ch-1)
		default:
			a, c, top = y/2-1, y/2, false
		}
		webpUpsampleRow(row(m.Cb, a), row(m.Cb, c), top, u)
		webpUpsampleRow(row(m.Cr, a), row(m.Cr, c), top, v)
		yr := m.Y[m.YOffset(b.Min.X, b.Min.Y+y):]
		for x := range w {
			yy := int(yr[x])
			i := (y*w + x) * 3
			p[i] = vp8Clip8(mulHi(yy, 19077) + mulHi(v[x], 26149) - 14234)
			p[i+1] = vp8Clip8(mulHi(yy, 19077) - mulHi(u[x], 6419) - mulHi(v[x], 13320) + 8708)
			p[i+2] = vp8Clip8(mulHi(yy, 19077) + mulHi(u[x], 33050) - 17685)
		}
	}
}

func mulHi(v, coeff int) int { return (v * coeff) >> 8 }

func vp8Clip8(v int) uint8 {
	const fix2, mask2 = 6, (256 << 6) - 1
	if v&^mask2 == 0 {
		return uint8(v >> fix2)
	}
	if v < 0 {
		return 0
	}
	return 255
}

// webpUpsampleRow fills out (one value per pixel) from the chroma rows a and c: libwebp's
// UpsampleRgbLinePair for the upper row of a pair (top) or the lower one.
func webpUpsampleRow(a, c []uint8, top bool, out []int) {
	w := len(out)
	tl, l := int(a[0]), int(c[0])
	edge := func(tl, l int) int {
		if top {
			return (3*tl + l + 2) >> 2
		}
		return (3*l + tl + 2) >> 2
	}
	out[0] = edge(tl, l)
	last := (w - 1) >> 1
	for x := 1; x <= last; x++ {
		t, uv := int(a[x]), int(c[x])
		avg := tl + t + l + uv + 8
		d12 := (avg + 2*(t+l)) >> 3
		d03 := (avg + 2*(tl+uv)) >> 3
		if top {
			out[2*x-1], out[2*x] = (d12+tl)>>1, (d03+t)>>1
		} else {
			out[2*x-1], out[2*x] = (d03+l)>>1, (d12+uv)>>1
		}
		tl, l = t, uv
	}
	if w%2 == 0 {
		out[w-1] = edge(tl, l)
	}
}
