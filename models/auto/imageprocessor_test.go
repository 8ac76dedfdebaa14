package auto

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data/image"
	"github.com/goaccel/goaccel/data/image/transforms"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/gomlx/core/tensors"
)

// Files as transformers 5.25 writes its classes' defaults, and as older checkpoints have them
// (the legacy feature_extractor_type files of google/vit-base-patch16-224-in21k and
// microsoft/resnet-50, and facebook/dinov2-base's).
const (
	vitFile = `{"do_normalize": true, "do_rescale": true, "do_resize": true, "image_mean": [0.5, 0.5, 0.5],
  "image_processor_type": "ViTImageProcessor", "image_std": [0.5, 0.5, 0.5], "resample": 2,
  "rescale_factor": 0.00392156862745098, "size": {"height": 224, "width": 224}}`
	vitLegacyFile = `{"do_normalize": true, "do_resize": true, "feature_extractor_type": "ViTFeatureExtractor",
  "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "resample": 2, "size": 224}`
	resnetLegacyFile = `{"crop_pct": 0.875, "do_normalize": true, "do_resize": true, "feature_extractor_type": "ConvNextFeatureExtractor",
  "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225], "resample": 3, "size": 224}`
	dinov2File = `{"crop_size": {"height": 224, "width": 224}, "do_center_crop": true, "do_convert_rgb": true,
  "do_normalize": true, "do_rescale": true, "do_resize": true, "image_mean": [0.485, 0.456, 0.406],
  "image_processor_type": "BitImageProcessor", "image_std": [0.229, 0.224, 0.225], "resample": 3,
  "rescale_factor": 0.00392156862745098, "size": {"shortest_edge": 256}}`
)

var imagenet = ImageProcessor{Mean: [3]float64{0.485, 0.456, 0.406}, Std: [3]float64{0.229, 0.224, 0.225}}

// TestParseImageProcessor: the classes' files and the legacy ones read as transformers reads
// them (an integer size a square for ViT and a shortest edge for ConvNeXt, the missing keys
// the class's defaults).
func TestParseImageProcessor(t *testing.T) {
	for _, c := range []struct {
		name, file string
		want       ImageProcessor
	}{
		{"vit", vitFile, ImageProcessor{Type: ViTProcessor, DoResize: true, Size: ImageSize{Height: 224, Width: 224},
			Resample: transforms.Bilinear, DoRescale: true, RescaleFactor: 1.0 / 255, DoNormalize: true,
			Mean: [3]float64{0.5, 0.5, 0.5}, Std: [3]float64{0.5, 0.5, 0.5}}},
		{"vit-in21k (legacy)", vitLegacyFile, ImageProcessor{Type: ViTProcessor, DoResize: true, Size: ImageSize{Height: 224, Width: 224},
			Resample: transforms.Bilinear, DoRescale: true, RescaleFactor: 1.0 / 255, DoNormalize: true,
			Mean: [3]float64{0.5, 0.5, 0.5}, Std: [3]float64{0.5, 0.5, 0.5}}},
		{"resnet-50 (legacy)", resnetLegacyFile, ImageProcessor{Type: ConvNextProcessor, DoResize: true, Size: ImageSize{ShortestEdge: 224},
			Resample: transforms.Bicubic, CropPct: 0.875, DoRescale: true, RescaleFactor: 1.0 / 255, DoNormalize: true,
			Mean: imagenet.Mean, Std: imagenet.Std}},
		{"dinov2", dinov2File, ImageProcessor{Type: BitProcessor, DoResize: true, Size: ImageSize{ShortestEdge: 256},
			Resample: transforms.Bicubic, DoCenterCrop: true, CropSize: ImageSize{Height: 224, Width: 224}, DoRescale: true,
			RescaleFactor: 1.0 / 255, DoNormalize: true, Mean: imagenet.Mean, Std: imagenet.Std}},
		{"convnext defaults, a Pil name", `{"image_processor_type": "ConvNextImageProcessorPil", "size": null}`,
			ImageProcessor{Type: ConvNextProcessor, DoResize: true, Size: ImageSize{ShortestEdge: 384}, Resample: transforms.Bicubic,
				CropPct: 0.875, DoRescale: true, RescaleFactor: 1.0 / 255, DoNormalize: true,
				Mean: [3]float64{0.5, 0.5, 0.5}, Std: [3]float64{0.5, 0.5, 0.5}}},
		{"vit, [h, w] and a scalar mean", `{"image_processor_type": "ViTImageProcessorFast", "size": [32, 48], "image_mean": 0.25,
			"do_rescale": false, "resample": 0, "do_pad": false, "processor_class": "x"}`,
			ImageProcessor{Type: ViTProcessor, DoResize: true, Size: ImageSize{Height: 32, Width: 48}, Resample: transforms.Nearest,
				RescaleFactor: 1.0 / 255, DoNormalize: true, Mean: [3]float64{0.25, 0.25, 0.25}, Std: [3]float64{0.5, 0.5, 0.5}}},
	} {
		p, err := ParseImageProcessor([]byte(c.file), c.name)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if *p != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, *p, c.want)
		}
		dir := t.TempDir()
		if err := p.SavePretrained(dir); err != nil {
			t.Fatal(err)
		}
		again, err := LoadImageProcessor(dir)
		if err != nil || *again != *p {
			t.Errorf("%s: written and read again: %+v, %v", c.name, again, err)
		}
	}
}

