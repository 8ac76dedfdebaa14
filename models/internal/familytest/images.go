package familytest

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// ImageRun is one input of an image family's fixtures (scripts/make_vision_fixtures.py) with
// transformers' outputs: 8-bit pixels p, NHWC (the model's input is (p - 128) / 64, exact in
// float32), and the last hidden state (NHWC) and logits as base64 little-endian float32;
// State names a safetensors file of the model's state after the run, when it has one.
type ImageRun struct {
	PixelsShape []int  `json:"pixels_shape"`
	PixelsB64   string `json:"pixels_u8_b64"`
	HiddenShape []int  `json:"hidden_shape"`
	HiddenB64   string `json:"last_hidden_state_f32_b64"`
	LogitsShape []int  `json:"logits_shape"`
	LogitsB64   string `json:"logits_f32_b64"`
	State       string `json:"state"`
}

// Pixels is the run's input, float32 NHWC.
func (r *ImageRun) Pixels(t testing.TB) *tensors.Tensor {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(r.PixelsB64)
	if err != nil {
		t.Fatalf("pixels_u8_b64: %v", err)
	}
	values := make([]float32, len(raw))
	for i, p := range raw {
		values[i] = (float32(p) - 128) / 64
	}
	return tensors.FromFlatDataAndDimensions(values, r.PixelsShape...)
}

// Hidden decodes transformers' last hidden state.
func (r *ImageRun) Hidden(t testing.TB) []float32 {
	return testutil.DecodeF32(t, "last_hidden_state", r.HiddenB64, r.HiddenShape)
}

// Logits decodes transformers' logits.
func (r *ImageRun) Logits(t testing.TB) []float32 {
	return testutil.DecodeF32(t, "logits", r.LogitsB64, r.LogitsShape)
}

// ImageTrainRun is an image fixture's training record: plain SGD steps on labelled batches
// taken in turn, in train mode, PyTorch's mean cross-entropy of each step before its update,
// and the state after the last step in the file State.
type ImageTrainRun struct {
	LearningRate float64 `json:"learning_rate"`
	Losses       []float64
	State        string `json:"state"`
	Batches      []struct {
		ImageRun
		Labels []int32 `json:"labels"`
	} `json:"batches"`
}

// ImageModel is one checkpoint of an image family's fixtures and transformers' outputs on it.
type ImageModel struct {
	Folder       string         `json:"folder"`
	Runs         []ImageRun     `json:"runs"`
	TrainForward *ImageRun      `json:"train_forward"`
	Train        *ImageTrainRun `json:"train"`
}

// ImageFixtures is an image family's testdata/fixtures.json.
type ImageFixtures struct {
	Transformers string                 `json:"transformers_version"`
	Models       map[string]*ImageModel `json:"models"`
}

