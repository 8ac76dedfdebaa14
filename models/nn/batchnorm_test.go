package nn

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/accelerator/acceltest"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/optim"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	_ "github.com/gomlx/compute/gobackend"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
)

// The shapes of the tests: NHWC batches of 4 examples of 3x2 pixels, 3 channels.
const bnB, bnH, bnW, bnC = 4, 3, 2, 3

func randomNHWC(seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 7))
	x := make([]float32, bnB*bnH*bnW*bnC)
	for i := range x {
		x[i] = float32(rng.NormFloat64()*2 + 0.5)
	}
	return x
}

// bnExec runs BatchNorm on the pure-Go backend in training (or evaluation) mode over a store
// that keeps its variables between calls.
func bnExec(t *testing.T, backend compute.Backend, store *model.Store, training bool, cfg BatchNormConfig) func(x []float32, mask []bool) []float32 {
	t.Helper()
	exec, err := model.NewExec(backend, store, func(s *model.Scope, x, mask *Node) *Node {
		s.Store().SetTraining(x.Graph(), training)
		return BatchNorm(s.In("bn"), x, mask, cfg)
	})
	if err != nil {
		t.Fatal(err)
	}
	return func(x []float32, mask []bool) []float32 {
		out, err := exec.Call(tensors.FromFlatDataAndDimensions(x, bnB, bnH, bnW, bnC), tensors.FromValue(mask))
		if err != nil {
			t.Fatal(err)
		}
		return tensors.MustCopyFlatData[float32](out[0])
	}
}

func goBackend(t *testing.T) compute.Backend {
	t.Helper()
	backend, err := compute.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatalf("pure-Go backend: %v", err)
	}
	return backend
}

func storeFloats(t *testing.T, store *model.Store, path string) []float64 {
	t.Helper()
	v := store.GetVariable(path)
	if v == nil {
		t.Fatalf("no variable %s", path)
	}
	var out []float64
	switch v.DType() {
	case dtypes.Float32:
		for _, f := range tensors.MustCopyFlatData[float32](v.MustValue()) {
			out = append(out, float64(f))
		}
	case dtypes.Float64:
		out = append(out, tensors.MustCopyFlatData[float64](v.MustValue())...)
	case dtypes.Int64:
		out = append(out, float64(tensors.ToScalar[int64](v.MustValue())))
	}
	return out
}

