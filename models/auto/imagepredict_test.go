package auto_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data/image"
	"github.com/goaccel/goaccel/models/auto"
	"github.com/goaccel/goaccel/models/lora"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// pixFamily is an image family for the predictor's test: logits = (the mean of each channel
// of the processor's pixels) · weight + bias, weight [3][num_labels] and bias in config.json,
// and the folder's image processor (LoadImageProcessor), so that the test knows every score.
type pixFamily struct{}

type pixConfig struct {
	vecConfig
}

func (pixFamily) Name() string         { return "pix" }
func (pixFamily) ModelTypes() []string { return []string{"pix-linear"} }
func (pixFamily) ParseConfig(b []byte, name string) (auto.Config, error) {
	c, err := vecFamily{}.ParseConfig(b, name)
	if err != nil {
		return nil, err
	}
	return &pixConfig{*c.(*vecConfig)}, nil
}
func (f pixFamily) Load(dir string, store *model.Store, _ auto.LoadRequest) (auto.Network, auto.Processor, error) {
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, nil, err
	}
	c, err := f.ParseConfig(b, "config.json")
	if err != nil {
		return nil, nil, err
	}
	proc, err := auto.LoadImageProcessor(dir)
	if err != nil {
		return nil, nil, err
	}
	net, err := c.New(store)
	return net, proc, err
}
func (pixFamily) Reference() auto.Reference { return auto.Reference{} }
func (c *pixConfig) Facts() auto.Facts {
	f := c.vecConfig.Facts()
	f.ModelType, f.Image = "pix-linear", &auto.ImageFacts{Size: 8, Channels: 3}
	return f
}
func (c *pixConfig) New(store *model.Store) (auto.Network, error) {
	if store == nil {
		store = model.NewStore()
	}
	return &pixNet{vecNet{cfg: &c.vecConfig, store: store}}, nil
}

type pixNet struct{ vecNet }

func (n *pixNet) Logits(s *model.Scope, inputs []*Node) *Node {
	return n.vecNet.Logits(s, []*Node{ReduceMean(inputs[0], 1, 2)})
}
func (n *pixNet) SavePretrained(string, auto.Processor) error { return fmt.Errorf("pix: no saving") }
func (n *pixNet) AttachLoRA(lora.Config, string) (*lora.Adapter, error) {
	return nil, fmt.Errorf("pix: no LoRA")
}

var registerPix = sync.OnceValue(func() error { return auto.Register(pixFamily{}) })