// LoadImageFixtures reads testdata/fixtures.json and checks it has models checkpoints.
func LoadImageFixtures(t testing.TB, models int) *ImageFixtures {
	t.Helper()
	contents, err := os.ReadFile(filepath.Join("testdata", "fixtures.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f ImageFixtures
	if err := json.Unmarshal(contents, &f); err != nil {
		t.Fatalf("parsing testdata/fixtures.json: %v", err)
	}
	if len(f.Models) != models {
		t.Fatalf("testdata/fixtures.json has %d models, want %d", len(f.Models), models)
	}
	return &f
}

// ImageForward runs encoder and head once on pixels, in training mode when train, and returns
// the last hidden state and the logits.
func ImageForward(t testing.TB, backend compute.Backend, store *model.Store, pixels *tensors.Tensor, train bool,
	encoder func(s *model.Scope, x *Node) *Node, head func(s *model.Scope, h *Node) *Node) (hidden, logits []float32) {
	t.Helper()
	exec, err := model.NewExec(backend, store, func(s *model.Scope, x *Node) (*Node, *Node) {
		s.Store().SetTraining(x.Graph(), train)
		h := encoder(s, x)
		return h, head(s, h)
	})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := exec.Call(pixels)
	if err != nil {
		t.Fatalf("running the classifier: %v", err)
	}
	return tensors.MustCopyFlatData[float32](outs[0]), tensors.MustCopyFlatData[float32](outs[1])
}

// CompareState compares the tensors of a state file PyTorch wrote that keep selects with
// store's variables (the kernels, which kernel names, OIHW in the file and HWIO in the store)
// and returns the largest float difference; integer tensors must be equal.
func CompareState(t testing.TB, store *model.Store, path string, keep, kernel func(name string) bool) float64 {
	t.Helper()
	named, _, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	worst, n := 0.0, 0
	for _, nt := range named {
		if !keep(nt.Name) {
			continue
		}
		n++
		v := store.GetVariable("/" + strings.ReplaceAll(nt.Name, ".", "/"))
		if v == nil || !v.HasValue() {
			t.Fatalf("%s: no variable for %s", path, nt.Name)
		}
		got := v.MustValue()
		if !nt.Tensor.DType().IsFloat() {
			a, b := tensors.MustCopyFlatData[int64](got)[0], tensors.MustCopyFlatData[int64](nt.Tensor)[0]
			if a != b {
				t.Errorf("%s = %d, PyTorch's %d", nt.Name, a, b)
			}
			continue
		}
		want := tensors.MustCopyFlatData[float32](nt.Tensor)
		if kernel(nt.Name) {
			want = oihwToHWIO(want, nt.Tensor.Shape().Dimensions)
		}
		values := tensors.MustCopyFlatData[float32](got)
		if len(values) != len(want) {
			t.Fatalf("%s: %d values, PyTorch's %d", nt.Name, len(values), len(want))
		}
		for i, w := range want {
			worst = math.Max(worst, math.Abs(float64(values[i]-w))/math.Max(1, math.Abs(float64(w))))
		}
	}
	if n == 0 {
		t.Fatalf("%s: no tensor compared", path)
	}
	return worst
}

// oihwToHWIO reorders an OIHW kernel's values (dims d) as HWIO.
func oihwToHWIO(v []float32, d []int) []float32 {
	out := make([]float32, len(v))
	for o := range d[0] {
		for i := range d[1] {
			for h := range d[2] {
				for w := range d[3] {
					out[((h*d[3]+w)*d[1]+i)*d[0]+o] = v[((o*d[1]+i)*d[2]+h)*d[3]+w]
				}
			}
		}
	}
	return out
}

// imageExample is one labelled image of a training record.
type imageExample struct {
	pixels []float32
	dims   []int
	label  int32
}

// Train runs the record's SGD steps on clf the way users train (accelerator.New, Prepare,
// TrainStep, CrossEntropy, Backward, on one XLA CPU device; logits gets [pixel_values,
// mask]) and returns each step's loss; done runs after the last step while the variables are
// still on the accelerator's backend (nil: nothing). Without the XLA CPU plugin the test is
// skipped loudly (a failure under CI).
func (r *ImageTrainRun) Train(t testing.TB, clf model.StoreProvider, logits func(s *model.Scope, inputs []*Node) *Node, precision string, done func()) []float64 {
	t.Helper()
	return r.TrainOn(t, 1, clf, logits, precision, done)
}

// TrainOn is Train on devices XLA CPU devices, each with its share of the record's batches
// (the global batch is the record's).
func (r *ImageTrainRun) TrainOn(t testing.TB, devices int, clf model.StoreProvider, logits func(s *model.Scope, inputs []*Node) *Node, precision string, done func()) []float64 {
	t.Helper()
	var examples data.Slice[imageExample]
	size := len(r.Batches[0].Labels)
	for _, b := range r.Batches {
		if len(b.Labels) != size {
			t.Fatalf("the fixture's batches have %d and %d examples", size, len(b.Labels))
		}
		all := tensors.MustCopyFlatData[float32](b.Pixels(t))
		per := len(all) / size
		for i, l := range b.Labels {
			examples = append(examples, imageExample{all[i*per : (i+1)*per], b.PixelsShape[1:], l})
		}
	}
	collate := func(batch []imageExample) ([]*tensors.Tensor, *tensors.Tensor, error) {
		var flat []float32
		labels := make([]int32, len(batch))
		for i, e := range batch {
			flat, labels[i] = append(flat, e.pixels...), e.label
		}
		dims := append([]int{len(batch)}, batch[0].dims...)
		return []*tensors.Tensor{tensors.FromFlatDataAndDimensions(flat, dims...)}, tensors.FromValue(labels), nil
	}
	return trainSteps(t, devices, examples, size, collate, clf,
		func(s *model.Scope, b accelerator.GraphBatch) *Node { return logits(s, []*Node{b.Inputs[0], b.Mask}) },
		(&TrainRun{LearningRate: r.LearningRate}).sgd(), len(r.Losses), precision, done)
}

// MaxLossDiff is the largest difference between losses and the record's.
func (r *ImageTrainRun) MaxLossDiff(losses []float64) float64 {
	worst := 0.0
	for i, want := range r.Losses {
		worst = math.Max(worst, math.Abs(losses[i]-want))
	}
	return worst
}

// transformersImageLogits is the script TransformersImageLogits runs: the folder argv[1] in
// AutoModelForImageClassification (eval mode), on the NHWC pixels of the safetensors file
// argv[2], the logits printed as JSON.
const transformersImageLogits = `
import json, sys, torch, transformers
from safetensors.torch import load_file
m = transformers.AutoModelForImageClassification.from_pretrained(sys.argv[1]).eval()
x = load_file(sys.argv[2])["pixels"].permute(0, 3, 1, 2)
with torch.no_grad():
    out = m(pixel_values=x).logits
print(json.dumps({"class": type(m).__name__, "logits": out.reshape(-1).tolist()}))
`

// TransformersImageLogits loads the folder dir in transformers' AutoModelForImageClassification
// with python (the TorchPython venv) and returns its class name and its logits on pixels
// (float32 NHWC).
func TransformersImageLogits(t testing.TB, python, dir string, pixels *tensors.Tensor) (string, []float32) {
	t.Helper()
	path := SavePixels(t, pixels)
	var out struct {
		Class  string    `json:"class"`
		Logits []float32 `json:"logits"`
	}
	testutil.RunPythonJSON(t, "transformers' logits of "+dir, python, transformersImageLogits, &out, dir, path)
	return out.Class, out.Logits
}

// SavePixels writes pixels into a temporary safetensors file as the tensor "pixels" (what
// the Python halves read) and returns its path.
func SavePixels(t testing.TB, pixels *tensors.Tensor) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pixels.safetensors")
	if err := safetensors.WriteFile(path, []safetensors.Named{{Name: "pixels", Tensor: pixels}}, nil); err != nil {
		t.Fatal(err)
	}
	return path
}
