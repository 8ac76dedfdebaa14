package vit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/internal/familytest"
	"github.com/goaccel/goaccel/models/lora"
	"github.com/gomlx/gomlx/core/tensors"
)

// TestLoRAAdapterLoadsInPEFT: on a ViT and a DINOv2, an adapter attached with the default
// targets (query, value),
// its B made non-zero, saved by SavePretrained, is read by PEFT's PeftModel.from_pretrained
// onto the base folder with the same logits (within 1e-5), the merged folder by transformers
// with them too, and by LoadAdapter back; adapter_config.json has no task_type (PEFT has
// none for images) and names the targets as transformers 5.25's modules (q_proj, v_proj).
func TestLoRAAdapterLoadsInPEFT(t *testing.T) {
	f := loadFixtures(t)
	for _, c := range []struct{ folder, modelType string }{{"tiny", ViT}, {"dinov2_swiglu", DINOv2}} {
		t.Run(c.folder, func(t *testing.T) { checkLoRAInPEFT(t, f, c.folder, c.modelType) })
	}
}

// checkLoRAInPEFT is TestLoRAAdapterLoadsInPEFT on one fixture folder.
func checkLoRAInPEFT(t *testing.T, f *fixtures, folder, modelType string) {
	backend := familytest.XLA(t)
	base := filepath.Join("testdata", folder)
	clf, err := LoadPretrained(base, nil, LoadOptions{LoadHead: true})
	if err != nil {
		t.Fatal(err)
	}
	a, err := clf.AttachLoRA(lora.Config{R: 4, Alpha: 8, TargetModules: lora.DefaultTargetModules(modelType)}, "")
	if err != nil {
		t.Fatal(err)
	}
	r := f.Models[folder].Runs["native"]
	hiddenAndLogits(t, backend, clf, r.pixels(t)) // creates the adapter's variables
	for v := range clf.Store().IterVariables() {
		if strings.Contains(v.Path(), "lora_B") {
			shape := v.Shape()
			vals := make([]float32, shape.Size())
			for i := range vals {
				vals[i] = 0.05 * float32((i%7)-3)
			}
			if err := v.SetValue(tensors.FromFlatDataAndDimensions(vals, shape.Dimensions...)); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, want := hiddenAndLogits(t, backend, clf, r.pixels(t))
	dir := t.TempDir()
	if err := SavePretrained(dir, clf); err != nil {
		t.Fatal(err)
	}
	cfgBytes, err := os.ReadFile(filepath.Join(dir, AdapterDir, lora.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var pc map[string]any
	if err := json.Unmarshal(cfgBytes, &pc); err != nil {
		t.Fatal(err)
	}
	if _, has := pc["task_type"]; has {
		t.Errorf("adapter_config.json has task_type %v: PEFT has none for image classifiers", pc["task_type"])
	}
	if targets := pc["target_modules"]; strings.Join(toStrings(targets), ",") != "q_proj,v_proj" {
		t.Errorf("adapter_config.json target_modules %v, want transformers 5.25's modules [q_proj v_proj]", targets)
	}
	_ = a
	again, err := LoadPretrained(base, nil, LoadOptions{LoadHead: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadAdapter(filepath.Join(dir, AdapterDir), again); err != nil {
		t.Fatalf("LoadAdapter of the saved adapter: %v", err)
	}
	_, reread := hiddenAndLogits(t, backend, again, r.pixels(t))
	if d := maxAbsDiff(t, "logits", want, reread); d > 1e-6 {
		t.Errorf("the adapter read back by LoadAdapter moves the logits by %.3g", d)
	}

	python := testutil.TorchPython(t, "PEFT's PeftModel on goaccel's ViT adapter")
	abs, _ := filepath.Abs(base)
	pixels := filepath.Join(t.TempDir(), "pixels.json")
	b, _ := json.Marshal(map[string]any{"shape": r.PixelsShape, "data": tensors.MustCopyFlatData[float32](r.pixels(t))})
	if err := os.WriteFile(pixels, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out struct {
		PEFT   []float32 `json:"peft"`
		Merged []float32 `json:"merged"`
	}
	testutil.RunPythonJSON(t, "PEFT reading the ViT adapter", python, `
import json, sys, torch
from transformers import AutoModelForImageClassification
from peft import PeftModel
base, folder, pixels = sys.argv[1:4]
d = json.load(open(pixels))
x = torch.tensor(d["data"], dtype=torch.float32).reshape(d["shape"]).permute(0, 3, 1, 2).contiguous()
m = AutoModelForImageClassification.from_pretrained(base, attn_implementation="eager")
p = PeftModel.from_pretrained(m, folder + "/adapter").eval()
merged = AutoModelForImageClassification.from_pretrained(folder, attn_implementation="eager").eval()
with torch.no_grad():
    print(json.dumps({"peft": p(pixel_values=x).logits.flatten().tolist(), "merged": merged(pixel_values=x).logits.flatten().tolist()}))
`, &out, abs, dir, pixels)
	dp, dm := maxAbsDiff(t, "peft logits", want, out.PEFT), maxAbsDiff(t, "merged logits", want, out.Merged)
	moved := maxAbsDiff(t, "base logits", want, testutil.DecodeF32(t, "logits", r.LogitsB64, r.LogitsShape))
	t.Logf("PEFT's logits max abs diff %.2g, the merged folder's in transformers %.2g (the adapter moves the logits by %.2g)", dp, dm, moved)
	if dp > tolerance || dm > tolerance {
		t.Errorf("PEFT's logits differ by %.3g, the merged folder's by %.3g", dp, dm)
	}
	if moved < 1e-3 {
		t.Errorf("the adapter moved the logits by %.3g only: the check proves nothing", moved)
	}
}

// toStrings is a JSON list of strings.
func toStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
