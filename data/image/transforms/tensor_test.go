package transforms

import (
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data/image"
)

// TestEvalPipelines: ToTensor is /255 in HWC; ConvNextEval crops at the floor of the halved
// margins as transformers' center_crop does (torchvision's CenterCrop rounds: they differ when
// the margin is 3 mod 4), warps at 384 and above, and refuses a crop_pct outside (0, 1].
func TestEvalPipelines(t *testing.T) {
	m := &image.RGB{Width: 2, Height: 1, Pix: []uint8{0, 51, 255, 102, 1, 2}}
	if got := (ToTensor{}).Floats(nil, m); !slices.Equal(got, []float32{0, 0.2, 1, 0.4, float32(1) / 255, float32(2) / 255}) {
		t.Errorf("ToTensor: %v", got)
	}
	got, w, h, err := Pipeline{}.Floats([]float32{7}, m, nil)
	if err != nil || w != 2 || h != 1 || !slices.Equal(got[:2], []float32{7, 0}) || len(got) != 7 {
		t.Errorf("Pipeline without Normalize: %v %dx%d %v", got, w, h, err)
	}

	// A 4-row image whose rows are 0, 1, 2, 3 (red): a 1-row window of it has margin 3;
	// transformers' crop takes row 1, torchvision's row 2.
	img := &image.RGB{Width: 1, Height: 4, Pix: make([]uint8, 12)}
	for y := range 4 {
		img.Pix[3*y] = uint8(y)
	}
	fc, err := floorCenterCrop{height: 1, width: 1}.Apply(img, nil)
	if err != nil || fc.Pix[0] != 1 {
		t.Errorf("transformers' center crop: row %v, %v; want 1", fc, err)
	}
	tc, err := CenterCrop{Size: 1}.Apply(img, nil)
	if err != nil || tc.Pix[0] != 2 {
		t.Errorf("torchvision's center crop: row %v, %v; want 2", tc, err)
	}

	photo := &image.RGB{Width: 451, Height: 300, Pix: make([]uint8, 451*300*3)}
	for _, c := range []struct {
		p    Pipeline
		w, h int
	}{
		{ConvNextEval(224, 0.875, half, half), 224, 224},
		{ConvNextEval(384, 0.875, half, half), 384, 384},
		{ViTEval(224, 160, half, half), 160, 224},
	} {
		out, w, h, err := c.p.Floats(nil, photo, nil)
		if err != nil || w != c.w || h != c.h || len(out) != w*h*3 || out[0] != -1 {
			t.Errorf("%+v: %dx%d, %d values, %v; want %dx%d", c.p.Transforms, w, h, len(out), err, c.w, c.h)
		}
	}
	if _, _, _, err := ConvNextEval(224, 1.5, half, half).Floats(nil, photo, nil); err == nil || !strings.Contains(err.Error(), "crop_pct 1.5") {
		t.Errorf("crop_pct 1.5: %v", err)
	}
	if _, _, _, err := ViTEval(224, 224, half, [3]float32{1, 0, 1}).Floats(nil, photo, nil); err == nil || !strings.Contains(err.Error(), "Std[1]") {
		t.Errorf("std 0: %v", err)
	}
}
