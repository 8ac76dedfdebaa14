package auto

import (
	"slices"
	"strings"
	"testing"
)

// TestEveryFamilyHasABlank: every registered family's reference config builds a blank
// classifier whose facts are the shape asked for, and the fixtures' families come out named
// by their model_type, with their inputs.
func TestEveryFamilyHasABlank(t *testing.T) {
	var types []string
	for _, f := range Registered() {
		types = append(types, f.ModelTypes()...)
		shape := Shape{Hidden: 16, Layers: 2, Heads: 2, FF: 32, Vocab: 64}
		cfg, err := f.Reference().Config(shape, 16)
		if err != nil {
			t.Errorf("%s: reference config: %v", f.Name(), err)
			continue
		}
		b, err := BlankOf(cfg, 3, 16, f.Name())
		if err != nil {
			t.Errorf("%s: %v", f.Name(), err)
			continue
		}
		want := shape
		if b.Facts.Image != nil {
			want.Vocab = 0 // an image family has no vocabulary
			if b.Facts.Image.PatchSize == 0 {
				want.Heads, want.FF = 0, 0 // nor a convolutional one heads and a feed-forward width
			}
		}
		if b.Facts.Shape != want || !slices.Contains(f.ModelTypes(), b.Family) || b.Classifier.NumParameters() == 0 {
			t.Errorf("%s: blank %s of %+v, %d parameters; want %+v", f.Name(), b.Family, b.Facts, b.Classifier.NumParameters(), shape)
		}
	}
	slices.Sort(types)
	if !slices.Equal(types, Families()) {
		t.Errorf("registered model types %v, Families %v", types, Families())
	}
	for _, c := range []struct {
		dir, family string
		inputs      int
	}{
		{"../modernbert/testdata/tiny", "modernbert", 2},
		{"../deberta/testdata/tiny", "deberta-v2", 3},
		{"../deberta/testdata/tiny_v3", "deberta-v2", 3},
	} {
		b, err := NewBlank(c.dir, 7, 16)
		if err != nil {
			t.Errorf("%s: %v", c.dir, err)
			continue
		}
		if b.Family != c.family || b.Inputs != c.inputs || b.Classifier.NumParameters() == 0 {
			t.Errorf("%s: family %s, %d inputs, %d parameters; want %s, %d", c.dir, b.Family, b.Inputs, b.Classifier.NumParameters(), c.family, c.inputs)
		}
	}
	if _, err := NewBlank("../modernbert/testdata/tiny", 0, 100000); err == nil || !strings.Contains(err.Error(), "--seq_len 100000") ||
		!strings.Contains(err.Error(), "config.json") {
		t.Errorf("a --seq_len beyond the positions: %v", err)
	}
}
