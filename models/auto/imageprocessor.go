package auto

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/goaccel/goaccel/data/image"
	"github.com/goaccel/goaccel/data/image/transforms"
	"github.com/goaccel/goaccel/internal/fsutil"
	"github.com/gomlx/gomlx/core/tensors"
)

// ImageProcessorFile is the file an image processor is read from and written to, in a
// Hugging Face folder.
const ImageProcessorFile = "preprocessor_config.json"

// The image processors goaccel reads, by transformers' class names (image_processor_type).
const (
	// ViTProcessor is ViTImageProcessor: a resize to height x width (bilinear), rescale,
	// normalize with 0.5.
	ViTProcessor = "ViTImageProcessor"
	// ConvNextProcessor is ConvNextImageProcessor (ConvNeXt's, and ResNet's): below 384 the
	// shorter edge resized to shortest_edge/crop_pct (bicubic) and the central square of
	// shortest_edge cut out; at 384 and above a warp to the square.
	ConvNextProcessor = "ConvNextImageProcessor"
	// BitProcessor is BitImageProcessor (DINOv2's): the shorter edge resized to
	// shortest_edge (bicubic), the central crop_size window, OpenAI CLIP's mean and std by
	// default.
	BitProcessor = "BitImageProcessor"
)

// ImageSize is a size of preprocessor_config.json: Height and Width (a fixed size), or
// ShortestEdge (the shorter edge, the longer one keeping the aspect ratio).
type ImageSize struct {
	Height, Width, ShortestEdge int
}

// ImageProcessor is an image family's input processor, as transformers' image processors
// (ViTImageProcessor, ConvNextImageProcessor, BitImageProcessor) read it from
// preprocessor_config.json; its evaluation pipeline (Process) gives the pixels of their
// Pillow backends (ViTImageProcessorPil...): the resize (Pillow's resampling), the centre crop
// (transformers' corner, at the floor of the halved margins), the rescale (in float64, then
// float32) and the normalisation (in float32), in that order, each when its do_ flag says so.
// The fields are the file's keys; LoadImageProcessor and ParseImageProcessor fill the missing
// ones with the class's defaults, as transformers does. An ImageProcessor is a
// BatchProcessor of decoded images ([]*image.RGB to one float32 tensor [B, H, W, 3], the image
// layout of docs/images.md); Augmentation is the training half.
type ImageProcessor struct {
	// Type is image_processor_type: ViTProcessor, ConvNextProcessor or BitProcessor.
	Type string
	// DoResize, Size and Resample are do_resize, size and resample (Pillow's filter, here
	// as transforms names it).
	DoResize bool
	Size     ImageSize
	Resample transforms.Interpolation
	// CropPct is ConvNextImageProcessor's crop_pct (0 for the others).
	CropPct float64
	// DoCenterCrop and CropSize are do_center_crop and crop_size (Height and Width).
	DoCenterCrop bool
	CropSize     ImageSize
	// DoRescale and RescaleFactor are do_rescale and rescale_factor (1/255).
	DoRescale     bool
	RescaleFactor float64
	// DoNormalize, Mean and Std are do_normalize, image_mean and image_std, per channel.
	DoNormalize bool
	Mean, Std   [3]float64
}

// Pillow's resampling codes (PIL.Image.Resampling), the resample of preprocessor_config.json.
var pillowFilters = []transforms.Interpolation{0: transforms.Nearest, 1: transforms.Lanczos, 2: transforms.Bilinear,
	3: transforms.Bicubic, 4: transforms.Box, 5: transforms.Hamming}

