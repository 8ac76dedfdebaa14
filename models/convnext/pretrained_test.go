package convnext

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/internal/familytest"
	"github.com/goaccel/goaccel/models/lora"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// evalLogits runs the classifier once in evaluation mode.
func evalLogits(t *testing.T, clf *Classifier, r *familytest.ImageRun) []float32 {
	t.Helper()
	_, logits := familytest.ImageForward(t, familytest.XLA(t), clf.Store(), r.Pixels(t), false, clf.Encoder,
		func(s *model.Scope, h *Node) *Node { return clf.Head(s, h) })
	return logits
}

// TestSavedLoadsInTransformers: the folders SavePretrained writes load back here with the
// same logits, and in transformers' AutoModelForImageClassification as ConvNext(V2)ForImageClassification
// with this package's logits within tolerance.
func TestSavedLoadsInTransformers(t *testing.T) {
	f := loadFixtures(t)
	python := testutil.TorchPython(t, "transformers loading goaccel's ConvNeXt folders")
	for name, m := range f.Models {
		clf := loadFixture(t, m, LoadOptions{LoadHead: true})
		r := &m.Runs[1]
		logits := evalLogits(t, clf, r)
		dir := t.TempDir()
		if err := SavePretrained(dir, clf); err != nil {
			t.Fatal(err)
		}
		back, err := LoadPretrained(dir, nil, LoadOptions{LoadHead: true})
		if err != nil {
			t.Fatal(err)
		}
		if d := testutil.MaxAbsDiff(t, "logits", evalLogits(t, back, r), logits); d != 0 {
			t.Errorf("%s: read back, logits differ by %g", name, d)
		}
		class, theirs := familytest.TransformersImageLogits(t, python, dir, r.Pixels(t))
		d := testutil.MaxAbsDiff(t, name+" logits", logits, theirs)
		t.Logf("%s: transformers reads the saved folder as %s, logits max abs diff %.2g", name, class, d)
		if !strings.HasPrefix(class, "ConvNext") || d > tolerance {
			t.Errorf("%s: %s, logits diff %g", name, class, d)
		}
	}
}

// peftLogits is the script of TestLoRAInPEFT: the base folder argv[1] in
// AutoModelForImageClassification, the adapter argv[2] by PeftModel.from_pretrained, the
// logits on the pixels of argv[3].
const peftLogits = `
import json, sys, torch, transformers, peft
from safetensors.torch import load_file
base = transformers.AutoModelForImageClassification.from_pretrained(sys.argv[1])
m = peft.PeftModel.from_pretrained(base, sys.argv[2]).eval()
x = load_file(sys.argv[3])["pixels"].permute(0, 3, 1, 2)
with torch.no_grad():
    out = m(pixel_values=x).logits
print(json.dumps({"logits": out.reshape(-1).tolist()}))
`

// TestLoRAInPEFT: a LoRA adapter on pwconv1 and pwconv2 (the default targets), trained 3 SGD
// steps so that B is not zero, trains the adapter and the classifier only; SaveAdapter's
// files load in PEFT's PeftModel.from_pretrained on the base folder with this package's
// logits, and SavePretrained's merged folder in transformers with them too.
func TestLoRAInPEFT(t *testing.T) {
	f := loadFixtures(t)
	m := f.Models["tiny"]
	base := filepath.Join("testdata", m.Folder)
	clf := loadFixture(t, m, LoadOptions{LoadHead: true})
	clf.Config.DropPathRate = 0
	a, err := clf.AttachLoRA(lora.Config{R: 4, Alpha: 8, TargetModules: lora.DefaultTargetModules(V1)}, base)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Targets()) != 6 {
		t.Errorf("targets %v, want the 3 blocks' pwconv1 and pwconv2", a.Targets())
	}
	run := *m.Train
	run.Losses = run.Losses[:3]
	bias := func() []float32 {
		return tensors.MustCopyFlatData[float32](clf.Store().GetVariable("/convnext/encoder/stages/0/layers/0/dwconv/bias").MustValue())
	}
	before := bias()
	r := &m.Runs[0]
	var logits []float32
	dir := t.TempDir()
	run.Train(t, clf, clf.Logits, "no", func() { // while the values are on the accelerator's backend
		if !slices.Equal(before, bias()) {
			t.Error("a frozen tensor (dwconv.bias) changed in LoRA training")
		}
		if err := SavePretrained(dir, clf); err != nil {
			t.Fatal(err)
		}
		for v := range clf.Store().IterVariables() { // detached from the accelerator's backend
			v.MustValue().ToLocal()
		}
	})
	logits = evalLogits(t, clf, r)
	var cfg map[string]any
	contents, err := os.ReadFile(filepath.Join(dir, AdapterDir, lora.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(contents, &cfg); err != nil {
		t.Fatal(err)
	}
	t.Logf("adapter_config.json: task_type %v, target_modules %v, modules_to_save %v", cfg["task_type"], cfg["target_modules"], cfg["modules_to_save"])
	python := testutil.TorchPython(t, "PEFT loading goaccel's ConvNeXt adapter")
	pixels := familytest.SavePixels(t, r.Pixels(t))
	var out struct {
		Logits []float32 `json:"logits"`
	}
	testutil.RunPythonJSON(t, "PEFT's logits", python, peftLogits, &out, base, filepath.Join(dir, AdapterDir), pixels)
	d := testutil.MaxAbsDiff(t, "PEFT logits", logits, out.Logits)
	_, merged := familytest.TransformersImageLogits(t, python, dir, r.Pixels(t))
	dm := testutil.MaxAbsDiff(t, "merged logits", logits, merged)
	t.Logf("LoRA after 3 steps: PEFT's logits on the adapter max abs diff %.2g, transformers' on the merged folder %.2g", d, dm)
	if d > tolerance || dm > tolerance {
		t.Errorf("PEFT logits diff %g, merged %g, want <= %g", d, dm, tolerance)
	}
	if moved := testutil.MaxAbsDiff(t, "base logits", logits, r.Logits(t)); moved < 1e-4 {
		t.Errorf("the adapted model's logits are the base model's (within %g): the adapter did not train", moved)
	}
}