func maxDiff(a, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

func f64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// referenceStats is the mean, biased and unbiased variance per channel of the real examples
// of an NHWC batch, in float64.
func referenceStats(x []float32, mask []bool) (mean, biased, unbiased []float64) {
	mean, biased, unbiased = make([]float64, bnC), make([]float64, bnC), make([]float64, bnC)
	for c := range bnC {
		var sum, n float64
		for b := range bnB {
			if !mask[b] {
				continue
			}
			for p := range bnH * bnW {
				sum += float64(x[(b*bnH*bnW+p)*bnC+c])
				n++
			}
		}
		mean[c] = sum / n
		var ss float64
		for b := range bnB {
			if !mask[b] {
				continue
			}
			for p := range bnH * bnW {
				d := float64(x[(b*bnH*bnW+p)*bnC+c]) - mean[c]
				ss += d * d
			}
		}
		biased[c], unbiased[c] = ss/n, ss/(n-1)
	}
	return mean, biased, unbiased
}

// TestBatchNormIsTorchs: two training batches (the second with an example masked out as
// padding) and an evaluation: the outputs, running_mean, running_var (unbiased) and
// num_batches_tracked are PyTorch's, computed here in float64 and, in the torch venv, by
// torch.nn.BatchNorm2d on the real examples in NCHW.
func TestBatchNormIsTorchs(t *testing.T) {
	store := model.NewStore()
	backend := goBackend(t)
	train, eval := bnExec(t, backend, store, true, BatchNormConfig{}), bnExec(t, backend, store, false, BatchNormConfig{})
	x1, x2, x3 := randomNHWC(1), randomNHWC(2), randomNHWC(3)
	all, padded := []bool{true, true, true, true}, []bool{true, false, true, true}
	y1, y2, y3 := f64(train(x1, all)), f64(train(x2, padded)), f64(eval(x3, all))

	// The reference: torch's formulas with momentum 0.1, eps 1e-5.
	rm, rv := make([]float64, bnC), []float64{1, 1, 1}
	normalise := func(x []float32, mean, variance []float64) []float64 {
		out := make([]float64, len(x))
		for i, v := range x {
			c := i % bnC
			out[i] = (float64(v) - mean[c]) / math.Sqrt(variance[c]+1e-5)
		}
		return out
	}
	var want1, want2 []float64
	for step, x := range [][]float32{x1, x2} {
		mask := [][]bool{all, padded}[step]
		mean, biased, unbiased := referenceStats(x, mask)
		if step == 0 {
			want1 = normalise(x, mean, biased)
		} else {
			want2 = normalise(x, mean, biased)
		}
		for c := range bnC {
			rm[c] = 0.9*rm[c] + 0.1*mean[c]
			rv[c] = 0.9*rv[c] + 0.1*unbiased[c]
		}
	}
	want3 := normalise(x3, rm, rv)
	for b := range bnB { // padding's outputs are not compared
		if !padded[b] {
			for i := b * bnH * bnW * bnC; i < (b+1)*bnH*bnW*bnC; i++ {
				y2[i], want2[i] = 0, 0
			}
		}
	}
	for _, c := range []struct {
		what      string
		got, want []float64
	}{{"training output 1", y1, want1}, {"training output 2 (one example padding)", y2, want2},
		{"evaluation output", y3, want3}, {"running_mean", storeFloats(t, store, "/bn/running_mean"), rm},
		{"running_var", storeFloats(t, store, "/bn/running_var"), rv},
		{"num_batches_tracked", storeFloats(t, store, "/bn/num_batches_tracked"), []float64{2}}} {
		if d := maxDiff(c.got, c.want); !(d <= 1e-5) {
			t.Errorf("%s: %.4g away from the reference\n got %v\nwant %v", c.what, d, c.got, c.want)
		}
	}

	python := testutil.TorchPython(t, "torch.nn.BatchNorm2d itself")
	const script = `
import json, sys, torch
a = json.loads(sys.argv[1])
B, H, W, C = a["shape"]
bn = torch.nn.BatchNorm2d(C)
def nchw(x, keep):
    t = torch.tensor(x, dtype=torch.float32).reshape(B, H, W, C)[torch.tensor(keep)]
    return t.permute(0, 3, 1, 2)
def back(y):
    return y.permute(0, 2, 3, 1).flatten().tolist()
with torch.no_grad():
    bn.train(); y1 = back(bn(nchw(a["x1"], a["all"]))); y2 = back(bn(nchw(a["x2"], a["padded"])))
    bn.eval(); y3 = back(bn(nchw(a["x3"], a["all"])))
print(json.dumps({"y1": y1, "y2": y2, "y3": y3, "running_mean": bn.running_mean.tolist(),
    "running_var": bn.running_var.tolist(), "num_batches_tracked": int(bn.num_batches_tracked)}))
`
	in, _ := json.Marshal(map[string]any{"shape": []int{bnB, bnH, bnW, bnC}, "x1": x1, "x2": x2, "x3": x3, "all": all, "padded": padded})
	var res struct {
		Y1, Y2, Y3 []float64
		RM         []float64 `json:"running_mean"`
		RV         []float64 `json:"running_var"`
		Tracked    int       `json:"num_batches_tracked"`
	}
	testutil.RunPythonJSON(t, "torch.nn.BatchNorm2d", python, script, &res, string(in))
	var real2 []float64 // y2 without the padding's rows
	for b := range bnB {
		if padded[b] {
			real2 = append(real2, y2[b*bnH*bnW*bnC:(b+1)*bnH*bnW*bnC]...)
		}
	}
	for _, c := range []struct {
		what      string
		got, want []float64
	}{{"training output 1", y1, res.Y1}, {"training output 2", real2, res.Y2}, {"evaluation output", y3, res.Y3},
		{"running_mean", storeFloats(t, store, "/bn/running_mean"), res.RM},
		{"running_var", storeFloats(t, store, "/bn/running_var"), res.RV},
		{"num_batches_tracked", storeFloats(t, store, "/bn/num_batches_tracked"), []float64{float64(res.Tracked)}}} {
		if d := maxDiff(c.got, c.want); !(d <= 1e-5) {
			t.Errorf("%s: %.4g away from torch's\n got %v\ntorch %v", c.what, d, c.got, c.want)
		}
	}
}

// TestBatchNormAllPaddingKeepsStats: a batch without a real example changes neither the
// running statistics nor num_batches_tracked.
func TestBatchNormAllPaddingKeepsStats(t *testing.T) {
	store := model.NewStore()
	train := bnExec(t, goBackend(t), store, true, BatchNormConfig{})
	train(randomNHWC(1), []bool{true, true, true, true})
	before := [][]float64{storeFloats(t, store, "/bn/running_mean"), storeFloats(t, store, "/bn/running_var"),
		storeFloats(t, store, "/bn/num_batches_tracked")}
	train(randomNHWC(2), []bool{false, false, false, false})
	after := [][]float64{storeFloats(t, store, "/bn/running_mean"), storeFloats(t, store, "/bn/running_var"),
		storeFloats(t, store, "/bn/num_batches_tracked")}
	for i := range before {
		if maxDiff(before[i], after[i]) != 0 {
			t.Errorf("a batch of padding changed the statistics: %v -> %v", before[i], after[i])
		}
	}
}

// TestBatchNormFloat64: on a float64 input the statistics and the variables are float64 (not
// rounded through float32): the output and running statistics equal a float64 computation
// within 1e-12, where float32 statistics would be off by about 1e-7.
func TestBatchNormFloat64(t *testing.T) {
	store := model.NewStore()
	exec, err := model.NewExec(goBackend(t), store, func(s *model.Scope, x, mask *Node) *Node {
		s.Store().SetTraining(x.Graph(), true)
		return BatchNorm(s.In("bn"), x, mask, BatchNormConfig{})
	})
	if err != nil {
		t.Fatal(err)
	}
	x32 := randomNHWC(3)
	x := make([]float64, len(x32))
	for i, v := range x32 {
		x[i] = float64(v) + 1e-9*float64(i%7) // bits float32 cannot hold
	}
	mask := []bool{true, true, false, true}
	out, err := exec.Call(tensors.FromFlatDataAndDimensions(x, bnB, bnH, bnW, bnC), tensors.FromValue(mask))
	if err != nil {
		t.Fatal(err)
	}
	if dt := out[0].DType(); dt != dtypes.Float64 {
		t.Fatalf("output dtype %s, want float64", dt)
	}
	y := tensors.MustCopyFlatData[float64](out[0])
	// The reference, in float64 on the same values.
	var worst float64
	var wantMean, wantVar []float64
	for c := range bnC {
		var sum, ss, n float64
		for b := range bnB {
			for p := range bnH * bnW {
				if mask[b] {
					sum += x[(b*bnH*bnW+p)*bnC+c]
					n++
				}
			}
		}
		mean := sum / n
		for b := range bnB {
			for p := range bnH * bnW {
				if mask[b] {
					d := x[(b*bnH*bnW+p)*bnC+c] - mean
					ss += d * d
				}
			}
		}
		for b := range bnB {
			for p := range bnH * bnW {
				if i := (b*bnH*bnW+p)*bnC + c; mask[b] {
					worst = max(worst, math.Abs(y[i]-(x[i]-mean)/math.Sqrt(ss/n+1e-5)))
				}
			}
		}
		wantMean, wantVar = append(wantMean, 0.1*mean), append(wantVar, 0.9+0.1*ss/(n-1))
	}
	if worst > 1e-12 {
		t.Errorf("float64 output off the float64 reference by %.1e, want at most 1e-12", worst)
	}
	for _, name := range []string{BatchNormWeight, BatchNormRunningMean, BatchNormRunningVar} {
		if dt := store.GetVariable("/bn/" + name).DType(); dt != dtypes.Float64 {
			t.Errorf("%s is %s, want float64", name, dt)
		}
	}
	if d := maxDiff(storeFloats(t, store, "/bn/running_mean"), wantMean); d > 1e-12 {
		t.Errorf("running_mean off by %.1e", d)
	}
	if d := maxDiff(storeFloats(t, store, "/bn/running_var"), wantVar); d > 1e-12 {
		t.Errorf("running_var off by %.1e", d)
	}
}

type bnExample struct {
	x     []float32
	label int32
}

// bnTrain trains a model with BatchNorm with SGD at a global batch of 7 for 2 epochs (4 global
// batches each) on acc and returns its losses and the running statistics (running_mean,
// running_var, num_batches_tracked).
func bnTrain(acc *accelerator.Accelerator) (losses []float64, stats [][]float64, err error) {
	rng := rand.New(rand.NewPCG(3, 4))
	examples := make([]bnExample, 28)
	for i := range examples {
		x := make([]float32, 5)
		for j := range x {
			x[j] = float32(rng.NormFloat64()*3 + 1)
		}
		examples[i] = bnExample{x, int32(rng.IntN(3))}
	}
	collate := func(batch []bnExample) ([]*tensors.Tensor, *tensors.Tensor, error) {
		xs, ys := make([][]float32, len(batch)), make([]int32, len(batch))
		for i, e := range batch {
			xs[i], ys[i] = e.x, e.label
		}
		return []*tensors.Tensor{tensors.FromValue(xs)}, tensors.FromValue(ys), nil
	}
	loader, err := data.NewLoader(data.FromSlice(examples), data.LoaderConfig[bnExample]{GlobalBatchSize: 7, Shuffle: true,
		Seed: 5, Collate: collate})
	if err != nil {
		return nil, nil, err
	}
	opt, err := optim.SGD(optim.SGDConfig{LearningRate: 0.1, Momentum: 0.9, WeightDecay: 5e-4})
	if err != nil {
		return nil, nil, err
	}
	job, err := acc.Prepare(model.NewStore(), opt, loader)
	if err != nil {
		return nil, nil, err
	}
	step := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *Node {
		h := BatchNorm(s.In("bn"), layers.Dense(s.In("hidden"), b.Inputs[0], true, 6), b.Mask, BatchNormConfig{})
		l := accelerator.CrossEntropy(layers.Dense(s.In("out"), Tanh(h), true, 3), b.Labels, b.Mask)
		acc.Backward(s, l)
		return l
	})
	for range 2 {
		for batch, err := range job.Batches() {
			if err != nil {
				return nil, nil, err
			}
			loss, err := step.Run(batch)
			if err != nil {
				return nil, nil, err
			}
			v, err := loss.Value()
			if err != nil {
				return nil, nil, err
			}
			losses = append(losses, v)
		}
	}
	for _, p := range []string{"/bn/running_mean", "/bn/running_var", "/bn/num_batches_tracked"} {
		v := job.Store().GetVariable(p)
		t, err := v.Value()
		if err != nil {
			return nil, nil, err
		}
		var vals []float64
		if err := t.ConstFlatData(func(flat any) {
			switch f := flat.(type) {
			case []float32:
				vals = f64(f)
			case []int64:
				vals = []float64{float64(f[0])}
			}
		}); err != nil {
			return nil, nil, err
		}
		stats = append(stats, vals)
	}
	return losses, stats, nil
}