// NewImageProcessor is the processor of class kind (ViTProcessor, ConvNextProcessor,
// BitProcessor) with the class's defaults in transformers 5.25, as its constructor without
// arguments makes it.
func NewImageProcessor(kind string) (*ImageProcessor, error) {
	standard, imagenetMean, imagenetStd := [3]float64{0.5, 0.5, 0.5}, [3]float64{0.48145466, 0.4578275, 0.40821073},
		[3]float64{0.26862954, 0.26130258, 0.27577711}
	p := &ImageProcessor{Type: kind, DoResize: true, DoRescale: true, RescaleFactor: 1.0 / 255, DoNormalize: true,
		Mean: standard, Std: standard}
	switch kind {
	case ViTProcessor:
		p.Size, p.Resample = ImageSize{Height: 224, Width: 224}, transforms.Bilinear
	case ConvNextProcessor:
		p.Size, p.Resample, p.CropPct = ImageSize{ShortestEdge: 384}, transforms.Bicubic, 224.0/256
	case BitProcessor:
		p.Size, p.Resample, p.DoCenterCrop, p.CropSize = ImageSize{ShortestEdge: 224}, transforms.Bicubic, true,
			ImageSize{Height: 224, Width: 224}
		p.Mean, p.Std = imagenetMean, imagenetStd // OpenAI CLIP's, BitImageProcessor's defaults
	default:
		return nil, fmt.Errorf("auto: image processor %q is not supported: goaccel has %s, %s and %s", kind,
			ViTProcessor, ConvNextProcessor, BitProcessor)
	}
	return p, nil
}

// defaultsToSquare says whether an integer size of kind is a square (else a shortest edge),
// transformers' default_to_square of the class.
func defaultsToSquare(kind string) bool { return kind == ViTProcessor }

// imageProcessorOfModel is the processor transformers' AutoImageProcessor takes for a
// config.json's model_type when preprocessor_config.json names none.
var imageProcessorOfModel = map[string]string{"vit": ViTProcessor, "convnext": ConvNextProcessor,
	"convnextv2": ConvNextProcessor, "resnet": ConvNextProcessor, "dinov2": BitProcessor, "bit": BitProcessor}

// LoadImageProcessor reads folder dir's preprocessor_config.json (ParseImageProcessor). A
// file that names no class (neither image_processor_type nor the legacy
// feature_extractor_type) is taken as the class of config.json's model_type, as transformers'
// AutoImageProcessor takes it (vit: ViTImageProcessor; convnext, convnextv2, resnet:
// ConvNextImageProcessor; dinov2, bit: BitImageProcessor).
func LoadImageProcessor(dir string) (*ImageProcessor, error) {
	path := filepath.Join(dir, ImageProcessorFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auto: %s has no image processor: %w", dir, err)
	}
	kind := ""
	if cfg, err := os.ReadFile(filepath.Join(dir, "config.json")); err == nil {
		var c struct {
			ModelType string `json:"model_type"`
		}
		if json.Unmarshal(cfg, &c) == nil {
			kind = imageProcessorOfModel[c.ModelType]
		}
	}
	return parseImageProcessor(b, path, kind)
}

// ParseImageProcessor reads the contents of a preprocessor_config.json (name is the file, for
// errors) as transformers 5.25 reads it: the class from image_processor_type (a "Pil" or
// "Fast" suffix dropped) or, in the legacy files of older checkpoints, feature_extractor_type
// ("ViTFeatureExtractor" is ViTImageProcessor); the keys it lacks, or gives as null, are the
// class's defaults (NewImageProcessor); an integer size is a square for ViTImageProcessor and a
// shortest edge for the others (default_to_square), a list [height, width]. A key goaccel does
// not read, or a value it cannot honour (do_pad, a size of longest_edge, a resample that is
// not one of Pillow's six filters...), is an error naming the key.
func ParseImageProcessor(contents []byte, name string) (*ImageProcessor, error) {
	return parseImageProcessor(contents, name, "")
}

