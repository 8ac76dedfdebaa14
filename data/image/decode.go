package image

import (
	"bytes"
	"errors"
	"fmt"
	stdimage "image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"os"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
	"golang.org/x/image/webp"
)

// DefaultMaxPixels is the largest image (width x height) a Decoder accepts unless told
// otherwise: twice Pillow's Image.MAX_IMAGE_PIXELS (89,478,485), the size above which Pillow
// raises DecompressionBombError rather than only warning.
const DefaultMaxPixels = 2 * 89478485

// RGB is an 8-bit RGB image in goaccel's image layout, HWC: Pix holds Height rows of Width
// pixels of 3 bytes (red, green, blue), so the value of channel c at row y, column x is
// Pix[(y*Width+x)*3+c].
type RGB struct {
	Width, Height int
	Pix           []uint8
}

// At returns the red, green and blue values of the pixel at column x, row y.
func (m *RGB) At(x, y int) (r, g, b uint8) {
	i := (y*m.Width + x) * 3
	return m.Pix[i], m.Pix[i+1], m.Pix[i+2]
}

// Decoder turns image files into RGB images the way transformers' load_image does with
// Pillow: the EXIF orientation applied (ImageOps.exif_transpose), then convert("RGB").
// The zero value is ready to use.
type Decoder struct {
	// MaxPixels is the largest width x height accepted; a larger image is refused from its
	// header, before any pixel is decoded. 0 means DefaultMaxPixels; a negative value means
	// no limit.
	MaxPixels int64
}

// Load reads and decodes the image file at path with the zero Decoder.
func Load(path string) (*RGB, error) { return Decoder{}.Load(path) }

// Load reads and decodes the image file at path.
func (d Decoder) Load(path string) (*RGB, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	return d.Decode(path, b)
}

// Decode decodes the image file held in data; name (a path) is only used in errors. The
// format (PNG, JPEG, GIF, BMP, TIFF, WebP, PPM/PGM/PBM) is found from the data, not from the name.
func (d Decoder) Decode(name string, data []byte) (m *RGB, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("image: %s: decoder failed: %v", name, r)
		}
	}()
	format := sniff(data)
	if format == "" {
		return nil, fmt.Errorf("image: %s: not an image in a known format (PNG, JPEG, GIF, BMP, TIFF, WebP, PPM/PGM/PBM)", name)
	}
	cfg, err := codecs[format].config(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("image: %s: %s header: %w", name, format, err)
	}
	limit := d.MaxPixels
	if limit == 0 {
		limit = DefaultMaxPixels
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, fmt.Errorf("image: %s: %s header says %dx%d pixels", name, format, cfg.Width, cfg.Height)
	}
	if px := int64(cfg.Width) * int64(cfg.Height); limit > 0 && px > limit {
		return nil, fmt.Errorf("image: %s: %dx%d = %d pixels is over the limit of %d (a decompression bomb?); raise Decoder.MaxPixels to read it",
			name, cfg.Width, cfg.Height, px, limit)
	}
	if format == "jpeg" && libjpeg != nil {
		m, ok, err := libjpeg(data, cfg.Width, cfg.Height)
		if err != nil {
			return nil, decodeError(name, format, err)
		}
		if ok {
			if o := orientation(format, data); o > 1 {
				m = transpose(m, o)
			}
			return m, nil
		}
	}
	img, err := codecs[format].decode(data)
	if err != nil {
		return nil, decodeError(name, format, err)
	}
	out := toRGB(img, format)
	if o := orientation(format, data); o > 1 {
		out = transpose(out, o)
	}
	return out, nil
}

// libjpeg, when set (built with -tags goaccel_libjpeg), decodes a JPEG file of w x h pixels
// with libjpeg-turbo; ok false leaves the file to image/jpeg.
var libjpeg func(data []byte, w, h int) (m *RGB, ok bool, err error)

// decodeError names the file of a decoder's error, and says truncated when it is.
func decodeError(name, format string, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("image: %s: truncated %s file: %w", name, format, err)
	}
	return fmt.Errorf("image: %s: corrupt or truncated %s file: %w", name, format, err)
}

// sniff names the format from the file's first bytes.
func sniff(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "png"
	case bytes.HasPrefix(b, []byte{0xff, 0xd8}):
		return "jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "gif"
	case bytes.HasPrefix(b, []byte("BM")):
		return "bmp"
	case bytes.HasPrefix(b, []byte("II*\x00")), bytes.HasPrefix(b, []byte("MM\x00*")):
		return "tiff"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "webp"
	case len(b) >= 3 && b[0] == 'P' && b[1] >= '1' && b[1] <= '6' && isPNMSpace(b[2]):
		return "pnm"
	}
	return ""
}

// codecs are the decoders of each format: the header reader and the full decoder.
var codecs = map[string]struct {
	config func(io.Reader) (stdimage.Config, error)
	decode func([]byte) (stdimage.Image, error)
}{
	"png":  {png.DecodeConfig, readerDecoder(png.Decode)},
	"jpeg": {jpeg.DecodeConfig, readerDecoder(jpeg.Decode)},
	"gif":  {gif.DecodeConfig, decodeGIF},
	"bmp":  {bmp.DecodeConfig, readerDecoder(bmp.Decode)},
	"tiff": {tiff.DecodeConfig, readerDecoder(tiff.Decode)},
	"webp": {webp.DecodeConfig, readerDecoder(webp.Decode)},
	"pnm":  {pnmConfig, decodePNM},
}

