package resnet

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/internal/familytest"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// TestSavePretrainedRoundTrip: a loaded checkpoint saved untouched gives back the file's
// tensors bit for bit (kernels transposed to HWIO and back, num_batches_tracked int64), and
// a checkpoint whose running statistics one training forward moved loads back with the same
// logits and num_batches_tracked 8.
func TestSavePretrainedRoundTrip(t *testing.T) {
	f := loadFixtures(t)
	backend := familytest.XLA(t)
	m := f.Models["bottleneck"]
	src := filepath.Join("testdata", m.Folder)
	clf := loadFixture(t, m)
	dir := t.TempDir()
	if err := SavePretrained(dir, clf); err != nil {
		t.Fatal(err)
	}
	want, _, err := safetensors.ReadFile(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	got, meta, err := safetensors.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	byName := func(a, b safetensors.Named) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(want, byName)
	slices.SortFunc(got, byName)
	if len(got) != len(want) || meta["format"] != "pt" {
		t.Fatalf("saved %d tensors (metadata %v), the source has %d", len(got), meta, len(want))
	}
	for i := range want {
		if got[i].Name != want[i].Name || !got[i].Tensor.Shape().Equal(want[i].Tensor.Shape()) {
			t.Fatalf("tensor %d: saved %s %s, source %s %s", i, got[i].Name, got[i].Tensor.Shape(), want[i].Name, want[i].Tensor.Shape())
		}
		if !bytesEqual(got[i].Tensor, want[i].Tensor) {
			t.Errorf("tensor %s differs from the source's", want[i].Name)
		}
	}

	pixels := m.Runs[0].Pixels(t)
	forward(t, backend, clf, pixels, true) // moves the running statistics
	_, before := forward(t, backend, clf, pixels, false)
	if err := SavePretrained(dir, clf); err != nil {
		t.Fatal(err)
	}
	back, err := LoadPretrained(dir, model.NewStore(), LoadOptions{LoadHead: true})
	if err != nil {
		t.Fatal(err)
	}
	_, after := forward(t, backend, back, pixels, false)
	if d := testutil.MaxAbsDiff(t, "logits", after, before); d != 0 {
		t.Errorf("logits after the round trip differ by %g", d)
	}
	tracked := back.Store().GetVariable("/resnet/embedder/embedder/normalization/num_batches_tracked")
	if n := tensors.MustCopyFlatData[int64](tracked.MustValue())[0]; n != 8 {
		t.Errorf("num_batches_tracked after one training forward from 7: %d, want 8", n)
	}
}

func bytesEqual(a, b *tensors.Tensor) bool {
	var x, y []byte
	_ = a.ConstBytes(func(d []byte) { x = append(x, d...) })
	_ = b.ConstBytes(func(d []byte) { y = append(y, d...) })
	return string(x) == string(y)
}

// TestSavedLoadsInTransformers: transformers' AutoModelForImageClassification reads the
// folder SavePretrained writes after a training forward moved the running statistics, as
// ResNetForImageClassification, with this package's evaluation logits within tolerance.
func TestSavedLoadsInTransformers(t *testing.T) {
	python := testutil.TorchPython(t, "transformers loading goaccel's ResNet folders")
	f := loadFixtures(t)
	backend := familytest.XLA(t)
	for name, m := range f.Models {
		clf := loadFixture(t, m)
		pixels := m.Runs[1].Pixels(t)
		forward(t, backend, clf, pixels, true)
		_, logits := forward(t, backend, clf, pixels, false)
		dir := t.TempDir()
		if err := SavePretrained(dir, clf); err != nil {
			t.Fatal(err)
		}
		class, theirs := familytest.TransformersImageLogits(t, python, dir, pixels)
		d := testutil.MaxAbsDiff(t, name+" logits", logits, theirs)
		t.Logf("%s: transformers reads the saved folder as %s, logits max abs diff %.2g", name, class, d)
		if class != "ResNetForImageClassification" || d > tolerance {
			t.Errorf("%s: %s, logits diff %g", name, class, d)
		}
	}
}

// TestLoadErrors: a config.json value this package does not compute is an error naming the
// key; missing, misshapen and unexpected tensors are errors naming them.
func TestLoadErrors(t *testing.T) {
	src := filepath.Join("testdata", "basic")
	cases := []familytest.LoadCase[LoadOptions]{
		familytest.Case("layer_type", nil, familytest.Set("layer_type", "wide"), LoadOptions{}, "layer_type", "wide"),
		familytest.Case("hidden_act", nil, familytest.Set("hidden_act", "mish"), LoadOptions{}, "hidden_act", "mish"),
		familytest.Case("depths", nil, familytest.Set("depths", []int{2}), LoadOptions{}, "depths"),
		familytest.Case("model_type", nil, familytest.Set("model_type", "convnext"), LoadOptions{}, "model_type"),
		familytest.Case("missing tensor", familytest.Without("resnet.encoder.stages.1.layers.0.shortcut.normalization.running_var"), nil,
			LoadOptions{}, "missing", "shortcut.normalization.running_var"),
		familytest.Case("no head", familytest.Without("classifier.1.bias"), nil, LoadOptions{LoadHead: true}, "classifier.1.bias"),
		familytest.Case("wider stem", nil, familytest.Set("embedding_size", 16), LoadOptions{}, "embedder.convolution.weight", "shape"),
	}
	familytest.CheckLoadErrors(t, src, cases, func(dir string, opts LoadOptions) error {
		_, err := LoadPretrained(dir, model.NewStore(), opts)
		return err
	})
	if _, err := LoadPretrained(filepath.Join(t.TempDir(), "none"), nil, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("a missing folder: %v", err)
	}
}