// parseImageProcessor is ParseImageProcessor with the class to take when the file names
// none ("": an error).
func parseImageProcessor(contents []byte, name, fallback string) (*ImageProcessor, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(contents, &keys); err != nil {
		return nil, fmt.Errorf("auto: parsing %s: %w", name, err)
	}
	bad := func(key string, format string, a ...any) error {
		return fmt.Errorf("auto: %s: %s %s: %s", name, key, bytes.TrimSpace(keys[key]), fmt.Sprintf(format, a...))
	}
	has := func(key string) bool { v, ok := keys[key]; return ok && string(bytes.TrimSpace(v)) != "null" }
	kind := ""
	switch {
	case has("image_processor_type"):
		if err := json.Unmarshal(keys["image_processor_type"], &kind); err != nil {
			return nil, bad("image_processor_type", "want a class name")
		}
		kind = strings.TrimSuffix(strings.TrimSuffix(kind, "Fast"), "Pil")
	case has("feature_extractor_type"):
		if err := json.Unmarshal(keys["feature_extractor_type"], &kind); err != nil {
			return nil, bad("feature_extractor_type", "want a class name")
		}
		kind = strings.Replace(kind, "FeatureExtractor", "ImageProcessor", 1)
	case fallback != "":
		kind = fallback
	default:
		return nil, fmt.Errorf("auto: %s names no image processor (image_processor_type, or feature_extractor_type in older files), and no config.json beside it says its model_type", name)
	}
	p, err := NewImageProcessor(kind)
	if err != nil {
		return nil, fmt.Errorf("auto: %s: %w", name, err)
	}
	square := defaultsToSquare(kind)
	if has("default_to_square") {
		if err := json.Unmarshal(keys["default_to_square"], &square); err != nil {
			return nil, bad("default_to_square", "want true or false")
		}
	}
	boolKey := func(key string, dst *bool) error {
		if has(key) && json.Unmarshal(keys[key], dst) != nil {
			return bad(key, "want true or false")
		}
		return nil
	}
	for key, dst := range map[string]*bool{"do_resize": &p.DoResize, "do_center_crop": &p.DoCenterCrop,
		"do_rescale": &p.DoRescale, "do_normalize": &p.DoNormalize} {
		if err := boolKey(key, dst); err != nil {
			return nil, err
		}
	}
	if has("size") {
		if p.Size, err = parseImageSize(keys["size"], square); err != nil {
			return nil, bad("size", "%v", err)
		}
	}
	if has("crop_size") {
		if p.CropSize, err = parseImageSize(keys["crop_size"], true); err != nil {
			return nil, bad("crop_size", "%v", err)
		}
	}
	if has("resample") {
		var code float64
		if json.Unmarshal(keys["resample"], &code) != nil || code != math.Trunc(code) || code < 0 || int(code) >= len(pillowFilters) {
			return nil, bad("resample", "want one of Pillow's filters, 0 to 5 (NEAREST, LANCZOS, BILINEAR, BICUBIC, BOX, HAMMING)")
		}
		p.Resample = pillowFilters[int(code)]
	}
	if has("rescale_factor") && json.Unmarshal(keys["rescale_factor"], &p.RescaleFactor) != nil {
		return nil, bad("rescale_factor", "want a number")
	}
	for key, dst := range map[string]*[3]float64{"image_mean": &p.Mean, "image_std": &p.Std} {
		if has(key) {
			if *dst, err = perChannel(keys[key]); err != nil {
				return nil, bad(key, "%v", err)
			}
		}
	}
	if has("crop_pct") {
		if kind != ConvNextProcessor {
			return nil, bad("crop_pct", "only %s has a crop_pct (this file's processor is %s)", ConvNextProcessor, kind)
		}
		if json.Unmarshal(keys["crop_pct"], &p.CropPct) != nil {
			return nil, bad("crop_pct", "want a number")
		}
	}
	if err := checkOtherKeys(keys, name, bad); err != nil {
		return nil, err
	}
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("auto: %s: %w", name, err)
	}
	return p, nil
}

// readKeys are the keys parseImageProcessor reads itself.
var readKeys = []string{"image_processor_type", "feature_extractor_type", "default_to_square", "do_resize", "size",
	"resample", "crop_pct", "do_center_crop", "crop_size", "do_rescale", "rescale_factor", "do_normalize",
	"image_mean", "image_std"}

