package image

import (
	"bytes"
	"encoding/binary"
	stdimage "image"
	"image/gif"
)

// orientation is the EXIF Orientation tag (1 to 8) of the file, or 0 when it has none or it
// cannot be read (as Pillow, a broken EXIF block leaves the image as it is). It is read from
// JPEG's APP1 "Exif" segment, PNG's eXIf chunk, WebP's EXIF chunk and TIFF's own first IFD.
func orientation(format string, b []byte) int {
	switch format {
	case "jpeg":
		return tiffOrientation(jpegExif(b))
	case "png":
		return tiffOrientation(pngExif(b))
	case "webp":
		return tiffOrientation(webpExif(b))
	case "tiff":
		return tiffOrientation(b)
	}
	return 0
}

// jpegExif returns the TIFF block of the first APP1 segment that starts with "Exif\0\0".
func jpegExif(b []byte) []byte {
	i := 2
	for i+4 <= len(b) {
		if b[i] != 0xff {
			return nil
		}
		marker := b[i+1]
		if marker == 0xff { // fill byte
			i++
			continue
		}
		if marker == 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker == 0x01 {
			i += 2
			continue
		}
		if marker == 0xda || marker == 0xd9 { // start of scan, end of image: no more headers
			return nil
		}
		n := int(binary.BigEndian.Uint16(b[i+2:]))
		if n < 2 || i+2+n > len(b) {
			return nil
		}
		seg := b[i+4 : i+2+n]
		if marker == 0xe1 && bytes.HasPrefix(seg, []byte("Exif\x00\x00")) {
			return seg[6:]
		}
		i += 2 + n
	}
	return nil
}

// pngExif returns the data of the eXIf chunk that comes before the image data.
func pngExif(b []byte) []byte {
	i := 8
	for i+8 <= len(b) {
		n := int(binary.BigEndian.Uint32(b[i:]))
		typ := string(b[i+4 : i+8])
		if n < 0 || i+12+n > len(b) || typ == "IDAT" || typ == "IEND" {
			return nil
		}
		if typ == "eXIf" {
			return b[i+8 : i+8+n]
		}
		i += 12 + n
	}
	return nil
}

// webpExif returns the data of the EXIF chunk of a WebP file.
func webpExif(b []byte) []byte {
	i := 12
	for i+8 <= len(b) {
		n := int(binary.LittleEndian.Uint32(b[i+4:]))
		if n < 0 || i+8+n > len(b) {
			return nil
		}
		if string(b[i:i+4]) == "EXIF" {
			d := b[i+8 : i+8+n]
			return bytes.TrimPrefix(d, []byte("Exif\x00\x00"))
		}
		i += 8 + n + n&1
	}
	return nil
}

// tiffOrientation reads tag 0x0112 (Orientation) of the first IFD of a TIFF block.
func tiffOrientation(t []byte) int {
	if len(t) < 8 {
		return 0
	}
	var bo binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 0
	}
	off := int64(bo.Uint32(t[4:]))
	if off < 8 || off+2 > int64(len(t)) {
		return 0
	}
	n := int(bo.Uint16(t[off:]))
	for k := range n {
		e := off + 2 + int64(k)*12
		if e+12 > int64(len(t)) {
			return 0
		}
		if bo.Uint16(t[e:]) != 0x0112 {
			continue
		}
		var v int
		switch bo.Uint16(t[e+2:]) {
		case 3: // SHORT
			v = int(bo.Uint16(t[e+8:]))
		case 4: // LONG
			v = int(bo.Uint32(t[e+8:]))
		default:
			return 0
		}
		if v < 1 || v > 8 {
			return 0
		}
		return v
	}
	return 0
}

// transpose applies ImageOps.exif_transpose's operation for orientation o (2 to 8).
func transpose(m *RGB, o int) *RGB {
	w, h := m.Width, m.Height
	ow, oh := w, h
	if o >= 5 {
		ow, oh = h, w
	}
	out := &RGB{Width: ow, Height: oh, Pix: make([]uint8, len(m.Pix))}
	for y := range oh {
		for x := range ow {
			var sx, sy int
			switch o {
			case 2: // mirror left-right
				sx, sy = w-1-x, y
			case 3: // rotate 180
				sx, sy = w-1-x, h-1-y
			case 4: // mirror top-bottom
				sx, sy = x, h-1-y
			case 5: // transpose
				sx, sy = y, x
			case 6: // rotate 90 clockwise (Pillow's ROTATE_270)
				sx, sy = y, h-1-x
			case 7: // transverse
				sx, sy = w-1-y, h-1-x
			case 8: // rotate 90 counter-clockwise (Pillow's ROTATE_90)
				sx, sy = w-1-y, x
			}
			copy(out.Pix[(y*ow+x)*3:(y*ow+x)*3+3], m.Pix[(sy*w+sx)*3:(sy*w+sx)*3+3])
		}
	}
	return out
}

// decodeGIF decodes the first frame of a GIF. Go's decoder blanks the palette entry of the
// transparent index; Pillow's convert("RGB") keeps that entry's colour, so the transparency
// flag of the frame's Graphic Control Extension is cleared in a copy before decoding.
func decodeGIF(b []byte) (stdimage.Image, error) {
	c := append([]byte(nil), b...)
	if len(c) >= 13 {
		i := 13
		if c[10]&0x80 != 0 {
			i += 3 << (int(c[10]&7) + 1)
		}
		for i < len(c) && c[i] == 0x21 && i+2 < len(c) {
			label := c[i+1]
			j := i + 2
			first := true
			for j < len(c) && c[j] != 0 {
				if label == 0xf9 && first && c[j] >= 4 && j+1 < len(c) {
					c[j+1] &^= 1
				}
				first = false
				j += int(c[j]) + 1
			}
			i = j + 1
		}
	}
	return gif.Decode(bytes.NewReader(c))
}
