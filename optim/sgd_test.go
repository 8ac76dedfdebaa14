package optim

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// sgdCase is one torch.optim.SGD configuration of TestSGDIsTorchs, as SGDConfig and as the
// keyword arguments scripts/sgd_reference.py passes to torch.
type sgdCase struct {
	cfg   SGDConfig
	torch map[string]any
}

var (
	sgdStart = map[string][]float32{"/dense/weight": {1, -2, 0.5}, "/dense/bias": {0.25, -0.75}}
	sgdGrads = []map[string][]float32{
		{"/dense/weight": {0.5, -1, 2}, "/dense/bias": {1, 0.1}},
		{"/dense/weight": {-0.25, 0.5, 1.5}, "/dense/bias": {-2, 0.3}},
		{"/dense/weight": {1, 1, -1}, "/dense/bias": {0.5, -0.5}},
	}
	onlyBias = func(p string) bool { return p == "/dense/bias" }
	sgdCases = []sgdCase{
		{SGDConfig{LearningRate: 0.1}, map[string]any{"lr": 0.1}},
		{SGDConfig{LearningRate: 0.1, Momentum: 0.9}, map[string]any{"lr": 0.1, "momentum": 0.9}},
		{SGDConfig{LearningRate: 0.1, Momentum: 0.9, WeightDecay: 0.05}, map[string]any{"lr": 0.1, "momentum": 0.9, "weight_decay": 0.05}},
		{SGDConfig{LearningRate: 0.1, Momentum: 0.9, Dampening: 0.3, WeightDecay: 0.05, NoDecay: onlyBias},
			map[string]any{"lr": 0.1, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.05, "no_decay": []string{"/dense/bias"}}},
		{SGDConfig{LearningRate: 0.1, Momentum: 0.9, Nesterov: true, WeightDecay: 0.05},
			map[string]any{"lr": 0.1, "momentum": 0.9, "nesterov": true, "weight_decay": 0.05}},
	}
	// sgdTorch is what scripts/sgd_reference.py printed with torch 2.15.0 for sgdCases (the
	// weights after the three steps of sgdGrads from sgdStart), by case.
	sgdTorch = []map[string][]float64{
		{"/dense/weight": {0.8749999403953552, -2.049999952316284, 0.25}, "/dense/bias": {0.30000001192092896, -0.7400000095367432}},
		{"/dense/weight": {0.812000036239624, -1.9240000247955322, -0.22699996829032898}, "/dense/bias": {0.30900001525878906, -0.7840999364852905}},
		{"/dense/weight": {0.7848936319351196, -1.8697872161865234, -0.23642012476921082}, "/dense/bias": {0.30291494727134705, -0.7628127336502075}},
		{"/dense/weight": {0.8047317862510681, -1.8194636106491089, -0.18028560280799866}, "/dense/bias": {0.21000000834465027, -0.7820000052452087}},
		{"/dense/weight": {0.6680165529251099, -1.9060330390930176, -0.4112778306007385}, "/dense/bias": {0.34464728832244873, -0.7397117018699646}},
	}
)