// checkOtherKeys accepts the keys of preprocessor_config.json that change nothing for
// goaccel's decoded RGB images, with the values that change nothing, and refuses every other
// key.
func checkOtherKeys(keys map[string]json.RawMessage, name string, bad func(key, format string, a ...any) error) error {
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, key := range names {
		v := string(bytes.TrimSpace(keys[key]))
		switch {
		case slices.Contains(readKeys, key):
		case key == "processor_class", key == "image_seq_length":
			// names the multimodal processor a file belongs to; a sequence length of text
		case key == "do_convert_rgb":
			// goaccel decodes every image to RGB (image.Decoder, as load_image and convert("RGB"))
			if v != "null" && v != "true" && v != "false" {
				return bad(key, "want true or false")
			}
		case key == "do_pad" && (v == "null" || v == "false"), key == "pad_size" && v == "null":
		case (key == "data_format") && (v == "null" || v == `"channels_first"`):
			// transformers' own tensor layout; goaccel's batches are NHWC either way
		case (key == "input_data_format" || key == "return_tensors" || key == "device" || key == "disable_grouping") && v == "null":
		case key == "disable_grouping" && (v == "true" || v == "false"):
		case key == "do_pad", key == "pad_size", key == "data_format", key == "input_data_format", key == "return_tensors",
			key == "device":
			return bad(key, "goaccel's image processors do not read this value")
		case key == "auto_map":
			return bad(key, "a processor of remote code: goaccel runs only its own processors (%s, %s, %s)",
				ViTProcessor, ConvNextProcessor, BitProcessor)
		default:
			return fmt.Errorf("auto: %s: key %q (%s) is not one goaccel's image processors read: they read %s",
				name, key, v, strings.Join(readKeys, ", "))
		}
	}
	return nil
}

// parseImageSize reads a size: an integer (a square when square, else a shortest edge), a
// list [height, width], or an object of height and width, or of shortest_edge.
func parseImageSize(raw json.RawMessage, square bool) (ImageSize, error) {
	var n float64
	if json.Unmarshal(raw, &n) == nil {
		if n != math.Trunc(n) || n < 1 {
			return ImageSize{}, fmt.Errorf("want a positive whole number of pixels")
		}
		if square {
			return ImageSize{Height: int(n), Width: int(n)}, nil
		}
		return ImageSize{ShortestEdge: int(n)}, nil
	}
	var list []int
	if json.Unmarshal(raw, &list) == nil {
		if len(list) != 2 || list[0] < 1 || list[1] < 1 {
			return ImageSize{}, fmt.Errorf("want [height, width], positive")
		}
		return ImageSize{Height: list[0], Width: list[1]}, nil
	}
	var obj map[string]int
	if err := json.Unmarshal(raw, &obj); err != nil {
		return ImageSize{}, fmt.Errorf("want a number, [height, width] or an object of whole numbers")
	}
	names := make([]string, 0, len(obj))
	for k, v := range obj {
		if v < 1 {
			return ImageSize{}, fmt.Errorf("%s %d: want a positive number of pixels", k, v)
		}
		names = append(names, k)
	}
	sort.Strings(names)
	switch strings.Join(names, ",") {
	case "height,width":
		return ImageSize{Height: obj["height"], Width: obj["width"]}, nil
	case "shortest_edge":
		return ImageSize{ShortestEdge: obj["shortest_edge"]}, nil
	}
	return ImageSize{}, fmt.Errorf("keys %q: goaccel reads {height, width} or {shortest_edge}", names)
}

// perChannel reads a mean or std: one number for every channel, or three.
func perChannel(raw json.RawMessage) ([3]float64, error) {
	var one float64
	if json.Unmarshal(raw, &one) == nil {
		return [3]float64{one, one, one}, nil
	}
	var three []float64
	if json.Unmarshal(raw, &three) != nil || len(three) != 3 {
		return [3]float64{}, fmt.Errorf("want a number or three (one per channel of an RGB image)")
	}
	return [3]float64(three), nil
}

