package image

import stdimage "image"

// This file turns a decoded JPEG's YCbCr planes into RGB as libjpeg-turbo does by default
// (and so Pillow): chroma upsampled by its "fancy" triangle filter (jdsample.c's h2v1, h2v2
// and h1v2 cases; other ratios repeat samples, as Go's decoder does), then converted with
// jdcolor.c's fixed-point tables. What still differs from Pillow is the inverse DCT: Go's
// image/jpeg does not compute libjpeg's ISLOW one.

const fixBits = 16

func fix(x float64) int32 { return int32(x*(1<<fixBits) + 0.5) }

var crR, cbB, crG, cbG [256]int32

func init() {
	half := int32(1) << (fixBits - 1)
	for i := range 256 {
		x := int32(i - 128)
		crR[i] = (fix(1.40200)*x + half) >> fixBits
		cbB[i] = (fix(1.77200)*x + half) >> fixBits
		crG[i] = -fix(0.71414) * x
		cbG[i] = -fix(0.34414)*x + half
	}
}

func clamp8(v int32) uint8 {
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v)
}

// ycbcrToRGB converts m into p (HWC, w*h*3 bytes).
func ycbcrToRGB(m *stdimage.YCbCr, p []uint8) {
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	var cb, cr []uint8 // full-resolution chroma, w*h each
	hs, vs := 1, 1
	switch m.SubsampleRatio {
	case stdimage.YCbCrSubsampleRatio422:
		hs = 2
	case stdimage.YCbCrSubsampleRatio420:
		hs, vs = 2, 2
	case stdimage.YCbCrSubsampleRatio440:
		vs = 2
	}
	cw, ch := (w+hs-1)/hs, (h+vs-1)/vs
	fancy := (hs == 2 && cw > 2) || (hs == 1 && vs == 2)
	if fancy {
		c0 := m.COffset(b.Min.X, b.Min.Y)
		cb = upsample(m.Cb[c0:], m.CStride, cw, ch, hs, vs, w, h)
		cr = upsample(m.Cr[c0:], m.CStride, cw, ch, hs, vs, w, h)
	}
	for y := range h {
		yr := m.Y[m.YOffset(b.Min.X, b.Min.Y+y):]
		for x := range w {
			yy := int32(yr[x])
			var u, v uint8
			if fancy {
				u, v = cb[y*w+x], cr[y*w+x]
			} else {
				ci := m.COffset(x+b.Min.X, y+b.Min.Y)
				u, v = m.Cb[ci], m.Cr[ci]
			}
			i := (y*w + x) * 3
			p[i] = clamp8(yy + crR[v])
			p[i+1] = clamp8(yy + (cbG[u]+crG[v])>>fixBits)
			p[i+2] = clamp8(yy + cbB[u])
		}
	}
}

// upsample is libjpeg-turbo's fancy upsampling of one chroma plane of cw x ch samples (row
// stride stride) to w x h; rows beyond the edges repeat the edge rows, as libjpeg's context
// rows do.
func upsample(src []uint8, stride, cw, ch, hs, vs, w, h int) []uint8 {
	out := make([]uint8, w*h)
	colsum := make([]int32, cw)
	for oy := range h {
		row := src[(oy/vs)*stride:]
		if vs == 2 {
			near, v := oy/2, oy%2
			far := max(near-1, 0)
			bias := int32(1)
			if v == 1 {
				far, bias = min(near+1, ch-1), 2
			}
			nr, fr := src[near*stride:], src[far*stride:]
			for i := range cw {
				colsum[i] = 3*int32(nr[i]) + int32(fr[i])
			}
			if hs == 1 { // h1v2
				for x := range w {
					out[oy*w+x] = uint8((colsum[x] + bias) >> 2)
				}
				continue
			}
			// h2v2
			o := out[oy*w:]
			for i := range cw {
				var a, c int32
				if i == 0 {
					a = (colsum[0]*4 + 8) >> 4
				} else {
					a = (colsum[i]*3 + colsum[i-1] + 8) >> 4
				}
				if i == cw-1 {
					c = (colsum[i]*4 + 7) >> 4
				} else {
					c = (colsum[i]*3 + colsum[i+1] + 7) >> 4
				}
				if 2*i < w {
					o[2*i] = uint8(a)
				}
				if 2*i+1 < w {
					o[2*i+1] = uint8(c)
				}
			}
			continue
		}
		// h2v1
		o := out[oy*w:]
		for i := range cw {
			in := int32(row[i])
			a, c := in, in
			if i > 0 {
				a = (3*in + int32(row[i-1]) + 1) >> 2
			}
			if i < cw-1 {
				c = (3*in + int32(row[i+1]) + 2) >> 2
			}
			if 2*i < w {
				o[2*i] = uint8(a)
			}
			if 2*i+1 < w {
				o[2*i+1] = uint8(c)
			}
		}
	}
	return out
}
