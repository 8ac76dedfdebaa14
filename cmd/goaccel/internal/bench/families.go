package bench

import (
	"fmt"

	"github.com/goaccel/goaccel/models/auto"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/ml/model"
)

// The classifier works come from models/auto's registry, never from a family by name: a
// work's Spec.Family is a model_type, and the family that reads it gives the work's
// config.json (its Reference at the spec's shape), its classifier, its inputs and its FLOPs.
// Each registered family with a reference has a work of its own, named by the family
// (modernbert: ModernBERT-base's shape; deberta: DeBERTa-v3-small's; bert: BERT-base's), at
// B=8 L=128 on CPU (128 tokens: ModernBERT's local layers see a 128-token window, so at
// shorter sequences they would be global ones) and B=32 L=128 on a GPU; an image family's
// (vit: ViT-base/16's shape) at images of 224 pixels a side (Seq is the side), random
// pixels. PyTorch trains the same config.json with transformers' class for the family
// (scripts/bench_torch.py, which knows bert, modernbert and deberta).

// imageSide is the image side of an image family's work (auto.Facts.Image): 224, the
// released checkpoints' (ViT-base/16 at 224).
const imageSide = 224

// familyWork is the work of a registered family, named by it.
func familyWork(f auto.Family) (struct{ CPU, GPU Spec }, bool) {
	ref := f.Reference()
	if ref.Config == nil {
		return struct{ CPU, GPU Spec }{}, false
	}
	seq := 128
	if isImage(f) {
		seq = imageSide // an image family's size is the image side
	}
	s := Spec{Work: f.Name(), Family: f.ModelTypes()[0], Seq: seq, Hidden: ref.Shape.Hidden, Layers: ref.Shape.Layers,
		Heads: ref.Shape.Heads, FF: ref.Shape.FF, Vocab: ref.Shape.Vocab}
	cpu, gpu := s, s
	cpu.Batch, gpu.Batch = 8, 32
	return struct{ CPU, GPU Spec }{cpu, gpu}, true
}

// isImage reports whether f is an image family: its reference config at its own shape has
// Facts.Image.
func isImage(f auto.Family) bool {
	ref := f.Reference()
	if ref.Config == nil {
		return false
	}
	cfg, err := ref.Config(ref.Shape, imageSide)
	return err == nil && cfg.Facts().Image != nil
}

// imageFamily reports whether the spec's family is an image family (see isImage), whatever
// the spec's shape.
func (s Spec) imageFamily() bool {
	f, err := s.familyOf()
	return s.IsBERT() && err == nil && isImage(f)
}

// Families are the works of the registered families (see familyWork), in the order they
// were registered.
func Families() []string {
	var out []string
	for _, f := range auto.Registered() {
		if _, own := ownWorks[f.Name()]; !own {
			if _, ok := familyWork(f); ok {
				out = append(out, f.Name())
			}
		}
	}
	return out
}

// lookupWork is the work of a name: the bench's own, or a registered family's.
func lookupWork(name string) (struct{ CPU, GPU Spec }, bool) {
	if w, ok := Works[name]; ok {
		return w, true
	}
	if f := auto.FamilyNamed(name); f != nil {
		return familyWork(f)
	}
	return struct{ CPU, GPU Spec }{}, false
}

// familyOf is the registered family of the spec's classifier.
func (s Spec) familyOf() (auto.Family, error) {
	f := auto.FamilyOf(s.Family)
	if f == nil {
		return nil, fmt.Errorf("bench: %s: no registered family reads model_type %q (%v)", s.Work, s.Family, auto.Families())
	}
	return f, nil
}

// config is the family's reference config at the spec's shape.
func (s Spec) config() (auto.Config, error) {
	f, err := s.familyOf()
	if err != nil {
		return nil, err
	}
	ref := f.Reference()
	if ref.Config == nil {
		return nil, fmt.Errorf("bench: %s: family %s has no reference config", s.Work, f.Name())
	}
	return ref.Config(auto.Shape{Hidden: s.Hidden, Layers: s.Layers, Heads: s.Heads, FF: s.FF, Vocab: s.Vocab}, s.Seq)
}

// familyConfig returns the config.json of a classifier work, as the family writes it, the
// text handed to scripts/bench_torch.py.
func (s Spec) familyConfig() ([]byte, error) {
	cfg, err := s.config()
	if err != nil {
		return nil, err
	}
	return cfg.JSON()
}

// image is the image input of the spec's family (its Facts.Image), nil for a text family or
// a spec without a family config.
func (s Spec) image() *auto.ImageFacts {
	if !s.IsBERT() {
		return nil
	}
	cfg, err := s.config()
	if err != nil {
		return nil
	}
	return cfg.Facts().Image
}

// classifier is what the step needs of a sequence classifier: the Store provider the
// accelerator prepares (the family's own classifier) and its logits of the batch's inputs.
type classifier struct {
	model.StoreProvider
	logits func(s *model.Scope, inputs []*Node) *Node
	inputs int
}

// newClassifier builds the random classifier of a classifier work through its family.
func newClassifier(spec Spec) (*classifier, error) {
	cfg, err := spec.config()
	if err != nil {
		return nil, err
	}
	net, err := cfg.New(nil)
	if err != nil {
		return nil, err
	}
	return &classifier{StoreProvider: net.Classifier(), logits: net.Logits, inputs: cfg.Facts().Inputs}, nil
}
