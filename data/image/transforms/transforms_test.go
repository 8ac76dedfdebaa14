package transforms

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data/image"
)

// row is a 1-pixel-high image whose pixels' red values are vals (green and blue 0).
func row(vals ...uint8) *image.RGB {
	m := &image.RGB{Width: len(vals), Height: 1, Pix: make([]uint8, 3*len(vals))}
	for i, v := range vals {
		m.Pix[3*i] = v
	}
	return m
}

func reds(m *image.RGB) []uint8 {
	var out []uint8
	for i := 0; i < len(m.Pix); i += 3 {
		out = append(out, m.Pix[i])
	}
	return out
}

// TestPadModes: torchvision's padding modes, numpy.pad's meanings (the middle row of a
// 3-row image padded by 2).
func TestPadModes(t *testing.T) {
	m := &image.RGB{Width: 3, Height: 3, Pix: make([]uint8, 27)}
	for y := range 3 {
		for x := range 3 {
			m.Pix[(y*3+x)*3] = uint8(10*y + x + 1)
		}
	}
	for mode, want := range map[string][]uint8{
		PadConstant:  {7, 7, 11, 12, 13, 7, 7},
		PadEdge:      {11, 11, 11, 12, 13, 13, 13},
		PadReflect:   {13, 12, 11, 12, 13, 12, 11},
		PadSymmetric: {12, 11, 11, 12, 13, 13, 12},
	} {
		p, err := pad(m, 2, mode, 7)
		if err != nil {
			t.Fatal(err)
		}
		if got := reds(p)[3*7 : 4*7]; !slices.Equal(got, want) { // padded row 3 is the image's row 1
			t.Errorf("%s: %v, want %v", mode, got, want)
		}
	}
	if _, err := pad(m, 3, PadReflect, 0); err == nil || !strings.Contains(err.Error(), "at least 4 pixels") {
		t.Errorf("reflect padding wider than the image: %v", err)
	}
}

// TestRandomCropAndFlipDraws: RandomCrop draws the top, then the left corner, each uniform
// over the positions that fit (torch.randint(0, h - th + 1)); the flip mirrors with
// probability P; over many draws both follow those distributions.
func TestRandomCropAndFlipDraws(t *testing.T) {
	m := &image.RGB{Width: 4, Height: 4, Pix: make([]uint8, 48)}
	for i := range 16 {
		m.Pix[3*i] = uint8(i + 1)
	}
	crop := RandomCrop{Size: 4, Padding: 1}
	counts := map[[2]int]int{}
	const n = 36000
	r := rand.New(rand.NewPCG(1, 2))
	for range n {
		c, err := crop.Apply(m, r)
		if err != nil {
			t.Fatal(err)
		}
		// Pixel 6 (row 1, column 1) is at (2, 2) of the padded image, in every window: where it
		// landed gives the corner.
		at := slices.Index(reds(c), 6)
		top, left := 2-at/4, 2-at%4
		counts[[2]int{top, left}]++
	}
	for top := range 3 {
		for left := range 3 {
			got := float64(counts[[2]int{top, left}]) / n
			if math.Abs(got-1.0/9) > 0.01 {
				t.Errorf("corner (%d, %d) drawn %.4f of the time, want 1/9 (counts %v)", top, left, got, counts)
			}
		}
	}
	flips := 0
	for range n {
		f, err := RandomHorizontalFlip{P: 0.3}.Apply(row(1, 2, 3), r)
		if err != nil {
			t.Fatal(err)
		}
		if reds(f)[0] == 3 {
			flips++
		}
	}
	if got := float64(flips) / n; math.Abs(got-0.3) > 0.01 {
		t.Errorf("flipped %.4f of the time, want 0.3", got)
	}
}

// TestCenterCropAndNormalize: CenterCrop's corner rounds halves to even as torchvision's
// int(round(...)); Normalize is ToTensor's /255, then (x - mean) / std per channel.
func TestCenterCropAndNormalize(t *testing.T) {
	for _, c := range []struct{ w, size, left int }{{5, 2, 2}, {7, 2, 2}, {6, 2, 2}, {9, 2, 4}, {4, 1, 2}} {
		vals := make([]uint8, c.w)
		for i := range vals {
			vals[i] = uint8(i)
		}
		m := &image.RGB{Width: c.w, Height: c.size, Pix: make([]uint8, 3*c.w*c.size)}
		copy(m.Pix, row(vals...).Pix)
		got, err := CenterCrop{Size: c.size}.Apply(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		if reds(got)[0] != uint8(c.left) {
			t.Errorf("CenterCrop(%d) of width %d starts at column %d, want %d", c.size, c.w, reds(got)[0], c.left)
		}
	}
	n := Normalize{Mean: [3]float32{0.5, 0.25, 0}, Std: [3]float32{0.5, 0.25, 1}}
	got, err := n.Floats(nil, &image.RGB{Width: 1, Height: 1, Pix: []uint8{255, 0, 51}})
	if err != nil || !slices.Equal(got, []float32{1, -1, 0.2}) {
		t.Errorf("Normalize: %v, %v; want [1 -1 0.2]", got, err)
	}
}
