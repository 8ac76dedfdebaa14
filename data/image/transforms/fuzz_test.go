package transforms

import (
	"math/rand/v2"
	"testing"

	"github.com/goaccel/goaccel/data/image"
)

// FuzzResize: any sizes and filter give an image of the asked size, a constant image stays
// that constant (each output's weights sum to one), and RandomResizedCrop's window lies in
// the image, a rotation keeps the size; nothing panics. Seeds: the fixtures' sizes (testdata/resize/cases.json).
func FuzzResize(f *testing.F) {
	for _, s := range [][4]int{{64, 48, 24, 15}, {51, 67, 68, 16}, {70, 50, 1, 50}, {57, 53, 72, 70}, {64, 48, 81, 12}} {
		f.Add(uint16(s[0]), uint16(s[1]), uint16(s[2]), uint16(s[3]), uint8(1), uint8(200), uint64(7))
	}
	f.Fuzz(func(t *testing.T, w, h, ow, oh uint16, filter, value uint8, seed uint64) {
		w, h, ow, oh = 1+w%300, 1+h%300, 1+ow%300, 1+oh%300
		interp := Interpolation(int(filter) % len(interpolationNames))
		m := &image.RGB{Width: int(w), Height: int(h), Pix: make([]uint8, int(w)*int(h)*3)}
		for i := range m.Pix {
			m.Pix[i] = value
		}
		out, err := Resize{Height: int(oh), Width: int(ow), Interpolation: interp}.Apply(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		if out.Width != int(ow) || out.Height != int(oh) || len(out.Pix) != int(ow)*int(oh)*3 {
			t.Fatalf("%v %dx%d -> %dx%d gave %dx%d (%d bytes)", interp, w, h, ow, oh, out.Width, out.Height, len(out.Pix))
		}
		for i, v := range out.Pix {
			if v != value {
				t.Fatalf("%v %dx%d -> %dx%d of constant %d: value %d at %d", interp, w, h, ow, oh, value, v, i)
			}
		}
		c := RandomResizedCrop{Height: int(oh%64) + 1, Width: int(ow%64) + 1, Interpolation: interp}
		r := rand.New(rand.NewPCG(seed, 1))
		top, left, ch, cw, err := c.Params(int(w), int(h), r)
		if err != nil || top < 0 || left < 0 || ch < 1 || cw < 1 || top+ch > int(h) || left+cw > int(w) {
			t.Fatalf("window top %d left %d %dx%d of %dx%d (%v)", top, left, cw, ch, w, h, err)
		}
		if _, err := c.Apply(m, r); err != nil {
			t.Fatal(err)
		}
		// A rotation by any angle keeps the size, and a constant image stays that constant
		// where the fill is the same constant.
		rot := rotate(m, float64(seed%100000)/77-600, [3]uint8{value, value, value})
		if rot.Width != m.Width || rot.Height != m.Height {
			t.Fatalf("rotate gave %dx%d of %dx%d", rot.Width, rot.Height, w, h)
		}
		for _, v := range rot.Pix {
			if v != value {
				t.Fatalf("rotate of constant %d gave %d", value, v)
			}
		}
	})
}