// sgdSteps runs opt over sgdGrads from sgdStart on the pure-Go backend, as the Accelerator
// does (UpdateGraphWithGradients with the gradients given: loss = Σ g·w), and returns the
// weights.
func sgdSteps(t *testing.T, opt optimizer.Interface) map[string][]float64 {
	t.Helper()
	backend, err := compute.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatalf("pure-Go backend: %v", err)
	}
	store := model.NewStore()
	dense := store.RootScope().At("dense")
	dense.VariableWithValue("weight", sgdStart["/dense/weight"])
	dense.VariableWithValue("bias", sgdStart["/dense/bias"])
	exec, err := model.NewExec(backend, store, func(s *model.Scope, gw, gb *Node) *Node {
		g := gw.Graph()
		byPath := map[string]*Node{"/dense/weight": gw, "/dense/bias": gb}
		var values []*Node
		loss := ScalarZero(g, dtypes.Float32)
		for v := range s.IterVariables() {
			if !v.Trainable {
				continue
			}
			x := v.NodeValue(g)
			values = append(values, x)
			loss = Add(loss, ReduceAllSum(Mul(x, byPath[v.Path()])))
		}
		opt.(gradientApplier).UpdateGraphWithGradients(s, Gradient(loss, values...), dtypes.Float32)
		return loss
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, step := range sgdGrads {
		if _, err := exec.Call(step["/dense/weight"], step["/dense/bias"]); err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
	}
	out := map[string][]float64{}
	for path := range sgdStart {
		for _, v := range tensors.MustCopyFlatData[float32](store.GetVariable(path).MustValue()) {
			out[path] = append(out[path], float64(v))
		}
	}
	return out
}

func compareSGD(t *testing.T, what string, got, want map[string][]float64) {
	t.Helper()
	for path, w := range want {
		for i := range w {
			if d := math.Abs(got[path][i] - w[i]); !(d <= 1e-6) {
				t.Errorf("%s: %s[%d] = %.8f, %s %.8f", what, path, i, got[path][i], "torch.optim.SGD", w[i])
			}
		}
	}
}

// TestSGDIsTorchs: three steps of SGD with momentum, dampening, Nesterov and coupled weight
// decay (one group without it) end where torch.optim.SGD's end, within 1e-6: against the
// table torch 2.15.0 printed, and, in the torch venv, against torch itself.
func TestSGDIsTorchs(t *testing.T) {
	got := make([]map[string][]float64, len(sgdCases))
	for i, c := range sgdCases {
		opt, err := SGD(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		got[i] = sgdSteps(t, opt)
		compareSGD(t, "case "+string(rune('0'+i)), got[i], sgdTorch[i])
	}
	python := testutil.TorchPython(t, "torch.optim.SGD itself")
	configs := make([]map[string]any, len(sgdCases))
	for i, c := range sgdCases {
		configs[i] = c.torch
	}
	spec, _ := json.Marshal(map[string]any{"configs": configs, "start": sgdStart, "grads": sgdGrads})
	script := `import runpy, sys; sys.argv = [sys.argv[1], sys.argv[2]]; runpy.run_path(sys.argv[0], run_name="__main__")`
	var res map[string]map[string][]float64
	testutil.RunPythonJSON(t, "torch.optim.SGD", python, script, &res, filepath.Join("..", "scripts", "sgd_reference.py"), string(spec))
	for i := range sgdCases {
		compareSGD(t, "torch case "+string(rune('0'+i)), got[i], res[string(rune('0'+i))])
	}
}

// TestSGDRejectsBadConfig: bad values are refused naming the field, Nesterov without
// momentum or with dampening as PyTorch refuses it.
func TestSGDRejectsBadConfig(t *testing.T) {
	for _, c := range []struct {
		cfg  SGDConfig
		want string
	}{
		{SGDConfig{LearningRate: -1}, "SGDConfig.LearningRate = -1"},
		{SGDConfig{LearningRate: 0.1, Momentum: -0.9}, "SGDConfig.Momentum = -0.9"},
		{SGDConfig{LearningRate: 0.1, Dampening: 1.5}, "SGDConfig.Dampening = 1.5"},
		{SGDConfig{LearningRate: 0.1, WeightDecay: math.NaN()}, "SGDConfig.WeightDecay = NaN"},
		{SGDConfig{LearningRate: 0.1, Nesterov: true}, "Nesterov = true, want Momentum > 0 and Dampening 0"},
		{SGDConfig{LearningRate: 0.1, Nesterov: true, Momentum: 0.9, Dampening: 0.1}, "Dampening 0 (have 0.9 and 0.1)"},
	} {
		_, err := SGD(c.cfg)
		if err == nil || !strings.HasPrefix(err.Error(), "optim: SGD: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SGD(%+v): error %v, want one naming %q", c.cfg, err, c.want)
		}
	}
}
