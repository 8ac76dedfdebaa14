package auto_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/models/auto"
	"github.com/goaccel/goaccel/models/lora"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// vecFamily is a family whose inputs are not text: a linear classifier of float vectors,
// logits = x·weight + bias, its weights in config.json. Its processor is a
// BatchProcessor[[]float32], as an image processor is a BatchProcessor of images.
type vecFamily struct{}

// vecConfig is its config.json.
type vecConfig struct {
	ModelType   string            `json:"model_type"`
	Weight      [][]float32       `json:"weight"` // [dim][num_labels]
	Bias        []float32         `json:"bias"`
	ProblemType string            `json:"problem_type,omitempty"`
	ID2Label    map[string]string `json:"id2label,omitempty"`
	numLabels   int
	labels      []string
}

func (vecFamily) Name() string         { return "vec" }
func (vecFamily) ModelTypes() []string { return []string{"vec-linear"} }

func (vecFamily) ParseConfig(b []byte, name string) (auto.Config, error) {
	var c vecConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("vec: %s: %w", name, err)
	}
	if len(c.Weight) == 0 || len(c.Bias) == 0 {
		return nil, fmt.Errorf("vec: %s: want weight and bias", name)
	}
	for _, row := range c.Weight {
		if len(row) != len(c.Bias) {
			return nil, fmt.Errorf("vec: %s: a weight row of %d, %d biases", name, len(row), len(c.Bias))
		}
	}
	c.numLabels = len(c.Bias)
	if len(c.ID2Label) == c.numLabels {
		c.labels = make([]string, c.numLabels)
		for k, v := range c.ID2Label {
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= c.numLabels {
				return nil, fmt.Errorf("vec: %s: id2label key %q", name, k)
			}
			c.labels[i] = v
		}
	}
	return &c, nil
}

func (f vecFamily) Load(dir string, store *model.Store, req auto.LoadRequest) (auto.Network, auto.Processor, error) {
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, nil, err
	}
	c, err := f.ParseConfig(b, filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, nil, err
	}
	net, err := c.New(store)
	return net, vecProcessor{dim: len(c.(*vecConfig).Weight)}, err
}

func (vecFamily) Reference() auto.Reference {
	return auto.Reference{Name: "vec", Shape: auto.Shape{Hidden: 4, Layers: 1, Heads: 1, FF: 4, Vocab: 1},
		Config: func(s auto.Shape, _ int) (auto.Config, error) {
			w := make([][]float32, s.Hidden)
			for i := range w {
				w[i] = make([]float32, 2)
			}
			return &vecConfig{ModelType: "vec-linear", Weight: w, Bias: make([]float32, 2), numLabels: 2}, nil
		}}
}

func (c *vecConfig) Facts() auto.Facts {
	return auto.Facts{ModelType: "vec-linear", Inputs: 1, MaxPositions: 1,
		Shape: auto.Shape{Hidden: len(c.Weight), Layers: 1, Heads: 1, FF: len(c.Weight), Vocab: 1}}
}
func (c *vecConfig) SetNumLabels(n int)    { c.numLabels, c.labels = n, nil }
func (c *vecConfig) CheckMaxLen(int) error { return nil }
func (c *vecConfig) ForwardFLOPs(b, _ int) float64 {
	return float64(2 * b * len(c.Weight) * c.numLabels)
}
func (c *vecConfig) JSON() ([]byte, error) { return json.Marshal(c) }
func (c *vecConfig) New(store *model.Store) (auto.Network, error) {
	if store == nil {
		store = model.NewStore()
	}
	return &vecNet{cfg: c, store: store}, nil
}

// vecNet is the linear classifier; its weights are variables made from config.json's.
type vecNet struct {
	cfg   *vecConfig
	store *model.Store
}