// TestImagePredictor: an ImagePredictor over a model's image processor gives, for images of
// several sizes, the scores of the pipeline's function_to_apply computed here from the
// processor's pixels (softmax for single-label, sigmoid for multi-label and for one label,
// the logits for regression), the top_k best in order (ties in order of id), top_k 0 as 5
// capped at the classes; a negative top_k and a model without an image processor are refused.
func TestImagePredictor(t *testing.T) {
	if err := registerPix(); err != nil {
		t.Fatal(err)
	}
	acc, err := accelerator.New(accelerator.Config{Backend: "go", Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	proc, err := auto.NewImageProcessor(auto.ViTProcessor)
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.SetOutputSize(8); err != nil {
		t.Fatal(err)
	}
	folder := func(weight [][]float32, bias []float32, labels []string, problem string) string {
		c := vecConfig{ModelType: "pix-linear", Weight: weight, Bias: bias, ProblemType: problem}
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
		if err := proc.SavePretrained(dir); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var images []*image.RGB
	for _, wh := range [][2]int{{20, 11}, {8, 8}, {5, 30}, {64, 48}, {9, 9}} {
		m := &image.RGB{Width: wh[0], Height: wh[1], Pix: make([]uint8, wh[0]*wh[1]*3)}
		for i := range m.Pix {
			m.Pix[i] = uint8(rng.IntN(256))
		}
		images = append(images, m)
	}
	// logits are each image's, from the processor's pixels, in float64.
	logits := func(weight [][]float32, bias []float32, m *image.RGB) []float64 {
		px, err := proc.Process([]*image.RGB{m})
		if err != nil {
			t.Fatal(err)
		}
		flat := tensors.MustCopyFlatData[float32](px[0])
		var mean [3]float64
		for i, v := range flat {
			mean[i%3] += float64(v) / float64(len(flat)/3)
		}
		out := make([]float64, len(bias))
		for j := range out {
			out[j] = float64(bias[j])
			for c := range 3 {
				out[j] += mean[c] * float64(weight[c][j])
			}
		}
		return out
	}
	// The pipeline's functions written another way than auto's: exp(x - logsumexp), and
	// sigmoid through tanh.
	softmax := func(l []float64) []float64 {
		lse := 0.0
		for _, v := range l {
			lse += math.Exp(v)
		}
		lse = math.Log(lse)
		out := make([]float64, len(l))
		for i, v := range l {
			out[i] = math.Exp(v - lse)
		}
		return out
	}
	sigmoid := func(l []float64) []float64 {
		out := make([]float64, len(l))
		for i, v := range l {
			out[i] = (1 + math.Tanh(v/2)) / 2
		}
		return out
	}
	identity := func(l []float64) []float64 { return l }
	weight4 := [][]float32{{2, -1, 0.5, 2}, {-0.5, 1, 1.5, -0.5}, {1, 0.25, -2, 1}}
	bias4 := []float32{0.1, 0.2, -0.3, 0.1} // classes 0 and 3 tie on every image
	for _, c := range []struct {
		name           string
		weight         [][]float32
		bias           []float32
		labels         []string
		problem        string
		topK, wantTopK int
		f              func([]float64) []float64
	}{
		{"single-label, top 2", weight4, bias4, []string{"cat", "dog", "bird", "fish"}, "", 2, 2, softmax},
		{"single-label, top_k 0: 5 capped at 4", weight4, bias4, nil, "single_label_classification", 0, 4, softmax},
		{"multi-label, top 9 capped", weight4, bias4, []string{"a", "b", "c", "d"}, "multi_label_classification", 9, 4, sigmoid},
		{"one label: sigmoid", [][]float32{{1}, {-1}, {0.5}}, []float32{0.2}, nil, "", 0, 1, sigmoid},
		{"regression: the logits", [][]float32{{1}, {-1}, {0.5}}, []float32{0.2}, nil, "regression", 1, 1, identity},
	} {
		m, err := auto.Load(folder(c.weight, c.bias, c.labels, c.problem), nil, auto.Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		p, err := auto.NewImagePredictor(m, acc.Backend(), 2, c.topK)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := p.Predict(images)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for i, pr := range got {
			want := c.f(logits(c.weight, c.bias, images[i]))
			for j := range want {
				if math.Abs(pr.Scores[j]-want[j]) > 1e-5 {
					t.Errorf("%s, image %d: score %d %g, want %g", c.name, i, j, pr.Scores[j], want[j])
				}
			}
			if len(pr.TopK) != c.wantTopK {
				t.Fatalf("%s, image %d: %d of top_k, want %d", c.name, i, len(pr.TopK), c.wantTopK)
			}
			for k := 1; k < len(pr.TopK); k++ {
				if pr.TopK[k].Score > pr.TopK[k-1].Score {
					t.Errorf("%s, image %d: top_k out of order: %v", c.name, i, pr.TopK)
				}
			}
			name := func(id int) string {
				if c.labels != nil {
					return c.labels[id]
				}
				return "LABEL_" + strconv.Itoa(id)
			}
			if pr.TopK[0].Label != pr.Label || pr.TopK[0].Score != pr.Score || pr.Label != name(pr.ID) {
				t.Errorf("%s, image %d: top %v, prediction %q %d %g", c.name, i, pr.TopK[0], pr.Label, pr.ID, pr.Score)
			}
			if len(c.bias) == 4 && pr.Scores[0] == pr.Scores[3] { // the tie: class 0 before class 3
				var seen []string
				for _, ls := range pr.TopK {
					if ls.Label == name(0) || ls.Label == name(3) {
						seen = append(seen, ls.Label)
					}
				}
				if len(seen) == 2 && seen[0] != name(0) {
					t.Errorf("%s, image %d: tied classes in order %v, want %s first", c.name, i, seen, name(0))
				}
			}
		}
	}
	m, err := auto.Load(folder(weight4, bias4, nil, ""), nil, auto.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auto.NewImagePredictor(m, acc.Backend(), 2, -1); err == nil || !strings.Contains(err.Error(), "top_k -1") {
		t.Errorf("top_k -1: %v", err)
	}
	if err := registerVec(); err != nil {
		t.Fatal(err)
	}
	vec, err := auto.Load(vecFolder(t, [][]float32{{1, 2}}, []float32{0, 0}, nil), nil, auto.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auto.NewImagePredictor(vec, acc.Backend(), 2, 1); err == nil || !strings.Contains(err.Error(), "does not process inputs of type *image.RGB") {
		t.Errorf("a model of vectors: %v", err)
	}
}

// TestNewImageModel: a model made in code from an image family's config and a processor
// takes Options as Load does (classes and names) and predicts; a text family's config, and a
// processor whose output keeps each image's size, are refused.
func TestNewImageModel(t *testing.T) {
	if err := registerPix(); err != nil {
		t.Fatal(err)
	}
	acc, err := accelerator.New(accelerator.Config{Backend: "go", Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	cfg, err := pixFamily{}.ParseConfig([]byte(`{"model_type": "pix-linear", "weight": [[1, 0], [0, 1], [1, 1]], "bias": [0, 0]}`), "pix")
	if err != nil {
		t.Fatal(err)
	}
	proc, _ := auto.NewImageProcessor(auto.ViTProcessor)
	_ = proc.SetOutputSize(8)
	m, err := auto.NewImageModel(cfg, nil, proc, auto.Options{Labels: []string{"red", "green"}})
	if err != nil {
		t.Fatal(err)
	}
	if m.NumLabels() != 2 || m.Labels()[1] != "green" || m.Processor != proc || m.Dir != "" {
		t.Fatalf("model: %d labels %v, processor %v, dir %q", m.NumLabels(), m.Labels(), m.Processor, m.Dir)
	}
	p, err := auto.NewImagePredictor(m, acc.Backend(), 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	green := &image.RGB{Width: 3, Height: 3, Pix: []uint8{0, 255, 0, 0, 255, 0, 0, 255, 0, 0, 255, 0, 0, 255, 0, 0, 255, 0, 0, 255, 0, 0, 255, 0, 0, 255, 0}}
	if got, err := p.Predict([]*image.RGB{green}); err != nil || got[0].Label != "green" || len(got[0].TopK) != 1 {
		t.Errorf("a green image: %+v, %v", got, err)
	}
	vec, _ := vecFamily{}.ParseConfig([]byte(`{"weight": [[1, 0]], "bias": [0, 0]}`), "vec")
	if _, err := auto.NewImageModel(vec, nil, proc, auto.Options{}); err == nil || !strings.Contains(err.Error(), "not an image family") {
		t.Errorf("a vector family's config: %v", err)
	}
	edge, _ := auto.NewImageProcessor(auto.BitProcessor)
	edge.DoCenterCrop = false
	if _, err := auto.NewImageModel(cfg, nil, edge, auto.Options{}); err == nil || !strings.Contains(err.Error(), "keeps each image's size") {
		t.Errorf("a processor of each image's own size: %v", err)
	}
}