// Check refuses settings the pipeline cannot run, naming the key: a size or crop of no
// pixels, a size of the wrong form for the class (ConvNextImageProcessor resizes a
// shortest_edge), a crop_pct outside (0, 1], a rescale factor or standard deviation that is
// not positive.
func (p *ImageProcessor) Check() error {
	if _, err := NewImageProcessor(p.Type); err != nil {
		return err
	}
	fixed, edge := p.Size.Height > 0 && p.Size.Width > 0 && p.Size.ShortestEdge == 0,
		p.Size.ShortestEdge > 0 && p.Size.Height == 0 && p.Size.Width == 0
	switch {
	case p.DoResize && !fixed && !edge:
		return fmt.Errorf("size %+v: want a height and a width, or a shortest_edge", p.Size)
	case p.DoResize && p.Type == ConvNextProcessor && !edge:
		return fmt.Errorf("size %+v: %s resizes a shortest_edge", p.Size, p.Type)
	case p.DoResize && p.Type == ConvNextProcessor && p.Size.ShortestEdge < 384 && !(p.CropPct > 0 && p.CropPct <= 1):
		return fmt.Errorf("crop_pct %g: want a fraction in (0, 1]", p.CropPct)
	case p.DoCenterCrop && (p.CropSize.Height < 1 || p.CropSize.Width < 1 || p.CropSize.ShortestEdge != 0):
		return fmt.Errorf("crop_size %+v: want a positive height and width", p.CropSize)
	case p.DoRescale && (!(p.RescaleFactor > 0) || math.IsInf(p.RescaleFactor, 0)):
		return fmt.Errorf("rescale_factor %g: want a positive factor (1/255)", p.RescaleFactor)
	case !slices.Contains(pillowFilters, p.Resample):
		return fmt.Errorf("resample %s: not one of Pillow's filters", p.Resample)
	}
	if p.DoNormalize {
		for c := range 3 {
			if !(p.Std[c] > 0) || math.IsInf(p.Mean[c], 0) || math.IsNaN(p.Mean[c]) {
				return fmt.Errorf("image_mean %v, image_std %v: want finite means and positive deviations", p.Mean, p.Std)
			}
		}
	}
	return nil
}

// Kind is the processor's class, image_processor_type ("ViTImageProcessor").
func (p *ImageProcessor) Kind() string { return p.Type }

// SavePretrained writes preprocessor_config.json into dir as transformers 5.25 writes the
// class's (sorted keys, two-space indent; the resample as Pillow's code), which transformers'
// AutoImageProcessor and LoadImageProcessor read back as the same processor.
func (p *ImageProcessor) SavePretrained(dir string) error {
	if err := p.Check(); err != nil {
		return fmt.Errorf("auto: SavePretrained: %w", err)
	}
	size := func(s ImageSize) map[string]int {
		if s.ShortestEdge > 0 {
			return map[string]int{"shortest_edge": s.ShortestEdge}
		}
		return map[string]int{"height": s.Height, "width": s.Width}
	}
	doc := map[string]any{"image_processor_type": p.Type, "do_resize": p.DoResize, "size": size(p.Size),
		"resample": slices.Index(pillowFilters, p.Resample), "do_center_crop": p.DoCenterCrop, "do_rescale": p.DoRescale,
		"rescale_factor": p.RescaleFactor, "do_normalize": p.DoNormalize, "image_mean": p.Mean[:], "image_std": p.Std[:]}
	if p.DoCenterCrop || p.CropSize != (ImageSize{}) {
		doc["crop_size"] = size(p.CropSize)
	}
	if p.Type == ConvNextProcessor {
		doc["crop_pct"] = p.CropPct
	}
	if p.Type == BitProcessor {
		doc["do_convert_rgb"] = true
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("auto: SavePretrained: %w", err)
	}
	return fsutil.WriteFileAtomic(filepath.Join(dir, ImageProcessorFile), append(b, '\n'))
}

// OutputSize is the height and width of every image Process makes, when the settings fix it
// (a resize to height x width, ConvNeXt's square, or a centre crop); ok is false when the
// output keeps each image's aspect ratio (a shortest_edge resize without a crop) or its size
// (no resize, no crop).
func (p *ImageProcessor) OutputSize() (height, width int, ok bool) {
	switch {
	case p.DoCenterCrop:
		return p.CropSize.Height, p.CropSize.Width, true
	case !p.DoResize:
		return 0, 0, false
	case p.Type == ConvNextProcessor:
		return p.Size.ShortestEdge, p.Size.ShortestEdge, true
	case p.Size.ShortestEdge == 0:
		return p.Size.Height, p.Size.Width, true
	}
	return 0, 0, false
}

