package vit

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/internal/familytest"
	"github.com/gomlx/gomlx/core/tensors"
)

// TestSavedFolderLoadsInTransformers: a ViT and a DINOv2 (SwiGLU) classifier saved by
// SavePretrained, with names, a problem type and a fresh head of another size, are read by
// transformers' AutoModelForImageClassification with the same logits (within 1e-5) at the
// image size and, interpolated, at another; config.json keeps the labels and problem_type.
func TestSavedFolderLoadsInTransformers(t *testing.T) {
	f := loadFixtures(t)
	for _, c := range []struct{ folder, other string }{{"tiny", "interp_48"}, {"dinov2_swiglu", "interp_21"}} {
		t.Run(c.folder, func(t *testing.T) { checkSavedInTransformers(t, f, c.folder, c.other) })
	}
}

// checkSavedInTransformers is TestSavedFolderLoadsInTransformers on one fixture folder, at
// its native run and the run other.
func checkSavedInTransformers(t *testing.T, f *fixtures, folder, other string) {
	backend := familytest.XLA(t)
	clf, err := LoadPretrained(filepath.Join("testdata", folder), nil, LoadOptions{NumLabels: 4})
	if err != nil {
		t.Fatal(err)
	}
	clf.Config.Labels = []string{"ant", "bee", "cat", "dog"}
	clf.Config.ProblemType = "multi_label_classification"
	clf.Config.InterpolatePosEncoding = true
	runs := []*imageRun{f.Models[folder].Runs["native"], f.Models[folder].Runs[other]}
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
	for _, r := range runs {
		path := filepath.Join(t.TempDir(), "pixels.json")
		b, _ := json.Marshal(map[string]any{"shape": r.PixelsShape, "data": tensors.MustCopyFlatData[float32](r.pixels(t))})
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		pixelFiles = append(pixelFiles, path)
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
    kw = {"interpolate_pos_encoding": True} if m.config.model_type == "vit" else {}  # DINOv2 always interpolates
    with torch.no_grad():
        logits.append(m(pixel_values=x, **kw).logits.flatten().tolist())
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

// TestLoadErrors: what a folder may get wrong, each error naming it: missing, misshapen and
// unexpected tensors, config.json keys this package does not compute, another head; and the
// bare ViTModel layout (no "vit." prefix, a pooler) loads.
func TestLoadErrors(t *testing.T) {
	without, set, case_ := familytest.Without, familytest.Set, familytest.Case[LoadOptions]
	extra := func(l []safetensors.Named) []safetensors.Named {
		return append(l, safetensors.Named{Name: "vit.encoder.layer.2.layernorm_before.weight", Tensor: tensors.FromValue(make([]float32, 32))})
	}
	bare := func(l []safetensors.Named) []safetensors.Named {
		var out []safetensors.Named
		for _, n := range l {
			if strings.HasPrefix(n.Name, "classifier.") {
				continue
			}
			out = append(out, safetensors.Named{Name: strings.TrimPrefix(n.Name, "vit."), Tensor: n.Tensor})
		}
		return append(out, safetensors.Named{Name: "pooler.dense.weight", Tensor: tensors.FromFlatDataAndDimensions(make([]float32, 32*32), 32, 32)})
	}
	familytest.CheckLoadErrors(t, filepath.Join("testdata", "tiny"), []familytest.LoadCase[LoadOptions]{
		case_("control", nil, nil, LoadOptions{LoadHead: true}),
		case_("bare ViTModel with a pooler", bare, set("architectures", []string{"ViTModel"}), LoadOptions{}),
		case_("missing tensor", without("vit.encoder.layer.1.output.dense.weight"), nil, LoadOptions{},
			"1 missing tensors: vit.encoder.layer.1.output.dense.weight"),
		case_("missing classifier", without("classifier.bias"), nil, LoadOptions{LoadHead: true}, "missing tensors: classifier.bias"),
		case_("wrong shape", nil, set("intermediate_size", 40), LoadOptions{},
			"vit.encoder.layer.0.intermediate.dense.weight has shape [37 32], config wants [40 32]"),
		case_("another patch size", nil, set("patch_size", 4), LoadOptions{}, "vit.embeddings.position_embeddings has shape"),
		case_("no qkv_bias in the config", nil, set("qkv_bias", false), LoadOptions{}, "unexpected tensors", "attention.attention.key.bias"),
		case_("more layers", extra, nil, LoadOptions{}, "unexpected tensors", "vit.encoder.layer.2.layernorm_before.weight"),
		case_("bad activation", nil, set("hidden_act", "quick_gelu"), LoadOptions{}, "config.json", `hidden_act "quick_gelu"`),
		case_("non-square image", nil, set("image_size", []int{32, 48}), LoadOptions{}, "image_size [32,48]", "square"),
		case_("another head_dim", nil, set("head_dim", 16), LoadOptions{}, "head_dim 16"),
		case_("a text head", nil, set("architectures", []string{"ViTForSequenceClassification"}), LoadOptions{}, "not an image classifier"),
		case_("another model", nil, set("model_type", "deit"), LoadOptions{}, `model_type "deit" is not "vit"`),
		case_("bad problem type", nil, set("problem_type", "ranking"), LoadOptions{}, `problem_type "ranking"`),
		case_("negative labels", nil, nil, LoadOptions{NumLabels: -1}, "NumLabels must not be negative"),
	}, func(dir string, opts LoadOptions) error {
		_, err := LoadPretrained(dir, nil, opts)
		return err
	})
}

// TestBicubicMatrix: the resize matrix's rows sum to 1, and it resizes the ramp 0..3 to 6
// samples as torch 2.15's interpolate(mode="bicubic", align_corners=False) does (values
// printed by it): inside, and at the edges where the clamped neighbours bend the ramp.
func TestBicubicMatrix(t *testing.T) {
	m := bicubicMatrix(4, 6)
	ramp := []float32{0, 1, 2, 3}
	want := []float32{-0.08680558204650879, 0.40625, 1.2129627466201782, 1.7870371341705322, 2.59375, 3.086805820465088}
	for i, row := range m {
		sum, v := float32(0), float32(0)
		for j, w := range row {
			sum += w
			v += w * ramp[j]
		}
		if math.Abs(float64(sum-1)) > 1e-6 || math.Abs(float64(v-want[i])) > 1e-6 {
			t.Errorf("row %d: weights sum to %g, the ramp gives %g; want 1 and torch's %g", i, sum, v, want[i])
		}
	}
}

// TestFreshDINOv2: a DINOv2 built from its config alone runs, its layer scales start at
// layerscale_value and its mask token at zeros (transformers' initialisation), and
// SavePretrained writes every tensor of the folder transformers saved.
func TestFreshDINOv2(t *testing.T) {
	cfg, err := LoadConfig(filepath.Join("testdata", "dinov2", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	clf, err := NewClassifier(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := loadFixtures(t)
	hiddenAndLogits(t, familytest.XLA(t), clf, f.Models["dinov2"].Runs["native"].pixels(t))
	for _, c := range []struct {
		path string
		want float32
	}{{"/dinov2/encoder/layer/1/layer_scale2/lambda1", 0.5}, {"/dinov2/embeddings/mask_token", 0}} {
		v := clf.Store().GetVariable(c.path)
		if v == nil {
			t.Fatalf("no variable %s", c.path)
		}
		value, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range tensors.MustCopyFlatData[float32](value) {
			if x != c.want {
				t.Fatalf("%s has %g, want %g everywhere", c.path, x, c.want)
			}
		}
	}
	dir := t.TempDir()
	if err := SavePretrained(dir, clf); err != nil {
		t.Fatal(err)
	}
	familytest.CheckTensors(t, dir, func(string) ([]TensorSpec, error) {
		list, _, err := safetensors.ReadFile(filepath.Join("testdata", "dinov2", "model.safetensors"))
		var specs []TensorSpec
		for _, n := range list {
			specs = append(specs, TensorSpec{Name: n.Name, Dims: n.Tensor.Shape().Dimensions})
		}
		return specs, err
	})
}
