package auto

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/internal/familytest"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// vitTiny is models/vit's tiny checkpoint (scripts/make_vit_fixtures.py), with its
// preprocessor_config.json.
const vitTiny = "../vit/testdata/tiny"

// vitRun reads one run of models/vit's tiny checkpoint's fixtures: the NHWC pixels and
// transformers' logits.
func vitRun(t *testing.T, name string) (*tensors.Tensor, []float32) {
	return fixtureRun(t, "tiny", name)
}

// fixtureRun reads run name of checkpoint folder in models/vit's fixtures.
func fixtureRun(t *testing.T, folder, name string) (*tensors.Tensor, []float32) {
	t.Helper()
	b, err := os.ReadFile("../vit/testdata/fixtures.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Models map[string]struct {
			Runs map[string]struct {
				PixelsShape []int  `json:"pixels_shape"`
				Pixels      string `json:"pixels_f32_b64"`
				Logits      string `json:"logits_f32_b64"`
			} `json:"runs"`
		} `json:"models"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	r := doc.Models[folder].Runs[name]
	floats := func(s string) []float32 {
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float32, len(raw)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		return out
	}
	return tensors.FromFlatDataAndDimensions(floats(r.Pixels), r.PixelsShape...), floats(r.Logits)
}

// TestViTFamily: auto.Load reads a ViT folder written by transformers as an image family
// (its facts, its preprocessor_config.json as the processor, the image head for Options'
// zero head), with transformers' logits; another image size needs InterpolatePosEncoding;
// the text options are refused; SavePretrained writes the processor's file beside the
// model, which Load reads back.
func TestViTFamily(t *testing.T) {
	m, err := Load(vitTiny, nil, Options{LoadHead: true})
	if err != nil {
		t.Fatal(err)
	}
	f := m.Network().Config().Facts()
	if m.Family != "vit" || f.Inputs != 1 || f.Image == nil || *f.Image != (ImageFacts{Size: 32, Channels: 3, PatchSize: 8}) || m.Tokenizer() != nil {
		t.Fatalf("family %q, facts %+v (image %+v), tokenizer %v", m.Family, f, f.Image, m.Tokenizer())
	}
	proc, ok := m.Processor.(*ImageProcessor)
	if !ok || proc.Kind() != ViTProcessor {
		t.Fatalf("processor %T %v, want the folder's ViTImageProcessor", m.Processor, m.Processor)
	}
	if h, w, _ := proc.OutputSize(); h != 32 || w != 32 {
		t.Errorf("processor output %dx%d, want 32x32", w, h)
	}
	pixels, want := vitRun(t, "native")
	got := runLogits(t, m, pixels)
	worst := maxDiff(got, want)
	t.Logf("auto.Load's ViT: logits max abs diff from transformers %.2g", worst)
	if len(got) != len(want) || worst > 1e-5 {
		t.Errorf("logits differ from transformers' by %.3g", worst)
	}

	if _, err := Load(vitTiny, nil, Options{ImageSize: 48}); err == nil || !strings.Contains(err.Error(), "interpolate_pos_encoding") {
		t.Errorf("ImageSize 48 without InterpolatePosEncoding: %v", err)
	}
	big, err := Load(vitTiny, nil, Options{LoadHead: true, ImageSize: 48, InterpolatePosEncoding: true})
	if err != nil {
		t.Fatal(err)
	}
	if h, w, _ := big.Processor.(*ImageProcessor).OutputSize(); h != 48 || w != 48 {
		t.Errorf("ImageSize 48: processor output %dx%d", w, h)
	}
	pixels48, want48 := vitRun(t, "interp_48")
	worst48 := maxDiff(runLogits(t, big, pixels48), want48)
	if worst48 > 1e-5 {
		t.Errorf("at 48 pixels with interpolation: logits differ from transformers' by %.3g", worst48)
	}
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{MaxLen: 64}, "Options.MaxLen"},
		{Options{Head: TokenClassification}, "ImageClassification"},
	} {
		if _, err := Load(vitTiny, nil, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.opts, err, c.want)
		}
	}
	if _, err := Load("../deberta/testdata/tiny", nil, Options{ImageSize: 32}); err == nil || !strings.Contains(err.Error(), "Options.ImageSize") {
		t.Errorf("ImageSize on a text family: %v", err)
	}

	named, err := Load(vitTiny, nil, Options{Labels: []string{"a", "b"}, ProblemType: "multi_label_classification"})
	if err != nil {
		t.Fatal(err)
	}
	_ = runLogits(t, named, pixels) // gives the fresh head its values
	dir := t.TempDir()
	if err := named.SavePretrained(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ImageProcessorFile)); err != nil {
		t.Errorf("SavePretrained wrote no %s: %v", ImageProcessorFile, err)
	}
	back, err := Load(dir, nil, Options{LoadHead: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(back.Labels(), ",") != "a,b" || back.ProblemType() != "multi_label_classification" {
		t.Errorf("read back labels %q, problem type %q", back.Labels(), back.ProblemType())
	}
	py := testutil.NeedTransformers(t)
	var out struct {
		Class string `json:"class"`
		Size  any    `json:"size"`
	}
	testutil.RunPythonJSON(t, "AutoImageProcessor on the saved folder", py, `
import json, sys
from transformers import AutoImageProcessor
p = AutoImageProcessor.from_pretrained(sys.argv[1])
print(json.dumps({"class": type(p).__name__, "size": dict(p.size)}))
`, &out, dir)
	if !strings.HasPrefix(out.Class, "ViTImageProcessor") {
		t.Errorf("AutoImageProcessor read the saved folder as %s", out.Class)
	}
}

// runLogits runs the model's Logits once on pixels (XLA CPU).
func runLogits(t *testing.T, m *Model, pixels *tensors.Tensor) []float32 {
	t.Helper()
	exec, err := model.NewExec(familytest.XLA(t), m.Classifier.Store(), func(s *model.Scope, x *Node) *Node {
		return m.Logits(s, []*Node{x})
	})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := exec.Call(pixels)
	if err != nil {
		t.Fatal(err)
	}
	return tensors.MustCopyFlatData[float32](outs[0])
}

// TestDINOv2Family: auto.Load reads a DINOv2 folder written by transformers (its
// BitImageProcessor, the image head) with transformers' logits, and takes another image size
// without asking (DINOv2 always interpolates).
func TestDINOv2Family(t *testing.T) {
	m, err := Load("../vit/testdata/dinov2", nil, Options{LoadHead: true})
	if err != nil {
		t.Fatal(err)
	}
	f := m.Network().Config().Facts()
	if m.Family != "dinov2" || f.Image == nil || *f.Image != (ImageFacts{Size: 28, Channels: 3, PatchSize: 7}) || f.FF != 64 {
		t.Fatalf("family %q, facts %+v (image %+v)", m.Family, f, f.Image)
	}
	if proc, ok := m.Processor.(*ImageProcessor); !ok || proc.Kind() != BitProcessor {
		t.Fatalf("processor %T, want the folder's BitImageProcessor", m.Processor)
	}
	pixels, want := fixtureRun(t, "dinov2", "native")
	got := runLogits(t, m, pixels)
	worst := maxDiff(got, want)
	t.Logf("auto.Load's DINOv2: logits max abs diff from transformers %.2g", worst)
	if len(got) != len(want) || worst > 1e-5 {
		t.Errorf("logits differ from transformers' by %.3g", worst)
	}
	big, err := Load("../vit/testdata/dinov2", nil, Options{LoadHead: true, ImageSize: 42})
	if err != nil {
		t.Fatalf("ImageSize 42 on DINOv2: %v", err)
	}
	if h, w, _ := big.Processor.(*ImageProcessor).OutputSize(); h != 42 || w != 42 {
		t.Errorf("ImageSize 42: processor output %dx%d", w, h)
	}
}

// maxDiff is the largest |a[i] - b[i]| (infinite when the lengths differ).
func maxDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	worst := 0.0
	for i := range a {
		worst = max(worst, math.Abs(float64(a[i]-b[i])))
	}
	return worst
}