// SetOutputSize makes the pipeline output n x n images (an image family's req.ImageSize): a
// centre crop becomes n x n and the resize before it is scaled by the same factor (rounded),
// so that the crop keeps its share of the image (DINOv2's 256 then 224 becomes 293 then 256
// at 256); without a crop, a height x width size becomes n x n and a shortest_edge n
// (ConvNeXt's square of n; for the others the output then keeps each image's aspect ratio).
func (p *ImageProcessor) SetOutputSize(n int) error {
	if n < 1 {
		return fmt.Errorf("auto: image size %d: want a positive number of pixels", n)
	}
	scale := func(v int) int { return max(1, int(math.Round(float64(v)*float64(n)/float64(p.CropSize.Height)))) }
	switch s := p.Size; {
	case p.DoCenterCrop && s.ShortestEdge > 0:
		p.Size = ImageSize{ShortestEdge: scale(s.ShortestEdge)}
	case p.DoCenterCrop:
		p.Size = ImageSize{Height: scale(s.Height), Width: scale(s.Width)}
	case s.ShortestEdge > 0:
		p.Size = ImageSize{ShortestEdge: n}
	default:
		p.Size = ImageSize{Height: n, Width: n}
	}
	if p.DoCenterCrop {
		p.CropSize = ImageSize{Height: n, Width: n}
	}
	return p.Check()
}

// Resized is the evaluation pipeline's 8-bit half on one image: the resize (ConvNeXt's
// crop_pct rule included) and the centre crop, each when the settings ask for it. m is left
// as it was.
func (p *ImageProcessor) Resized(m *image.RGB) (*image.RGB, error) {
	var err error
	if p.DoResize {
		switch s := p.Size; {
		case p.Type == ConvNextProcessor && s.ShortestEdge < 384:
			if m, err = (transforms.Resize{Size: int(float64(s.ShortestEdge) / p.CropPct), Interpolation: p.Resample}).Apply(m, nil); err != nil {
				return nil, err
			}
			m = centerCrop(m, s.ShortestEdge, s.ShortestEdge)
		case p.Type == ConvNextProcessor:
			m, err = transforms.Resize{Height: s.ShortestEdge, Width: s.ShortestEdge, Interpolation: p.Resample}.Apply(m, nil)
		case s.ShortestEdge > 0:
			m, err = transforms.Resize{Size: s.ShortestEdge, Interpolation: p.Resample}.Apply(m, nil)
		default:
			m, err = transforms.Resize{Height: s.Height, Width: s.Width, Interpolation: p.Resample}.Apply(m, nil)
		}
		if err != nil {
			return nil, err
		}
	}
	if p.DoCenterCrop {
		m = centerCrop(m, p.CropSize.Height, p.CropSize.Width)
	}
	return m, nil
}

// centerCrop is transformers' center_crop: the window's corner at the floor of the halved
// margins; an image smaller than the window is first padded with zeros, ceil of the halved
// shortfall before it (each side on its own).
func centerCrop(m *image.RGB, ch, cw int) *image.RGB {
	if ch == m.Height && cw == m.Width {
		return m
	}
	// offset is the source row (column) of the window's first: the margin's floor half, or
	// minus the padding before the image.
	offset := func(in, out int) int {
		if out > in {
			return -((out - in + 1) / 2)
		}
		return (in - out) / 2
	}
	top, left := offset(m.Height, ch), offset(m.Width, cw)
	out := &image.RGB{Width: cw, Height: ch, Pix: make([]uint8, cw*ch*3)}
	x0, x1 := max(0, -left), min(cw, m.Width-left) // the window's columns inside the image
	for y := range ch {
		if sy := top + y; sy >= 0 && sy < m.Height && x1 > x0 {
			copy(out.Pix[(y*cw+x0)*3:(y*cw+x1)*3], m.Pix[(sy*m.Width+left+x0)*3:(sy*m.Width+left+x1)*3])
		}
	}
	return out
}