// TestParseImageProcessorRefuses: every key or value goaccel cannot honour is an error naming
// the key (and the file).
func TestParseImageProcessorRefuses(t *testing.T) {
	for file, want := range map[string]string{
		`{"image_processor_type": "ViTImageProcessor", "do_flip": true}`:                                 `key "do_flip"`,
		`{"image_processor_type": "ViTImageProcessor", "do_pad": true}`:                                  "do_pad true",
		`{"image_processor_type": "ViTImageProcessor", "size": {"longest_edge": 300}}`:                   "size {",
		`{"image_processor_type": "ViTImageProcessor", "size": {"shortest_edge": 3, "longest_edge": 9}}`: "longest_edge",
		`{"image_processor_type": "ViTImageProcessor", "resample": 7}`:                                   "resample 7",
		`{"image_processor_type": "ViTImageProcessor", "resample": "bilinear"}`:                          "resample",
		`{"image_processor_type": "ViTImageProcessor", "crop_pct": 0.9}`:                                 "crop_pct 0.9",
		`{"image_processor_type": "ViTImageProcessor", "image_mean": [0.5, 0.5]}`:                        "image_mean [0.5, 0.5]",
		`{"image_processor_type": "ViTImageProcessor", "image_std": [0.5, 0, 0.5]}`:                      "image_std",
		`{"image_processor_type": "ViTImageProcessor", "rescale_factor": -1}`:                            "rescale_factor -1",
		`{"image_processor_type": "ViTImageProcessor", "do_center_crop": true}`:                          "crop_size",
		`{"image_processor_type": "ViTImageProcessor", "size": 0}`:                                       "size 0",
		`{"image_processor_type": "ViTImageProcessor", "auto_map": {"AutoImageProcessor": "x.Y"}}`:       "auto_map",
		`{"image_processor_type": "ViTImageProcessor", "data_format": "channels_last"}`:                  "data_format",
		`{"image_processor_type": "ConvNextImageProcessor", "size": {"height": 224, "width": 224}}`:      "shortest_edge",
		`{"image_processor_type": "ConvNextImageProcessor", "size": 224, "crop_pct": 1.5}`:               "crop_pct 1.5",
		`{"image_processor_type": "CLIPImageProcessor"}`:                                                 `"CLIPImageProcessor" is not supported`,
		`{"feature_extractor_type": "Wav2Vec2FeatureExtractor"}`:                                         `"Wav2Vec2ImageProcessor" is not supported`,
		`{"do_resize": true}`: "names no image processor",
		`{"image_processor_type": "ViTImageProcessor", "do_resize": "yes"}`: `do_resize "yes"`,
		`[1, 2]`: "parsing",
	} {
		_, err := ParseImageProcessor([]byte(file), "dir/preprocessor_config.json")
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "dir/preprocessor_config.json") {
			t.Errorf("%s: %v, want an error naming the file and %q", file, err, want)
		}
	}
	// A file without a class takes the one of config.json's model_type beside it.
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "config.json"), `{"model_type": "dinov2"}`)
	writeFile(t, filepath.Join(dir, ImageProcessorFile), `{"size": {"shortest_edge": 256}}`)
	if p, err := LoadImageProcessor(dir); err != nil || p.Type != BitProcessor || !p.DoCenterCrop {
		t.Errorf("a dinov2 folder's file without image_processor_type: %+v, %v", p, err)
	}
}