func readerDecoder(f func(io.Reader) (stdimage.Image, error)) func([]byte) (stdimage.Image, error) {
	return func(b []byte) (stdimage.Image, error) { return f(bytes.NewReader(b)) }
}

// mulDiv255 is a*b/255 rounded as Pillow's MULDIV255 rounds it.
func mulDiv255(a, b int) int {
	t := a*b + 128
	return ((t >> 8) + t) >> 8
}

// toRGB is Pillow's convert("RGB") of the decoded image: gray replicated, alpha dropped
// (not composited), palettes looked up, 16-bit samples cut to their high byte (16-bit gray,
// Pillow's I;16, clipped to 255 instead), CMYK by Pillow's cmyk2rgb.
func toRGB(img stdimage.Image, format string) *RGB {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	out := &RGB{Width: w, Height: h, Pix: make([]uint8, w*h*3)}
	p := out.Pix
	switch m := img.(type) {
	case rgbImage:
		return m.m
	case *stdimage.Gray:
		for y := range h {
			row := m.Pix[y*m.Stride : y*m.Stride+w]
			for x, v := range row {
				i := (y*w + x) * 3
				p[i], p[i+1], p[i+2] = v, v, v
			}
		}
	case *stdimage.Gray16:
		for y := range h {
			for x := range w {
				j := y*m.Stride + 2*x
				v := uint8(255)
				if m.Pix[j] == 0 {
					v = m.Pix[j+1]
				}
				i := (y*w + x) * 3
				p[i], p[i+1], p[i+2] = v, v, v
			}
		}
	case *stdimage.NRGBA:
		for y := range h {
			for x := range w {
				j, i := y*m.Stride+4*x, (y*w+x)*3
				p[i], p[i+1], p[i+2] = m.Pix[j], m.Pix[j+1], m.Pix[j+2]
			}
		}
	case *stdimage.RGBA: // PNG RGB, BMP: opaque pixels copied, others unpremultiplied
		for y := range h {
			for x := range w {
				j, i := y*m.Stride+4*x, (y*w+x)*3
				if m.Pix[j+3] == 255 {
					p[i], p[i+1], p[i+2] = m.Pix[j], m.Pix[j+1], m.Pix[j+2]
					continue
				}
				c := color.NRGBA64Model.Convert(m.RGBAAt(x+b.Min.X, y+b.Min.Y)).(color.NRGBA64)
				p[i], p[i+1], p[i+2] = uint8(c.R>>8), uint8(c.G>>8), uint8(c.B>>8)
			}
		}
	case *stdimage.NRGBA64:
		for y := range h {
			for x := range w {
				j, i := y*m.Stride+8*x, (y*w+x)*3
				p[i], p[i+1], p[i+2] = m.Pix[j], m.Pix[j+2], m.Pix[j+4]
			}
		}
	case *stdimage.YCbCr:
		if format == "webp" {
			webpToRGB(m, p)
		} else {
			ycbcrToRGB(m, p)
		}
	case *stdimage.NYCbCrA: // lossy WebP with alpha: the alpha plane dropped
		webpToRGB(&m.YCbCr, p)
	case *stdimage.CMYK:
		for y := range h {
			for x := range w {
				j, i := y*m.Stride+4*x, (y*w+x)*3
				nk := 255 - int(m.Pix[j+3])
				for c := range 3 {
					p[i+c] = uint8(nk - mulDiv255(int(m.Pix[j+c]), nk))
				}
			}
		}
	case *stdimage.Paletted:
		pal := make([][3]uint8, 256)
		for k, c := range m.Palette {
			n := color.NRGBAModel.Convert(c).(color.NRGBA)
			if rc, ok := c.(color.RGBA); ok {
				n = color.NRGBA{rc.R, rc.G, rc.B, rc.A} // GIF palettes: opaque, or the transparent entry's own RGB
			}
			pal[k] = [3]uint8{n.R, n.G, n.B}
		}
		for y := range h {
			for x, k := range m.Pix[y*m.Stride : y*m.Stride+w] {
				i := (y*w + x) * 3
				c := pal[k]
				p[i], p[i+1], p[i+2] = c[0], c[1], c[2]
			}
		}
	default:
		// RGBA, RGBA64 (PNG, BMP and TIFF without alpha, or TIFF's premultiplied alpha) and
		// anything else: non-premultiplied colour, high byte.
		for y := range h {
			for x := range w {
				c := color.NRGBA64Model.Convert(img.At(x+b.Min.X, y+b.Min.Y)).(color.NRGBA64)
				i := (y*w + x) * 3
				p[i], p[i+1], p[i+2] = uint8(c.R>>8), uint8(c.G>>8), uint8(c.B>>8)
			}
		}
	}
	return out
}
