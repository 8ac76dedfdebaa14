package transforms

import (
	"fmt"
	"math/rand/v2"

	"github.com/goaccel/goaccel/data/image"
)

// ToTensor is torchvision's ToTensor on an 8-bit RGB image: each value / 255 as float32, kept
// HWC (goaccel's layout, docs/images.md), not transposed to CHW as torchvision does.
type ToTensor struct{}

// Floats appends m's values / 255 to dst and returns it.
func (ToTensor) Floats(dst []float32, m *image.RGB) []float32 {
	for _, v := range m.Pix {
		dst = append(dst, float32(v)/255)
	}
	return dst
}

// Pipeline is an image processor: Transforms on the 8-bit image, then ToTensor and, unless
// Normalize is nil, Normalize. ViTEval and ConvNextEval build transformers' evaluation ones.
type Pipeline struct {
	Transforms Compose
	Normalize  *Normalize
}

// Floats runs the pipeline on m (r feeds the random transforms; nil for evaluation ones) and
// appends the HWC floats to dst, giving also the final image's width and height.
func (p Pipeline) Floats(dst []float32, m *image.RGB, r *rand.Rand) (out []float32, w, h int, err error) {
	if m, err = p.Transforms.Apply(m, r); err != nil {
		return nil, 0, 0, err
	}
	if p.Normalize == nil {
		return ToTensor{}.Floats(dst, m), m.Width, m.Height, nil
	}
	out, err = p.Normalize.Floats(dst, m)
	return out, m.Width, m.Height, err
}

// ViTEval is the evaluation pipeline of transformers' ViTImageProcessor as its Pillow backend
// (ViTImageProcessorPil) runs it: Resize to height x width with Bilinear, rescale by 1/255,
// Normalize(mean, std) (0.5 each in ViT's configs). Its pixels equal Pillow's; for the
// torchvision backend's, see docs/images.md.
func ViTEval(height, width int, mean, std [3]float32) Pipeline {
	return Pipeline{
		Transforms: Compose{Resize{Height: height, Width: width, Interpolation: Bilinear}},
		Normalize:  &Normalize{Mean: mean, Std: std},
	}
}

// ConvNextEval is the evaluation pipeline of transformers' ConvNextImageProcessor as its
// Pillow backend runs it: below 384, the shorter edge resized to int(shortestEdge/cropPct)
// with Bicubic, then the central shortestEdge x shortestEdge window (corner at the floor of
// the halved margins, as transformers' center_crop, not torchvision's rounding); at 384 and
// above, a warp to shortestEdge x shortestEdge. Then /255 and Normalize(mean, std).
func ConvNextEval(shortestEdge int, cropPct float64, mean, std [3]float32) Pipeline {
	p := Pipeline{Normalize: &Normalize{Mean: mean, Std: std}}
	if shortestEdge >= 384 {
		p.Transforms = Compose{Resize{Height: shortestEdge, Width: shortestEdge, Interpolation: Bicubic}}
		return p
	}
	p.Transforms = Compose{
		Resize{Size: int(float64(shortestEdge) / cropPct), Interpolation: Bicubic},
		floorCenterCrop{height: shortestEdge, width: shortestEdge},
	}
	if !(cropPct > 0 && cropPct <= 1) {
		p.Transforms = Compose{badTransform{fmt.Errorf("transforms: ConvNextEval crop_pct %g: want a fraction in (0, 1]", cropPct)}}
	}
	return p
}

// floorCenterCrop is transformers' center_crop: the corner at (h-height)//2, (w-width)//2.
type floorCenterCrop struct{ height, width int }

func (c floorCenterCrop) Apply(m *image.RGB, _ *rand.Rand) (*image.RGB, error) {
	if c.height < 1 || c.width < 1 || c.height > m.Height || c.width > m.Width {
		return nil, fmt.Errorf("transforms: center crop %dx%d of a %dx%d image: want 1 to the image's sides", c.width, c.height, m.Width, m.Height)
	}
	return crop(m, (m.Height-c.height)/2, (m.Width-c.width)/2, c.height, c.width), nil
}

// badTransform carries a construction error to the first Apply.
type badTransform struct{ err error }

func (b badTransform) Apply(*image.RGB, *rand.Rand) (*image.RGB, error) { return nil, b.err }
