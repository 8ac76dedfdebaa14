package resnet

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/internal/familytest"
	"github.com/goaccel/goaccel/models/lora"
	"github.com/gomlx/gomlx/core/tensors"
)

// peftLogits is the script of TestLoRAInPEFT: the base folder argv[1] in
// AutoModelForImageClassification, the adapter argv[2] by PeftModel.from_pretrained (its
// convolutions become PEFT's lora.Conv2d), the logits on the pixels of argv[3].
const peftLogits = `
import json, sys, torch, transformers, peft
from safetensors.torch import load_file
base = transformers.AutoModelForImageClassification.from_pretrained(sys.argv[1])
m = peft.PeftModel.from_pretrained(base, sys.argv[2]).eval()
convs = sum(1 for _, mod in m.named_modules() if isinstance(mod, peft.tuners.lora.Conv2d))
x = load_file(sys.argv[3])["pixels"].permute(0, 3, 1, 2)
with torch.no_grad():
    out = m(pixel_values=x).logits
print(json.dumps({"logits": out.reshape(-1).tolist(), "convs": convs, "peft": peft.__version__}))
`

// TestLoRAInPEFT: LoRA on every convolution (the default target "convolution", PEFT's Conv2d
// LoRA) of both fixtures. A fresh adapter (B = 0) gives the base's logits bit for bit and
// trains A, B and the classifier only. After 3 SGD steps (B no longer zero, the kernels as
// loaded): SavePretrained's merged folder in transformers gives the trained classifier's
// logits; the adapter folder loaded here onto the base, and by PEFT's
// PeftModel.from_pretrained onto transformers' base, give the same logits (the base's
// BatchNorm running statistics: PEFT's adapter does not hold the ones training moved).
func TestLoRAInPEFT(t *testing.T) {
	f := loadFixtures(t)
	backend := familytest.XLA(t)
	for _, name := range []string{"basic", "bottleneck"} {
		m := f.Models[name]
		base := filepath.Join("testdata", m.Folder)
		r := &m.Runs[0]
		pixels := r.Pixels(t)
		_, baseLogits := forward(t, backend, loadFixture(t, m), pixels, false)

		clf := loadFixture(t, m)
		a, err := clf.AttachLoRA(lora.Config{R: 4, Alpha: 8}, base)
		if err != nil {
			t.Fatal(err)
		}
		convs := 0
		for _, spec := range clf.Config.Tensors() {
			if isKernel(spec.Name) {
				convs++
			}
		}
		if len(a.Targets()) != convs || !slices.Equal(a.Config().TargetModules, []string{"convolution"}) {
			t.Errorf("%s: targets %q (%v), want all %d convolutions (default \"convolution\")", name, a.Targets(), a.Config().TargetModules, convs)
		}
		// B = 0 adds exact zeros, but XLA may compile the graph with the adapter's branch into
		// other fusions and so another summation order (seen at its default optimisation level in
		// CI): the base's logits to float32 rounding, not bit for bit.
		_, fresh := forward(t, backend, clf, pixels, false)
		if d := testutil.MaxAbsDiff(t, "fresh adapter logits", fresh, baseLogits); d > 1e-6 {
			t.Errorf("%s: a fresh adapter (B = 0) changes the logits by %g, want <= 1e-6 (rounding)", name, d)
		} else {
			t.Logf("%s: a fresh adapter (B = 0) leaves the logits within %.2g", name, d)
		}
		trainable := 0
		for v := range clf.Store().IterVariables() {
			if v.Trainable {
				trainable += v.Shape().Size()
				if p := v.Path(); !strings.Contains(p, "/lora_A/") && !strings.Contains(p, "/lora_B/") && !strings.HasPrefix(p, "/classifier/") {
					t.Errorf("%s: %s trains: only the adapter and the classifier should", name, p)
				}
			}
		}
		if trainable != a.NumTrainable() {
			t.Errorf("%s: %d trainable weights, NumTrainable %d", name, trainable, a.NumTrainable())
		}

		clf = loadFixture(t, m)
		if a, err = clf.AttachLoRA(lora.Config{R: 4, Alpha: 8}, base); err != nil {
			t.Fatal(err)
		}
		run := *m.Train
		run.Losses = run.Losses[:3]
		const kernel = "/resnet/embedder/embedder/convolution/weight"
		value := func(path string) []float32 {
			return tensors.MustCopyFlatData[float32](clf.Store().GetVariable(path).MustValue())
		}
		before := value(kernel)
		dir := t.TempDir()
		losses := run.Train(t, clf, clf.Logits, "no", func() {
			if !slices.Equal(before, value(kernel)) {
				t.Errorf("%s: a frozen kernel changed in LoRA training", name)
			}
			if b := value(kernel[:len(kernel)-len("weight")] + "lora_B/weight"); slices.Equal(b, make([]float32, len(b))) {
				t.Errorf("%s: the stem's lora_B is still zero after 3 steps", name)
			}
			if err := SavePretrained(dir, clf); err != nil {
				t.Fatal(err)
			}
			for v := range clf.Store().IterVariables() { // detached from the accelerator's backend
				v.MustValue().ToLocal()
			}
		})
		if d := losses[0] - m.Train.Losses[0]; d > trainTolerance || d < -trainTolerance {
			t.Errorf("%s: first LoRA step's loss %.6f, PyTorch's loss of the base %.6f", name, losses[0], m.Train.Losses[0])
		}
		_, trained := forward(t, backend, clf, pixels, false)
		adapterDir := filepath.Join(dir, AdapterDir)
		var cfg map[string]any
		contents, err := os.ReadFile(filepath.Join(adapterDir, lora.ConfigFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(contents, &cfg); err != nil {
			t.Fatal(err)
		}

		back := loadFixture(t, m)
		if _, err := LoadAdapter(adapterDir, back); err != nil {
			t.Fatal(err)
		}
		_, loaded := forward(t, backend, back, pixels, false)
		if moved := testutil.MaxAbsDiff(t, "base logits", loaded, baseLogits); moved < 1e-4 {
			t.Errorf("%s: the adapter's logits are the base's (within %g): it did not train", name, moved)
		}

		python := testutil.TorchPython(t, "PEFT loading goaccel's ResNet adapter")
		var out struct {
			Logits []float32 `json:"logits"`
			Convs  int       `json:"convs"`
			PEFT   string    `json:"peft"`
		}
		testutil.RunPythonJSON(t, "PEFT's logits", python, peftLogits, &out, base, adapterDir, familytest.SavePixels(t, pixels))
		d := testutil.MaxAbsDiff(t, "PEFT logits", loaded, out.Logits)
		_, merged := familytest.TransformersImageLogits(t, python, dir, pixels)
		dm := testutil.MaxAbsDiff(t, "merged logits", trained, merged)
		t.Logf("%s: LoRA r=4 on %d convolutions trains %d of %d weights; losses %.6f -> %.6f; adapter_config.json target_modules %v, modules_to_save %v; "+
			"peft %s: PeftModel.from_pretrained logits max abs diff %.2g (%d lora.Conv2d), merged folder in transformers %.2g",
			name, len(a.Targets()), a.NumTrainable(), clf.NumParameters(), losses[0], losses[2], cfg["target_modules"], cfg["modules_to_save"],
			out.PEFT, d, out.Convs, dm)
		if d > tolerance || dm > tolerance || out.Convs != convs {
			t.Errorf("%s: PEFT logits diff %g (%d Conv2d LoRA layers, want %d), merged %g, want <= %g", name, d, out.Convs, convs, dm, tolerance)
		}
	}
}

// TestLoRABadTarget: a target that names no convolution (the classifier is a linear layer
// of the head, which trains in full) is an error naming it and the layers there are.
func TestLoRABadTarget(t *testing.T) {
	clf := loadFixture(t, loadFixtures(t).Models["basic"])
	_, err := clf.AttachLoRA(lora.Config{TargetModules: []string{"classifier.1"}}, "")
	var target *lora.TargetError
	if !errors.As(err, &target) || !strings.Contains(err.Error(), `"classifier.1"`) || !strings.Contains(err.Error(), `"convolution"`) {
		t.Errorf("target classifier.1: %v, want a lora.TargetError naming it and \"convolution\"", err)
	}
	t.Logf("target classifier.1: %v", err)
}

// TestLoRAGradientCheckpointing: with the residual layers recomputed in the backward pass,
// 3 SGD steps of LoRA on every convolution give the plain graph's losses (within 1e-6), and
// under bf16 (SetComputeDType: LoRA's A convolution on the base's half operands) 3 steps run
// and stay within 10% of the float32 losses.
func TestLoRAGradientCheckpointing(t *testing.T) {
	m := loadFixtures(t).Models["bottleneck"]
	run := *m.Train
	run.Losses = run.Losses[:3]
	losses := map[string][]float64{}
	for _, c := range []struct {
		name, mixed string
		checkpoint  bool
	}{{"plain", "no", false}, {"checkpointed", "no", true}, {"bf16", "bf16", false}} {
		clf := loadFixture(t, m)
		clf.Config.GradientCheckpointing = c.checkpoint
		if _, err := clf.AttachLoRA(lora.Config{R: 4, Alpha: 8}, ""); err != nil {
			t.Fatal(err)
		}
		losses[c.name] = run.Train(t, clf, clf.Logits, c.mixed, nil)
	}
	t.Logf("LoRA, 3 SGD steps: plain %v, checkpointed %v, bf16 %v", losses["plain"], losses["checkpointed"], losses["bf16"])
	for i, want := range losses["plain"] {
		if d := losses["checkpointed"][i] - want; d > 1e-6 || d < -1e-6 {
			t.Errorf("step %d: checkpointed loss %.7f, plain %.7f", i, losses["checkpointed"][i], want)
		}
		if d := (losses["bf16"][i] - want) / want; d > 0.1 || d < -0.1 {
			t.Errorf("step %d: bf16 loss %.5f, float32 %.5f", i, losses["bf16"][i], want)
		}
	}
}