func writeFile(t *testing.T, path, contents string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(contents), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestImageProcessorCenterCrop: transformers' center_crop, the corner at the floor of the
// halved margins and the zero padding of a smaller image ceil-first, on both sides alone.
func TestImageProcessorCenterCrop(t *testing.T) {
	m := &image.RGB{Width: 5, Height: 4, Pix: make([]uint8, 5*4*3)}
	for i := range m.Pix {
		m.Pix[i] = uint8(i/3 + 1) // pixel k holds k+1 on every channel
	}
	row := func(c *image.RGB, y int) []uint8 {
		out := make([]uint8, c.Width)
		for x := range c.Width {
			out[x] = c.Pix[(y*c.Width+x)*3]
		}
		return out
	}
	c := centerCrop(m, 2, 2) // margins 2 and 3: corner (1, 1)
	if got := fmt.Sprint(row(c, 0), row(c, 1)); got != "[7 8] [12 13]" {
		t.Errorf("2x2 of 5x4: %s", got)
	}
	c = centerCrop(m, 7, 3) // 3 rows short: 2 zero rows before, 1 after; columns from 1
	var rows []string
	for y := range 7 {
		rows = append(rows, fmt.Sprint(row(c, y)))
	}
	if got := strings.Join(rows, " "); got != "[0 0 0] [0 0 0] [2 3 4] [7 8 9] [12 13 14] [17 18 19] [0 0 0]" {
		t.Errorf("3x7 of 5x4: %s", got)
	}
}

// TestImageProcessorFloatsAsToTensor: with rescale_factor 1/255 the float half equals
// transforms.Normalize (torchvision's ToTensor and Normalize) on every byte value, so the
// training pipeline's floats (Augmentation, ProcessAugmented) are torchvision's too.
func TestImageProcessorFloatsAsToTensor(t *testing.T) {
	p, err := NewImageProcessor(ConvNextProcessor)
	if err != nil {
		t.Fatal(err)
	}
	p.Mean, p.Std = imagenet.Mean, imagenet.Std
	m := &image.RGB{Width: 256, Height: 1, Pix: make([]uint8, 256*3)}
	for i := range m.Pix {
		m.Pix[i] = uint8(i / 3)
	}
	got := p.Floats(nil, m)
	want, err := transforms.Normalize{Mean: [3]float32{0.485, 0.456, 0.406}, Std: [3]float32{0.229, 0.224, 0.225}}.Floats(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("value %d channel %d: %v, Normalize %v", i/3, i%3, got[i], want[i])
		}
	}
}

// TestImageProcessorBatches: Process makes one NHWC tensor of images of several sizes;
// ProcessAugmented the same of what Augmentation made (drawn from the example's generator,
// the same for the same seed); a batch whose images come out of two sizes is refused.
func TestImageProcessorBatches(t *testing.T) {
	p, err := ParseImageProcessor([]byte(resnetLegacyFile), "resnet")
	if err != nil {
		t.Fatal(err)
	}
	p.Size.ShortestEdge = 32
	rng := rand.New(rand.NewPCG(1, 2))
	var batch []*image.RGB
	for _, wh := range [][2]int{{50, 40}, {33, 61}, {32, 32}} {
		m := &image.RGB{Width: wh[0], Height: wh[1], Pix: make([]uint8, wh[0]*wh[1]*3)}
		for i := range m.Pix {
			m.Pix[i] = uint8(rng.IntN(256))
		}
		batch = append(batch, m)
	}
	out, err := p.Process(batch)
	if err != nil {
		t.Fatal(err)
	}
	if d := out[0].Shape().Dimensions; fmt.Sprint(d) != "[3 32 32 3]" {
		t.Errorf("Process: %v, want [3 32 32 3]", d)
	}
	one, _ := p.Process(batch[1:2])
	all := tensors.MustCopyFlatData[float32](out[0])
	if a, b := all[32*32*3:2*32*32*3], tensors.MustCopyFlatData[float32](one[0]); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("an image's pixels depend on the batch")
	}
	aug := p.Augmentation()
	var crops [2][]*image.RGB
	for k := range crops {
		for i, m := range batch {
			c, err := aug.Apply(m, rand.New(rand.NewPCG(7, uint64(i))))
			if err != nil {
				t.Fatal(err)
			}
			crops[k] = append(crops[k], c)
		}
	}
	a, err := p.ProcessAugmented(crops[0])
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.ProcessAugmented(crops[1])
	if fmt.Sprint(a[0].Shape().Dimensions) != "[3 32 32 3]" ||
		fmt.Sprint(tensors.MustCopyFlatData[float32](a[0])) != fmt.Sprint(tensors.MustCopyFlatData[float32](b[0])) {
		t.Errorf("Augmentation: %v, or two draws of one key differ", a[0].Shape())
	}
	if _, err := p.ProcessAugmented(batch); err == nil || !strings.Contains(err.Error(), "image 1 comes out 33x61") {
		t.Errorf("images of two sizes: %v", err)
	}
	p.DoResize = false
	if _, err := p.Process(nil); err == nil {
		t.Error("an empty batch: no error")
	}
}