// TestBatchNormSameRunOn1And2Devices: a model with BatchNorm (bnTrain: global batches of 7,
// on 2 devices shares 4+3 with one padded slot) gives the same losses and the same running
// statistics on 1 and 2 XLA CPU devices: the statistics are the global batch's.
func TestBatchNormSameRunOn1And2Devices(t *testing.T) {
	plugin := acceltest.CPUPlugin(t)
	run := func(devices int) ([]float64, [][]float64) {
		acc, err := accelerator.New(accelerator.Config{Backend: plugin, Devices: devices, Quiet: true, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		defer acc.Close()
		losses, stats, err := bnTrain(acc)
		if err != nil {
			t.Fatal(err)
		}
		return losses, stats
	}
	l1, s1 := run(1)
	l2, s2 := run(2)
	if d := maxDiff(l1, l2); !(d <= 1e-5) {
		t.Errorf("losses on 1 and 2 devices %.3g apart:\n1: %v\n2: %v", d, l1, l2)
	}
	for i, what := range []string{"running_mean", "running_var", "num_batches_tracked"} {
		if d := maxDiff(s1[i], s2[i]); !(d <= 1e-5) {
			t.Errorf("%s on 1 and 2 devices %.3g apart:\n1: %v\n2: %v", what, d, s1[i], s2[i])
		}
	}
	if s1[2][0] != 8 {
		t.Errorf("num_batches_tracked %v after 2 epochs of 4 global batches, want 8", s1[2])
	}
	t.Logf("losses %v; running_mean %v", l1, s1[0])
}

// TestRsqrtHasNoGradient pins a gap of GoMLX v0.28.3 that BatchNorm works around (1/Sqrt
// instead of Rsqrt): building the gradient of Rsqrt panics. When GoMLX defines it, this test
// fails, and BatchNorm may use Rsqrt again.
func TestRsqrtHasNoGradient(t *testing.T) {
	backend := goBackend(t)
	exec, err := model.NewExec(backend, model.NewStore(), func(s *model.Scope, x *Node) *Node {
		return Gradient(ReduceAllSum(Rsqrt(x)), x)[0]
	})
	if err == nil {
		_, err = exec.Call(tensors.FromValue([]float32{4}))
	}
	if err == nil {
		t.Fatal("GoMLX now differentiates Rsqrt: nn.BatchNorm may use it again")
	}
	t.Logf("as expected: %.150s", err)
}
