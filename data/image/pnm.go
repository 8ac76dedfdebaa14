package image

import (
	"fmt"
	stdimage "image"
	"image/color"
	"io"
	"math"
	"strconv"
)

// This file reads the Netpbm formats torchvision's ImageFolder lists (.ppm, .pgm, and their
// .pbm sibling): P1 to P6, plain and binary, decoded as Pillow's PpmImagePlugin does. Samples
// of a maxval other than 255 (or 65535 for gray) are scaled to 255 with Python's round(v /
// maxval * 255); 16-bit gray becomes Pillow's mode I, which convert("RGB") clips to 255.

// pnmHeader is a parsed Netpbm header; data is where the samples start.
type pnmHeader struct {
	kind          byte // '1' to '6'
	width, height int
	maxval        int
	data          int
}

func isPNMSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// pnmToken reads the next header token of b from i, skipping spaces and # comments.
func pnmToken(b []byte, i int) (tok string, next int, err error) {
	for i < len(b) {
		if b[i] == '#' {
			for i < len(b) && b[i] != '\n' && b[i] != '\r' {
				i++
			}
			continue
		}
		if !isPNMSpace(b[i]) {
			break
		}
		i++
	}
	start := i
	for i < len(b) && !isPNMSpace(b[i]) && b[i] != '#' {
		i++
	}
	if start == i || i-start > 20 {
		return "", i, io.ErrUnexpectedEOF
	}
	return string(b[start:i]), i, nil
}

func parsePNMHeader(b []byte) (pnmHeader, error) {
	h := pnmHeader{kind: b[1], maxval: 1}
	i := 2
	vals := []*int{&h.width, &h.height}
	if h.kind != '1' && h.kind != '4' {
		vals = append(vals, &h.maxval)
	}
	for _, p := range vals {
		tok, next, err := pnmToken(b, i)
		if err != nil {
			return h, fmt.Errorf("header: %w", err)
		}
		v, err := strconv.Atoi(tok)
		if err != nil || v <= 0 || v > 1<<30 {
			return h, fmt.Errorf("header value %q", tok)
		}
		*p, i = v, next
	}
	if h.maxval > 65535 {
		return h, fmt.Errorf("maxval %d over 65535", h.maxval)
	}
	if i >= len(b) || !isPNMSpace(b[i]) {
		return h, fmt.Errorf("header: %w", io.ErrUnexpectedEOF)
	}
	h.data = i + 1
	return h, nil
}

func pnmConfig(r io.Reader) (stdimage.Config, error) {
	b := make([]byte, 512)
	n, _ := io.ReadFull(r, b)
	h, err := parsePNMHeader(b[:n])
	if err != nil {
		return stdimage.Config{}, err
	}
	return stdimage.Config{Width: h.width, Height: h.height}, nil
}

// decodePNM returns the image as RGB directly (the caller's toRGB passes *RGB through).
func decodePNM(b []byte) (stdimage.Image, error) {
	h, err := parsePNMHeader(b)
	if err != nil {
		return nil, err
	}
	bands := 1
	if h.kind == '3' || h.kind == '6' {
		bands = 3
	}
	n := h.width * h.height * bands
	samples := make([]int, 0, n)
	data := b[h.data:]
	switch h.kind {
	case '4': // packed bits, rows padded to a byte, 1 = black
		rowBytes := (h.width + 7) / 8
		if len(data) < rowBytes*h.height {
			return nil, io.ErrUnexpectedEOF
		}
		for y := range h.height {
			for x := range h.width {
				bit := data[y*rowBytes+x/8] >> (7 - uint(x%8)) & 1
				samples = append(samples, int(1-bit))
			}
		}
	case '5', '6':
		size := 1
		if h.maxval > 255 {
			size = 2
		}
		if len(data) < n*size {
			return nil, io.ErrUnexpectedEOF
		}
		for k := range n {
			if size == 1 {
				samples = append(samples, int(data[k]))
			} else {
				samples = append(samples, int(data[2*k])<<8|int(data[2*k+1]))
			}
		}
	default: // plain: decimal tokens (P1's digits need no spaces between them)
		i := h.data - 1
		for len(samples) < n {
			for i < len(b) && (isPNMSpace(b[i]) || b[i] == '#') {
				if b[i] == '#' {
					for i < len(b) && b[i] != '\n' && b[i] != '\r' {
						i++
					}
					continue
				}
				i++
			}
			if i >= len(b) {
				return nil, io.ErrUnexpectedEOF
			}
			j := i + 1
			if h.kind != '1' {
				for j < len(b) && b[j] >= '0' && b[j] <= '9' {
					j++
				}
			}
			v, err := strconv.Atoi(string(b[i:j]))
			if err != nil || v > h.maxval {
				return nil, fmt.Errorf("sample %q at byte %d (maxval %d)", b[i:j], i, h.maxval)
			}
			if h.kind == '1' {
				v = 1 - v // 1 is black
			}
			samples = append(samples, v)
			i = j
		}
	}
	out := &RGB{Width: h.width, Height: h.height, Pix: make([]uint8, h.width*h.height*3)}
	for k, v := range samples {
		var s uint8
		switch {
		case h.kind == '1' || h.kind == '4':
			s = uint8(255 * v)
		case bands == 1 && h.maxval > 255: // mode I, clipped by convert("RGB")
			if h.maxval != 65535 {
				v = int(math.RoundToEven(float64(v) / float64(h.maxval) * 65535))
			}
			s = uint8(min(v, 255))
		case h.maxval == 255:
			s = uint8(min(v, 255))
		default:
			s = uint8(min(255, math.RoundToEven(float64(v)/float64(h.maxval)*255)))
		}
		if bands == 1 {
			out.Pix[3*k], out.Pix[3*k+1], out.Pix[3*k+2] = s, s, s
		} else {
			out.Pix[k] = s
		}
	}
	return rgbImage{out}, nil
}

// rgbImage carries an already converted RGB through the image.Image interface to toRGB.
type rgbImage struct{ m *RGB }

func (r rgbImage) ColorModel() color.Model { return color.RGBAModel }

func (r rgbImage) Bounds() stdimage.Rectangle { return stdimage.Rect(0, 0, r.m.Width, r.m.Height) }

func (r rgbImage) At(x, y int) color.Color {
	cr, cg, cb := r.m.At(x, y)
	return color.RGBA{cr, cg, cb, 255}
}
