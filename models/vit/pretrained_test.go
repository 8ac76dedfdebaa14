package vit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/internal/familytest"
	"github.com/gomlx/gomlx/core/tensors"
)

// TestSavedFolderLoadsInTransformers: a classifier saved by SavePretrained, with names,
// a problem type and a fresh head of another size, is read by transformers'
// AutoModelForImageClassification with the same logits (within 1e-5) at its image size and,
// with interpolate_pos_encoding, at another; config.json keeps the labels and problem_type.
func TestSavedFolderLoadsInTransformers(t *testing.T) {
	f := loadFixtures(t)
	backend := familytest.XLA(t)
	clf, err := LoadPretrained(filepath.Join("testdata", "tiny"), nil, LoadOptions{NumLabels: 4})
	if err != nil {
		t.Fatal(err)
	}
	clf.Config.Labels = []string{"ant", "bee", "cat", "dog"}
	clf.Config.ProblemType = "multi_label_classification"
	clf.Config.InterpolatePosEncoding = true
	runs := []*imageRun{f.Models["tiny"].Runs["native"], f.Models["tiny"].Runs["interp_48"]}
	var want [][]float32
	for _, r := range runs {
		_, logits := hiddenAndLogits(t, backend, clf, r.pixels(t))
		want = append(want, logits)
	}
	dir := t.TempDir()
	if err := SavePretrained(dir, clf); err != nil {
		t.Fatal(err)
	}
	back, err := LoadPretrained(dir, nil, LoadOptions{LoadHead: true})
	if err != nil {
		t.Fatalf("loading the saved folder back: %v", err)
	}
	if strings.Join(back.Config.Labels, ",") != "ant,bee,cat,dog" || back.Config.ProblemType != "multi_label_classification" {
		t.Errorf("read back labels %q, problem_type %q", back.Config.Labels, back.Config.ProblemType)
	}

	python := testutil.TorchPython(t, "transformers' AutoModelForImageClassification on the saved folder")
	var pixelFiles []string
	for i, r := range runs {
		path := filepath.Join(t.TempDir(), "pixels.json")
		b, _ := json.Marshal(map[string]any{"shape": r.PixelsShape, "data": tensors.MustCopyFlatData[float32](r.pixels(t))})
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		pixelFiles = append(pixelFiles, path)
		_ = i
	}
	var out struct {
		Logits  [][]float32       `json:"logits"`
		Labels  map[string]string `json:"id2label"`
		Problem string            `json:"problem_type"`
	}
	testutil.RunPythonJSON(t, "transformers reading the saved ViT", python, `
import json, sys, torch
from transformers import AutoModelForImageClassification
m = AutoModelForImageClassification.from_pretrained(sys.argv[1], attn_implementation="eager").eval()
logits = []
for path in sys.argv[2:]:
    d = json.load(open(path))
    x = torch.tensor(d["data"], dtype=torch.float32).reshape(d["shape"]).permute(0, 3, 1, 2).contiguous()
    with torch.no_grad():
        logits.append(m(pixel_values=x, interpolate_pos_encoding=True).logits.flatten().tolist())
print(json.dumps({"logits": logits, "id2label": {str(k): v for k, v in m.config.id2label.items()}, "problem_type": m.config.problem_type}))
`, &out, append([]string{dir}, pixelFiles...)...)
	for i := range want {
		d := maxAbsDiff(t, "logits", want[i], out.Logits[i])
		t.Logf("transformers on the saved folder, %v: logits max abs diff %.2g", runs[i].PixelsShape, d)
		if d > tolerance {
			t.Errorf("%v: transformers' logits differ from goaccel's by %.3g", runs[i].PixelsShape, d)
		}
	}
	if out.Labels["3"] != "dog" || out.Problem != "multi_label_classification" {
		t.Errorf("transformers read id2label %v, problem_type %q", out.Labels, out.Problem)
	}
}
