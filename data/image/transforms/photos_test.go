package transforms

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data/image"
)

var (
	imagenetMean = [3]float32{0.485, 0.456, 0.406}
	imagenetStd  = [3]float32{0.229, 0.224, 0.225}
	half         = [3]float32{0.5, 0.5, 0.5}
)

// TestPhotosAgainstReferences runs scripts/image_resize_reference.py --full with
// GOACCEL_TORCH_PYTHON (skipped, loudly, without it) on ten of scikit-image's photos (RGB,
// gray, RGBA; PNG and JPEG; 303 to 1000 pixels a side) and checks
//   - Resize (every filter; 224x224, x1.5, to a third and two thirds, torchvision's
//     Resize(256)) equals Pillow's Image.resize byte for byte;
//   - ViTEval and ConvNextEval are within 1/255 (in pixel units) of ViTImageProcessorPil and
//     ConvNextImageProcessorPil, and torchvision's Compose on PIL images of theirs;
//
// and logs every figure, the torchvision-backed ViTImageProcessor and ConvNextImageProcessor
// (transformers' default with torchvision installed) included: these resample tensors, not
// through Pillow, and are measured, not held to a bound.
func TestPhotosAgainstReferences(t *testing.T) {
	py := os.Getenv("GOACCEL_TORCH_PYTHON")
	if py == "" {
		fmt.Fprintln(os.Stderr, "SKIP TestPhotosAgainstReferences: GOACCEL_TORCH_PYTHON is not set, so Resize and the "+
			"eval pipelines are NOT compared with Pillow/transformers/torchvision on whole photos (only the fixtures)")
		t.Skip("GOACCEL_TORCH_PYTHON not set: no comparison on whole photos")
	}
	dir := t.TempDir()
	cmd := exec.Command(py, filepath.Join("..", "..", "..", "scripts", "image_resize_reference.py"), "--full", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Versions map[string]string
		Photos   []struct {
			Name, File, Mode string
			Width, Height    int
		}
		Resizes []struct {
			Photo, Filter, File    string
			Width, Height, Shorter int
		}
		Pipelines []struct{ Photo, Pipeline, Backend, File string }
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	t.Logf("references: %v", m.Versions)
	photos := map[string]*image.RGB{}
	for _, p := range m.Photos {
		pix, err := os.ReadFile(filepath.Join(dir, p.File))
		if err != nil || len(pix) != p.Width*p.Height*3 {
			t.Fatalf("%s: %d bytes, %v", p.File, len(pix), err)
		}
		photos[p.Name] = &image.RGB{Width: p.Width, Height: p.Height, Pix: pix}
		t.Logf("photo %s: %dx%d %s", p.Name, p.Width, p.Height, p.Mode)
	}
	worst := map[string]diff{}
	for _, c := range m.Resizes {
		z := Resize{Height: c.Height, Width: c.Width, Interpolation: filterNames[c.Filter]}
		if c.Shorter != 0 {
			z = Resize{Size: c.Shorter, Interpolation: filterNames[c.Filter]}
		}
		got, err := z.Apply(photos[c.Photo], nil)
		if err != nil {
			t.Fatal(err)
		}
		pix, err := os.ReadFile(filepath.Join(dir, c.File))
		if err != nil {
			t.Fatal(err)
		}
		if got.Width != c.Width || got.Height != c.Height || len(pix) != len(got.Pix) {
			t.Fatalf("%s: %dx%d, want %dx%d", c.File, got.Width, got.Height, c.Width, c.Height)
		}
		d := compare(got, &image.RGB{Width: c.Width, Height: c.Height, Pix: pix})
		if d.max != [3]int{} {
			t.Errorf("%s: %v against Pillow", c.File, d)
		}
		w := worst[c.Filter]
		for ch := range 3 {
			w.max[ch] = max(w.max[ch], d.max[ch])
			w.mean[ch] = max(w.mean[ch], d.mean[ch])
		}
		worst[c.Filter] = w
	}
	for f, d := range worst {
		t.Logf("Resize %s vs Pillow over %d photos: %v (worst photo's mean)", f, len(photos), d)
	}

	pipelines := map[string]struct {
		p     Pipeline
		std   [3]float32
		bound bool
	}{
		"vit_pil":              {ViTEval(224, 224, half, half), half, true},
		"vit_torchvision":      {ViTEval(224, 224, half, half), half, false},
		"tv_vit":               {ViTEval(224, 224, half, half), half, true},
		"convnext_pil":         {ConvNextEval(224, 0.875, imagenetMean, imagenetStd), imagenetStd, true},
		"convnext_torchvision": {ConvNextEval(224, 0.875, imagenetMean, imagenetStd), imagenetStd, false},
		"tv_resnet": {Pipeline{
			Transforms: Compose{Resize{Size: 256, Interpolation: Bicubic}, CenterCrop{Size: 224}},
			Normalize:  &Normalize{Mean: imagenetMean, Std: imagenetStd},
		}, imagenetStd, true},
	}
	type fdiff struct {
		max, mean [3]float64 // in 8-bit levels: |a-b| * std * 255
		n         int
	}
	summary := map[string]*fdiff{}
	for _, c := range m.Pipelines {
		pl, ok := pipelines[c.Pipeline]
		if !ok {
			t.Fatalf("pipeline %q", c.Pipeline)
		}
		got, _, _, err := pl.p.Floats(nil, photos[c.Photo], nil)
		if err != nil {
			t.Fatal(err)
		}
		want := readFloats(t, filepath.Join(dir, c.File))
		if len(want) != len(got) {
			t.Fatalf("%s: %d values, want %d", c.File, len(got), len(want))
		}
		s := summary[c.Pipeline]
		if s == nil {
			s = &fdiff{}
			summary[c.Pipeline] = s
		}
		var photoMax [3]float64
		for i := range got {
			ch := i % 3
			v := math.Abs(float64(got[i])-float64(want[i])) * float64(pl.std[ch]) * 255
			photoMax[ch] = max(photoMax[ch], v)
			s.max[ch] = max(s.max[ch], v)
			s.mean[ch] += v
		}
		s.n += len(got) / 3
		if pl.bound && max(photoMax[0], photoMax[1], photoMax[2]) > 1.0001 {
			t.Errorf("%s on %s: max difference %.4f %.4f %.4f levels of 255, want within 1", c.Pipeline, c.Photo, photoMax[0], photoMax[1], photoMax[2])
		}
	}
	for name, s := range summary {
		t.Logf("%s: max %.3g %.3g %.3g, mean %.3g %.3g %.3g (levels of 255, R G B)", name,
			s.max[0], s.max[1], s.max[2], s.mean[0]/float64(s.n), s.mean[1]/float64(s.n), s.mean[2]/float64(s.n))
	}
}

func readFloats(t *testing.T, path string) []float32 {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(raw)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}