func (n *vecNet) Classifier() auto.Classifier { return n }
func (n *vecNet) Store() *model.Store         { return n.store }
func (n *vecNet) NumParameters() int          { return (len(n.cfg.Weight) + 1) * n.cfg.numLabels }
func (n *vecNet) Config() auto.Config         { return n.cfg }
func (n *vecNet) Logits(s *model.Scope, inputs []*Node) *Node {
	x := inputs[0]
	g := x.Graph()
	w := s.At("head").VariableWithValue("weight", n.cfg.Weight).NodeValue(g)
	b := s.At("head").VariableWithValue("bias", n.cfg.Bias).NodeValue(g)
	return Add(MatMul(x, w), InsertAxes(b, 0))
}
func (n *vecNet) HeadFields() (*int, *[]string, *string) {
	return &n.cfg.numLabels, &n.cfg.labels, &n.cfg.ProblemType
}
func (n *vecNet) SetDropout(float64)                          {}
func (n *vecNet) SetGradientCheckpointing(bool)               {}
func (n *vecNet) LoRATargets() []string                       { return nil }
func (n *vecNet) SavePretrained(string, auto.Processor) error { return fmt.Errorf("vec: no saving") }
func (n *vecNet) AttachLoRA(lora.Config, string) (*lora.Adapter, error) {
	return nil, fmt.Errorf("vec: no LoRA")
}

// vecProcessor makes a batch of float vectors of one length into float32 [B, dim].
type vecProcessor struct{ dim int }

func (vecProcessor) Kind() string                { return "vectors" }
func (vecProcessor) SavePretrained(string) error { return nil }
func (p vecProcessor) Process(batch [][]float32) ([]*tensors.Tensor, error) {
	flat := make([]float32, 0, len(batch)*p.dim)
	for i, v := range batch {
		if len(v) != p.dim {
			return nil, fmt.Errorf("vector %d has %d values, want %d", i, len(v), p.dim)
		}
		flat = append(flat, v...)
	}
	return []*tensors.Tensor{tensors.FromFlatDataAndDimensions(flat, len(batch), p.dim)}, nil
}

// csvProcessor is a processor of another input type for the same model: "1,2,3" to a vector.
type csvProcessor struct{ vecProcessor }

func (p csvProcessor) Process(batch []string) ([]*tensors.Tensor, error) {
	vs := make([][]float32, len(batch))
	for i, s := range batch {
		for _, f := range strings.Split(s, ",") {
			v, err := strconv.ParseFloat(f, 32)
			if err != nil {
				return nil, fmt.Errorf("row %d: %w", i, err)
			}
			vs[i] = append(vs[i], float32(v))
		}
	}
	return p.vecProcessor.Process(vs)
}

var registerVec = sync.OnceValue(func() error { return auto.Register(vecFamily{}) })