// Floats appends the float half of the pipeline on an 8-bit image to dst: each value
// rescaled (float64(v) x rescale_factor, rounded to float32, as transformers' rescale) and
// normalised ((x - mean) / std in float32, as its normalize), each when the settings say so,
// HWC.
func (p *ImageProcessor) Floats(dst []float32, m *image.RGB) []float32 {
	var mean, std [3]float32
	for c := range 3 {
		mean[c], std[c] = float32(p.Mean[c]), float32(p.Std[c])
	}
	for i, v := range m.Pix {
		x := float32(v)
		if p.DoRescale {
			x = float32(float64(v) * p.RescaleFactor)
		}
		if p.DoNormalize {
			x = (x - mean[i%3]) / std[i%3]
		}
		dst = append(dst, x)
	}
	return dst
}

// Process runs the evaluation pipeline on a batch of decoded images: float32 [B, H, W, 3],
// the first and only input of an image family's Logits. The images may be of any sizes; what
// the pipeline makes of them must be of one size (OutputSize), else the error names the two
// sizes.
func (p *ImageProcessor) Process(batch []*image.RGB) ([]*tensors.Tensor, error) {
	return p.process(batch, true)
}

// ProcessAugmented is Process for images that Augmentation made (already of the output
// size): the float half only (Floats).
func (p *ImageProcessor) ProcessAugmented(batch []*image.RGB) ([]*tensors.Tensor, error) {
	return p.process(batch, false)
}

func (p *ImageProcessor) process(batch []*image.RGB, resize bool) ([]*tensors.Tensor, error) {
	if len(batch) == 0 {
		return nil, fmt.Errorf("auto: Process: an empty batch")
	}
	var pix []float32
	h, w := 0, 0
	for i, m := range batch {
		if m == nil || m.Width < 1 || m.Height < 1 || len(m.Pix) != m.Width*m.Height*3 {
			return nil, fmt.Errorf("auto: Process: image %d is not a decoded RGB image", i)
		}
		if resize {
			var err error
			if m, err = p.Resized(m); err != nil {
				return nil, fmt.Errorf("auto: Process: image %d: %w", i, err)
			}
		}
		if i == 0 {
			h, w = m.Height, m.Width
			pix = make([]float32, 0, len(batch)*h*w*3)
		} else if m.Height != h || m.Width != w {
			return nil, fmt.Errorf("auto: Process: image %d comes out %dx%d, image 0 %dx%d: a batch needs one size "+
				"(a processor with a size of height and width, or a crop_size, gives it)", i, m.Width, m.Height, w, h)
		}
		pix = p.Floats(pix, m)
	}
	return []*tensors.Tensor{tensors.FromFlatDataAndDimensions(pix, len(batch), h, w, 3)}, nil
}

// Augmentation is the training half, run_image_classification.py's: RandomResizedCrop to the
// evaluation output's size (OutputSize; for a processor without one, a shortest_edge square,
// or height x width) with torchvision's defaults (scale 0.08-1, ratio 3/4-4/3, bilinear), then
// RandomHorizontalFlip(0.5), on the 8-bit image; ProcessAugmented then rescales and
// normalises as evaluation does. Drawn from the example's generator (data.ExampleKey.Rand),
// the same example gets the same crop and flip on every topology.
func (p *ImageProcessor) Augmentation() transforms.Compose {
	h, w, ok := p.OutputSize()
	if !ok {
		h, w = p.Size.Height, p.Size.Width
		if p.Size.ShortestEdge > 0 {
			h, w = p.Size.ShortestEdge, p.Size.ShortestEdge
		}
	}
	return transforms.Compose{transforms.RandomResizedCrop{Height: h, Width: w}, transforms.RandomHorizontalFlip{P: 0.5}}
}

var _ BatchProcessor[*image.RGB] = (*ImageProcessor)(nil)
