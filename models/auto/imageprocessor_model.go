package auto

import (
	"fmt"

	"github.com/gomlx/gomlx/ml/model"
)

// NewImageModel is an image model made in code rather than loaded from a folder: the
// classifier of cfg (an image family's config, as its Family's ParseConfig reads a
// config.json) with fresh weights in store (nil: a new one), with the image processor proc,
// and opts applied as Load applies them (the head's classes and names, the problem type,
// dropout, gradient checkpointing, LoRA). Its SavePretrained writes a folder that Load and
// transformers read. proc must make images the model takes: every side of its output
// (OutputSize) is checked by the config (CheckMaxLen).
func NewImageModel(cfg Config, store *model.Store, proc *ImageProcessor, opts Options) (*Model, error) {
	switch {
	case cfg == nil || proc == nil:
		return nil, fmt.Errorf("auto: NewImageModel: nil config or processor")
	case cfg.Facts().Image == nil:
		return nil, fmt.Errorf("auto: NewImageModel: model_type %q is not an image family", cfg.Facts().ModelType)
	case opts.MaxLen != 0 || opts.ImageSize != 0 || opts.LoadHead:
		return nil, fmt.Errorf("auto: NewImageModel: Options.MaxLen, ImageSize and LoadHead are Load's (set the processor's size: SetOutputSize)")
	}
	if err := proc.Check(); err != nil {
		return nil, fmt.Errorf("auto: NewImageModel: %w", err)
	}
	h, w, ok := proc.OutputSize()
	if !ok {
		return nil, fmt.Errorf("auto: NewImageModel: the %s keeps each image's size: the model takes one (SetOutputSize)", proc.Type)
	}
	for _, side := range []int{h, w} {
		if err := cfg.CheckMaxLen(side); err != nil {
			return nil, fmt.Errorf("auto: NewImageModel: the processor makes %dx%d images: %w", w, h, err)
		}
	}
	if store == nil {
		store = model.NewStore()
	} else if err := unused(store); err != nil {
		return nil, fmt.Errorf("auto: NewImageModel: %w", err)
	}
	net, err := cfg.New(store)
	if err != nil {
		return nil, err
	}
	return newModel(net, proc, opts, "")
}
