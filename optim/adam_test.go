package optim

import (
	"math"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	_ "github.com/gomlx/compute/gobackend"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// firstAdamStep creates one scalar trainable variable per path (value start[path]), builds the
// loss sum(grad[path]·v) so that each variable's gradient is grad[path], applies one step of
// opt through UpdateGraphWithGradients (as the Accelerator does) on the pure-Go backend and
// returns the variables' new values.
func firstAdamStep(t *testing.T, opt optimizer.Interface, start, grad map[string]float32) map[string]float64 {
	t.Helper()
	backend, err := compute.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatalf("pure-Go backend: %v", err)
	}
	store := model.NewStore()
	root := store.RootScope()
	for path, v := range start {
		parts := strings.Split(strings.Trim(path, "/"), "/")
		s := root
		for _, p := range parts[:len(parts)-1] {
			s = s.At("%s", p)
		}
		s.VariableWithValue(parts[len(parts)-1], v)
	}
	exec, err := model.NewExec(backend, store, func(s *model.Scope, g *Graph) *Node {
		var values []*Node
		loss := ScalarZero(g, dtypes.Float32)
		for v := range s.IterVariables() {
			x := v.NodeValue(g)
			values = append(values, x)
			loss = Add(loss, MulScalar(x, float64(grad[v.Path()])))
		}
		opt.(gradientApplier).UpdateGraphWithGradients(s, Gradient(loss, values...), dtypes.Float32)
		return loss
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.Call(); err != nil {
		t.Fatalf("running one Adam step: %v", err)
	}
	out := map[string]float64{}
	for path := range start {
		out[path] = float64(tensors.ToScalar[float32](store.GetVariable(path).MustValue()))
	}
	return out
}

// TestAdamEpsilonIsPyTorchs: on the first step Adam moves a weight by lr·g/(|g|+eps). With a
// gradient of 1e-7 that is lr/1.1 with PyTorch's eps (1e-8) and lr/2 with GoMLX's default
// (1e-7): the default must be PyTorch's.
func TestAdamEpsilonIsPyTorchs(t *testing.T) {
	const lr = 0.01
	opt, err := Adam(AdamConfig{LearningRate: lr})
	if err != nil {
		t.Fatal(err)
	}
	got := firstAdamStep(t, opt, map[string]float32{"/dense/weight": 1}, map[string]float32{"/dense/weight": 1e-7})
	moved := 1 - got["/dense/weight"]
	if want := lr * 1e-7 / (1e-7 + adamEpsilon); math.Abs(moved-want) > 1e-6 {
		t.Errorf("first step moved the weight by %.6g, want %.6g (lr·g/(|g|+1e-8)); lr/2 = %.6g means eps 1e-7",
			moved, want, lr/2.0)
	}
}

// TestAdamWDecaysWeightsNotBiasesOrNorms: AdamW's decoupled decay lr·wd·w applies to the
// weights and, by default, not to biases or LayerNorm weights (Hugging Face's Trainer);
// NoDecay returning false decays everything (torch.optim.AdamW over model.parameters()).
func TestAdamWDecaysWeightsNotBiasesOrNorms(t *testing.T) {
	const lr, wd = 0.01, 0.1
	start := map[string]float32{"/dense/weight": 2, "/dense/bias": 2, "/bert/embeddings/LayerNorm/weight": 2}
	grad := map[string]float32{"/dense/weight": 1, "/dense/bias": 1, "/bert/embeddings/LayerNorm/weight": 1}
	adamOnly := 2 - lr*1/(1+adamEpsilon) // the Adam part of the first step
	decayed := adamOnly - lr*wd*2

	for _, c := range []struct {
		name    string
		noDecay func(string) bool
		want    map[string]float64
	}{
		{"default", nil, map[string]float64{"/dense/weight": decayed, "/dense/bias": adamOnly,
			"/bert/embeddings/LayerNorm/weight": adamOnly}},
		{"decay everything", func(string) bool { return false }, map[string]float64{"/dense/weight": decayed,
			"/dense/bias": decayed, "/bert/embeddings/LayerNorm/weight": decayed}},
	} {
		t.Run(c.name, func(t *testing.T) {
			opt, err := Adam(AdamConfig{LearningRate: lr, WeightDecay: wd, NoDecay: c.noDecay})
			if err != nil {
				t.Fatal(err)
			}
			got := firstAdamStep(t, opt, start, grad)
			for path, want := range c.want {
				if math.Abs(got[path]-want) > 1e-6 {
					t.Errorf("%s: %s = %.7f after one step, want %.7f (decayed %.7f, not decayed %.7f)",
						c.name, path, got[path], want, decayed, adamOnly)
				}
			}
		})
	}
}

func TestNoWeightDecay(t *testing.T) {
	for path, want := range map[string]bool{
		"/classifier/bias": true, "/bert/encoder/layer/0/attention/output/LayerNorm/weight": true,
		"/dense/biases": true, "/layer_normalization/gain": true, "/bert/embeddings/LayerNorm/bias": true,
		"/classifier/weight": false, "/bert/embeddings/word_embeddings/weight": false,
		"/bert/pooler/dense/weight": false, "/dense/weights": false,
	} {
		if got := NoWeightDecay(path); got != want {
			t.Errorf("NoWeightDecay(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestAdamRejectsBadConfig: bad values are refused naming the field; a rate of 0 is "unset"
// (trainer.Fit's Config.LearningRate or a schedule sets it), not an error.
func TestAdamRejectsBadConfig(t *testing.T) {
	if opt, err := Adam(AdamConfig{}); err != nil || opt.(*adam).LearningRate() != 0 {
		t.Errorf("Adam(AdamConfig{}): %v; want an optimizer whose rate is left to Fit or a schedule", err)
	}
	for _, c := range []struct {
		cfg  AdamConfig
		want string
	}{
		{AdamConfig{LearningRate: -1e-3}, "AdamConfig.LearningRate = -0.001"},
		{AdamConfig{LearningRate: math.Inf(1)}, "AdamConfig.LearningRate = +Inf"},
		{AdamConfig{LearningRate: math.NaN()}, "AdamConfig.LearningRate = NaN"},
		{AdamConfig{LearningRate: 1e-3, Beta1: 1}, "AdamConfig.Beta1 = 1"},
		{AdamConfig{LearningRate: 1e-3, Beta2: -0.1}, "AdamConfig.Beta2 = -0.1"},
		{AdamConfig{LearningRate: 1e-3, Epsilon: -1}, "AdamConfig.Epsilon = -1"},
		{AdamConfig{LearningRate: 1e-3, WeightDecay: -0.01}, "AdamConfig.WeightDecay = -0.01"},
	} {
		_, err := Adam(c.cfg)
		if err == nil || !strings.HasPrefix(err.Error(), "optim: Adam: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Adam(%+v): error %v, want one starting \"optim: Adam: \" naming %q", c.cfg, err, c.want)
		}
	}
}
