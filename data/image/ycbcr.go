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

// clampTab[v+clampOff] is clamp8(v) for the sums of convertRow (luma 0..255 plus a chroma term
// within -256..256), so the loop needs no branch.
var clampTab [1024]uint8

const clampOff = 384

func init() {
	for i := range clampTab {
		clampTab[i] = clamp8(int32(i - clampOff))
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

// ycbcrToRGB converts m into p (HWC, w*h*3 bytes), a row at a time: the row's chroma
// upsampled (or looked up) into two row buffers, then converted.
func ycbcrToRGB(m *stdimage.YCbCr, p []uint8) {
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
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
	full := m.SubsampleRatio == stdimage.YCbCrSubsampleRatio444
	c0 := m.COffset(b.Min.X, b.Min.Y)
	ub, vb := make([]uint8, w), make([]uint8, w)
	colsum := make([]int32, cw)
	for y := range h {
		yr := m.Y[m.YOffset(b.Min.X, b.Min.Y+y):][:w]
		u, v := ub, vb
		switch {
		case fancy:
			upsampleRow(m.Cb[c0:], m.CStride, cw, ch, hs, vs, y, colsum, ub)
			upsampleRow(m.Cr[c0:], m.CStride, cw, ch, hs, vs, y, colsum, vb)
		case full:
			ci := m.COffset(b.Min.X, b.Min.Y+y)
			u, v = m.Cb[ci:][:w], m.Cr[ci:][:w]
		default: // samples repeated, as Go's decoder does
			for x := range w {
				ci := m.COffset(x+b.Min.X, y+b.Min.Y)
				ub[x], vb[x] = m.Cb[ci], m.Cr[ci]
			}
		}
		convertRow(p[y*w*3:][:w*3], yr, u, v)
	}
}

// convertRow is jdcolor.c's YCbCr to RGB conversion of one row: luma yr, chroma u and v (as
// long as yr), into out (3 bytes a pixel).
func convertRow(out, yr, u, v []uint8) {
	u, v = u[:len(yr)], v[:len(yr)]
	out = out[:3*len(yr)]
	for x, yv := range yr {
		yy := int32(yv)
		cu, cv := u[x], v[x]
		o := out[3*x : 3*x+3 : 3*x+3]
		o[0] = clampTab[(yy+crR[cv]+clampOff)&1023]
		o[1] = clampTab[(yy+(cbG[cu]+crG[cv])>>fixBits+clampOff)&1023]
		o[2] = clampTab[(yy+cbB[cu]+clampOff)&1023]
	}
}

// upsampleRow is libjpeg-turbo's fancy upsampling of one chroma plane of cw x ch samples (row
// stride stride) for output row oy, into o (the row's width); rows beyond the edges repeat
// the edge rows, as libjpeg's context rows do. colsum is scratch of cw values.
func upsampleRow(src []uint8, stride, cw, ch, hs, vs, oy int, colsum []int32, o []uint8) {
	w := len(o)
	if vs == 2 {
		near, v := oy/2, oy%2
		far := max(near-1, 0)
		bias := int32(1)
		if v == 1 {
			far, bias = min(near+1, ch-1), 2
		}
		nr, fr := src[near*stride:][:cw], src[far*stride:][:cw]
		colsum = colsum[:cw]
		for i := range colsum {
			colsum[i] = 3*int32(nr[i]) + int32(fr[i])
		}
		if hs == 1 { // h1v2
			for x := range o {
				o[x] = uint8((colsum[x] + bias) >> 2)
			}
			return
		}
		// h2v2
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
			if 2*i+1 < w {
				o[2*i], o[2*i+1] = uint8(a), uint8(c)
			} else {
				o[2*i] = uint8(a)
			}
		}
		return
	}
	// h2v1
	row := src[oy*stride:][:cw]
	for i := range cw {
		in := int32(row[i])
		a, c := in, in
		if i > 0 {
			a = (3*in + int32(row[i-1]) + 1) >> 2
		}
		if i < cw-1 {
			c = (3*in + int32(row[i+1]) + 2) >> 2
		}
		if 2*i+1 < w {
			o[2*i], o[2*i+1] = uint8(a), uint8(c)
		} else {
			o[2*i] = uint8(a)
		}
	}
}