// TestImageProcessorsAgainstTransformers is the pixel parity of the processors: goaccel's
// SavePretrained files (and two legacy files) loaded by transformers' AutoImageProcessor,
// which must take them as the same class and settings, run by it (backend "pil": the
// *ImageProcessorPil classes, held to equality; backend "torchvision", which resamples
// tensors with its own kernels and pads a crop floor-first: measured, not bound) and by
// goaccel on scikit-image's photos (RGB, gray, RGBA; PNG and JPEG, given to both as the same
// RGB bytes). The maximum difference per channel is logged in levels of 255.
func TestImageProcessorsAgainstTransformers(t *testing.T) {
	py := testutil.TorchPython(t, "image processors against transformers' on photos")
	root := t.TempDir()
	procs := map[string]*ImageProcessor{}
	add := func(name string, p *ImageProcessor) {
		procs[name] = p
		if err := p.SavePretrained(filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	vit, _ := NewImageProcessor(ViTProcessor)
	add("vit", vit)
	odd := *vit
	odd.Size, odd.Resample, odd.DoRescale, odd.Mean, odd.Std = ImageSize{Height: 61, Width: 97}, transforms.Lanczos, false, [3]float64{100, 110, 120}, [3]float64{60, 61, 62}
	add("vit-61x97-lanczos-norescale", &odd)
	crop := *vit
	crop.Size, crop.DoCenterCrop, crop.CropSize, crop.Resample, crop.DoNormalize, crop.RescaleFactor =
		ImageSize{Height: 100, Width: 90}, true, ImageSize{Height: 120, Width: 64}, transforms.Nearest, false, 1.0/127.5
	add("vit-crop-pad-nearest", &crop)
	conv, _ := NewImageProcessor(ConvNextProcessor)
	conv.Size, conv.Mean, conv.Std = ImageSize{ShortestEdge: 224}, imagenet.Mean, imagenet.Std
	add("convnext-224", conv)
	warp, _ := NewImageProcessor(ConvNextProcessor)
	add("convnext-384", warp)
	bit, _ := NewImageProcessor(BitProcessor)
	bit.Size, bit.Mean, bit.Std = ImageSize{ShortestEdge: 256}, imagenet.Mean, imagenet.Std
	add("dinov2", bit)
	box := *bit
	box.Size, box.CropSize, box.Resample = ImageSize{ShortestEdge: 97}, ImageSize{Height: 101, Width: 95}, transforms.Box
	add("bit-box-crop-larger", &box)
	for name, file := range map[string]string{"vit-in21k-legacy": vitLegacyFile, "resnet-50-legacy": resnetLegacyFile} {
		p, err := ParseImageProcessor([]byte(file), name)
		if err != nil {
			t.Fatal(err)
		}
		procs[name] = p
		if err := os.MkdirAll(filepath.Join(root, name), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(root, name, ImageProcessorFile), file)
	}
	out := t.TempDir()
	args := []string{filepath.Join("testdata", "imageprocessor_reference.py"), out}
	for name := range procs {
		args = append(args, filepath.Join(root, name))
	}
	if b, err := exec.Command(py, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", py, strings.Join(args, " "), err, b)
	}
	var ref struct {
		Versions map[string]string
		Photos   []struct {
			Name          string
			Width, Height int
		}
		Cases []struct {
			Processor, Class, Backend, Photo, File, Error string
			Shape                                         []int
		}
	}
	raw, err := os.ReadFile(filepath.Join(out, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	t.Logf("references: %v", ref.Versions)
	photos := map[string]*image.RGB{}
	for _, ph := range ref.Photos {
		pix, err := os.ReadFile(filepath.Join(out, ph.Name+".rgb"))
		if err != nil || len(pix) != ph.Width*ph.Height*3 {
			t.Fatalf("%s: %d bytes, %v", ph.Name, len(pix), err)
		}
		photos[ph.Name] = &image.RGB{Width: ph.Width, Height: ph.Height, Pix: pix}
	}
	worst := map[string][3]float64{} // processor/backend: max |diff| per channel in levels
	failed := map[string]string{}    // processor/backend: transformers' error
	for _, c := range ref.Cases {
		p := procs[c.Processor]
		if c.Error != "" { // the torchvision backend has no BOX filter
			failed[c.Processor+" / "+c.Backend] = c.Error
			continue
		}
		if want := p.Type + map[string]string{"pil": "Pil", "torchvision": ""}[c.Backend]; c.Class != want {
			t.Errorf("%s (%s): transformers loaded %s, want %s", c.Processor, c.Backend, c.Class, want)
			continue
		}
		got, err := p.Process([]*image.RGB{photos[c.Photo]})
		if err != nil {
			t.Fatalf("%s on %s: %v", c.Processor, c.Photo, err)
		}
		d := got[0].Shape().Dimensions
		if len(c.Shape) != 3 || c.Shape[0] != 3 || c.Shape[1] != d[1] || c.Shape[2] != d[2] {
			t.Errorf("%s on %s: goaccel [%d %d] (H W), transformers %v (C H W)", c.Processor, c.Photo, d[1], d[2], c.Shape)
			continue
		}
		b, err := os.ReadFile(filepath.Join(out, c.File))
		if err != nil {
			t.Fatal(err)
		}
		h, w := d[1], d[2]
		gv := tensors.MustCopyFlatData[float32](got[0])
		key := c.Processor + " / " + c.Backend
		m := worst[key]
		for ch := range 3 {
			unit := 1.0 // the size of one level of 255 in the output's units
			if p.DoRescale {
				unit = p.RescaleFactor
			}
			if p.DoNormalize {
				unit /= p.Std[ch]
			}
			for i := range h * w {
				want := math.Float32frombits(binary.LittleEndian.Uint32(b[(ch*h*w+i)*4:]))
				diff := math.Abs(float64(gv[i*3+ch]-want)) / unit
				m[ch] = max(m[ch], diff)
			}
		}
		worst[key] = m
	}
	for key, m := range worst {
		t.Logf("%-40s max |diff| per channel R G B, levels of 255: %.4g %.4g %.4g", key, m[0], m[1], m[2])
		if strings.HasSuffix(key, "/ pil") && (m[0] != 0 || m[1] != 0 || m[2] != 0) {
			t.Errorf("%s: not equal to transformers' Pillow processor", key)
		}
	}
	for key, e := range failed {
		t.Logf("%-40s transformers failed: %s", key, e)
	}
	if len(worst)+len(failed) != 2*len(procs) {
		t.Errorf("%d processor/backend figures, want %d", len(worst), 2*len(procs))
	}
}

// TestImageProcessorSetOutputSize: each class's processor made to output n x n keeps its
// rules (DINOv2's crop keeps its share of the resized image).
func TestImageProcessorSetOutputSize(t *testing.T) {
	for file, want := range map[string]string{vitFile: "{224 224 0} {0 0 0}", resnetLegacyFile: "{0 0 256} {0 0 0}",
		dinov2File: "{0 0 293} {256 256 0}"} {
		p, err := ParseImageProcessor([]byte(file), "f")
		if err != nil {
			t.Fatal(err)
		}
		if err := p.SetOutputSize(256); err != nil {
			t.Fatal(err)
		}
		h, w, ok := p.OutputSize()
		if p.Type == ViTProcessor {
			want = "{256 256 0} {0 0 0}"
		}
		if got := fmt.Sprint(p.Size, " ", p.CropSize); got != want || !ok || h != 256 || w != 256 {
			t.Errorf("%s at 256: size, crop %s (output %dx%d %v), want %s", p.Type, got, w, h, ok, want)
		}
	}
	p, _ := NewImageProcessor(ViTProcessor)
	if err := p.SetOutputSize(0); err == nil {
		t.Error("size 0: no error")
	}
}