// vecFolder writes a vec-linear folder of the given weights.
func vecFolder(t *testing.T, weight [][]float32, bias []float32, labels []string) string {
	t.Helper()
	c := vecConfig{ModelType: "vec-linear", Weight: weight, Bias: bias}
	if labels != nil {
		c.ID2Label = map[string]string{}
		for i, l := range labels {
			c.ID2Label[strconv.Itoa(i)] = l
		}
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPredictorOfVectors: a PredictorOf over a processor that is not text (float vectors,
// as an image processor's pixels would be) predicts through a registered family with no
// text code: the scores are the softmax of x·W+b computed here in float64 for a single-label
// head, the sigmoid for a multi-label one, the logits for regression, in batches of 3 (a
// short last batch, filled with copies of its first row); a processor given explicitly
// (strings parsed to vectors) replaces the model's; the text Predictor and a processor of
// the wrong input type are refused with the processor's kind; a bad input names its index.
func TestPredictorOfVectors(t *testing.T) {
	if err := registerVec(); err != nil {
		t.Fatal(err)
	}
	acc, err := accelerator.New(accelerator.Config{Backend: "go", Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	weight := [][]float32{{0.5, -1, 2}, {1.5, 0.25, -0.75}, {-2, 1, 0.125}, {0, 0.5, 1}}
	bias := []float32{0.1, -0.2, 0.3}
	xs := [][]float32{{1, 0, 0, 0}, {0, 1, 0, 0}, {0.5, -0.5, 2, 1}, {-1, -1, -1, -1}, {3, 2, 1, 0}, {0, 0, 0, 0}, {0.25, 4, -3, 2}}
	logits := func(x []float32, k int) []float64 {
		out := make([]float64, k)
		for j := range k {
			out[j] = float64(bias[j])
			for i, v := range x {
				out[j] += float64(v) * float64(weight[i][j])
			}
		}
		return out
	}
	softmax := func(l []float64) []float64 {
		var sum float64
		out := make([]float64, len(l))
		for i, v := range l {
			out[i] = math.Exp(v)
			sum += out[i]
		}
		for i := range out {
			out[i] /= sum
		}
		return out
	}
	sigmoid := func(l []float64) []float64 {
		out := make([]float64, len(l))
		for i, v := range l {
			out[i] = 1 / (1 + math.Exp(-v))
		}
		return out
	}
	identity := func(l []float64) []float64 { return l }
	check := func(t *testing.T, got []auto.Prediction, k int, names []string, f func([]float64) []float64) {
		t.Helper()
		if len(got) != len(xs) {
			t.Fatalf("%d predictions for %d inputs", len(got), len(xs))
		}
		for i, pred := range got {
			want := f(logits(xs[i], k))
			top := 0
			for j, v := range want {
				if v > want[top] {
					top = j
				}
				if math.Abs(pred.Scores[j]-v) > 1e-5 {
					t.Errorf("input %d: score %d %g, want %g", i, j, pred.Scores[j], v)
				}
			}
			label := "LABEL_" + strconv.Itoa(top)
			if names != nil {
				label = names[top]
			}
			if pred.ID != top || pred.Label != label || pred.Score != pred.Scores[top] {
				t.Errorf("input %d: top %d %q %g, want %d %q", i, pred.ID, pred.Label, pred.Score, top, label)
			}
		}
	}
	// predict predicts xs with m at batch size batch; load loads a folder with opts.
	predict := func(m *auto.Model, batch int) []auto.Prediction {
		t.Helper()
		p, err := auto.NewPredictorOf[[]float32](m, nil, acc.Backend(), batch)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Predict(xs)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	load := func(dir string, opts auto.Options) *auto.Model {
		t.Helper()
		m, err := auto.Load(dir, nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	names := []string{"cat", "dog", "bird"}
	m := load(vecFolder(t, weight, bias, names), auto.Options{})
	if m.Tokenizer() != nil || m.Processor.Kind() != "vectors" {
		t.Fatalf("the vec model's processor: %T", m.Processor)
	}
	check(t, predict(m, 3), 3, names, softmax)
	check(t, predict(m, 1), 3, names, softmax)

	rows := make([]string, len(xs))
	for i, x := range xs {
		parts := make([]string, len(x))
		for j, v := range x {
			parts[j] = strconv.FormatFloat(float64(v), 'g', -1, 32)
		}
		rows[i] = strings.Join(parts, ",")
	}
	pcsv, err := auto.NewPredictorOf[string](m, csvProcessor{vecProcessor{dim: 4}}, acc.Backend(), 4)
	if err != nil {
		t.Fatal(err)
	}
	if viaCSV, err := pcsv.Predict(rows); err != nil {
		t.Fatal(err)
	} else {
		check(t, viaCSV, 3, names, softmax)
	}

	if _, err := auto.NewPredictor(m, acc.Backend(), 2); err == nil || !strings.Contains(err.Error(), "(vectors) takes no text") {
		t.Errorf("NewPredictor of a vector model: %v", err)
	}
	if _, err := auto.NewPredictorOf[string](m, nil, acc.Backend(), 2); err == nil || !strings.Contains(err.Error(), "does not process inputs of type string") {
		t.Errorf("NewPredictorOf[string] of a vector model: %v", err)
	}
	p, err := auto.NewPredictorOf[[]float32](m, nil, acc.Backend(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Predict([][]float32{{1, 2, 3, 4}, {1, 2}}); err == nil || !strings.Contains(err.Error(), "vector 1 has 2 values") {
		t.Errorf("a short vector: %v", err)
	}

	check(t, predict(load(vecFolder(t, weight, bias, nil), auto.Options{ProblemType: "multi_label_classification"}), 3), 3, nil, sigmoid)
	col := make([][]float32, len(weight))
	for i := range weight {
		col[i] = weight[i][:1]
	}
	check(t, predict(load(vecFolder(t, col, bias[:1], nil), auto.Options{ProblemType: "regression"}), 3), 1, nil, identity)
}
