package modernbert

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/compute"
	"github.com/gomlx/go-xla/compute/xla"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// tolerance is the largest max-abs difference accepted between this package and
// transformers on the tiny checkpoints, in float32.
const tolerance = 1e-5

// run is one input of fixtures.json with transformers' outputs.
type run struct {
	InputIDs      [][]int32 `json:"input_ids"`
	AttentionMask [][]int32 `json:"attention_mask"`
	HiddenShape   []int     `json:"hidden_shape"`
	HiddenB64     string    `json:"last_hidden_state_f32_b64"`
	LogitsShape   []int     `json:"logits_shape"`
	LogitsB64     string    `json:"logits_f32_b64"`
}

// trainRun is fixtures.json's training record: SGD steps on batches taken in turn.
type trainRun struct {
	LearningRate float64 `json:"learning_rate"`
	Batches      []struct {
		InputIDs      [][]int32 `json:"input_ids"`
		AttentionMask [][]int32 `json:"attention_mask"`
		Labels        []int32   `json:"labels"`
	} `json:"batches"`
	Losses []float64 `json:"losses"`
}

// fixtureModel is one checkpoint of fixtures.json (written by
// scripts/make_modernbert_fixtures.py) and transformers' outputs on it.
type fixtureModel struct {
	Folder     string    `json:"folder"`
	Single     *run      `json:"single"`
	Batch      *run      `json:"batch"`
	MeanSingle *run      `json:"mean_single"`
	MeanBatch  *run      `json:"mean_batch"`
	Train      *trainRun `json:"train"`
}

// fixtures is testdata/fixtures.json.
type fixtures struct {
	Transformers string                   `json:"transformers_version"`
	Models       map[string]*fixtureModel `json:"models"`
}

func loadFixtures(t *testing.T) *fixtures {
	t.Helper()
	contents, err := os.ReadFile(filepath.Join("testdata", "fixtures.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f fixtures
	if err := json.Unmarshal(contents, &f); err != nil {
		t.Fatalf("parsing testdata/fixtures.json: %v", err)
	}
	if len(f.Models) != 2 {
		t.Fatalf("testdata/fixtures.json has %d models, want 2", len(f.Models))
	}
	return &f
}

// xlaBackend is the XLA CPU backend, created once per test binary.
var xlaBackend = sync.OnceValues(func() (compute.Backend, error) {
	_ = os.Setenv("GOMLX_NO_AUTO_INSTALL", "1")
	return xla.New(testutil.FindCPUPlugin())
})

// mustBackend returns the XLA CPU backend; without the plugin the test skips loudly (fails under CI).
func mustBackend(t *testing.T) compute.Backend {
	t.Helper()
	testutil.CPUPlugin(t)
	b, err := xlaBackend()
	if err != nil {
		t.Fatalf("creating the XLA CPU backend: %v", err)
	}
	return b
}

// matrix is rows as a [B, L] int32 tensor.
func matrix(rows [][]int32) *tensors.Tensor {
	return tensors.FromFlatDataAndDimensions(slices.Concat(rows...), len(rows), len(rows[0]))
}

// hiddenAndLogits runs the encoder and the classifier once (inference).
func hiddenAndLogits(t *testing.T, backend compute.Backend, clf *Classifier, ids, mask [][]int32) (hidden, logits []float32) {
	t.Helper()
	exec, err := model.NewExec(backend, clf.Store(), func(s *model.Scope, ids, mask *Node) (*Node, *Node) {
		h := clf.Encoder(s, ids, mask)
		return h, clf.Head(s, clf.Pool(h, mask))
	})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := exec.Call(matrix(ids), matrix(mask))
	if err != nil {
		t.Fatalf("running the classifier: %v", err)
	}
	return tensors.MustCopyFlatData[float32](outs[0]), tensors.MustCopyFlatData[float32](outs[1])
}

// logitsOf runs Classifier.Logits once, in training mode when train (dropout on), else in inference.
func logitsOf(t *testing.T, backend compute.Backend, clf *Classifier, ids, mask [][]int32, train bool) []float32 {
	t.Helper()
	exec, err := model.NewExec(backend, clf.Store(), func(s *model.Scope, ids, mask *Node) *Node {
		s.Store().SetTraining(ids.Graph(), train)
		return clf.Logits(s, []*Node{ids, mask})
	})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := exec.Call(matrix(ids), matrix(mask))
	if err != nil {
		t.Fatalf("running Logits: %v", err)
	}
	return tensors.MustCopyFlatData[float32](outs[0])
}

// TestTensorsMatchTransformers: the tensors this package builds are those transformers saved,
// name for name and shape for shape, with and without biases.
func TestTensorsMatchTransformers(t *testing.T) {
	for name, m := range loadFixtures(t).Models {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", m.Folder)
			cfg, err := LoadConfig(filepath.Join(dir, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			st, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = st.Close() }()
			var theirs, ours []TensorSpec
			for _, info := range st.Header().Tensors {
				theirs = append(theirs, TensorSpec{Name: info.Name, Dims: info.Dims})
			}
			ours = cfg.Tensors()
			for _, l := range [][]TensorSpec{ours, theirs} {
				sort.Slice(l, func(i, j int) bool { return l[i].Name < l[j].Name })
			}
			if !slices.EqualFunc(ours, theirs, func(a, b TensorSpec) bool { return a.Name == b.Name && slices.Equal(a.Dims, b.Dims) }) {
				t.Errorf("tensors differ:\n ours   %v\n theirs %v", ours, theirs)
			}
		})
	}
}

// TestParityWithTransformers: on both checkpoints, the last hidden states (padding positions
// included) and the logits of a 40-token sequence (five local windows) and of a padded batch
// match transformers' within tolerance on XLA's CPU backend, with the checkpoint's pooling
// and, for tiny, "mean" pooling too.
func TestParityWithTransformers(t *testing.T) {
	f := loadFixtures(t)
	backend := mustBackend(t)
	for name, m := range f.Models {
		clf, err := LoadPretrained(filepath.Join("testdata", m.Folder), model.NewStore(), LoadOptions{LoadHead: true})
		if err != nil {
			t.Fatal(err)
		}
		pooling := clf.Config.ClassifierPooling
		for _, c := range []struct {
			what, pooling string
			run           *run
		}{{"single", pooling, m.Single}, {"batch", pooling, m.Batch}, {"mean_single", "mean", m.MeanSingle}, {"mean_batch", "mean", m.MeanBatch}} {
			if c.run == nil {
				continue
			}
			t.Run(name+"/"+c.what, func(t *testing.T) {
				clf.Config.ClassifierPooling = c.pooling
				defer func() { clf.Config.ClassifierPooling = pooling }()
				hidden, logits := hiddenAndLogits(t, backend, clf, c.run.InputIDs, c.run.AttentionMask)
				dh := testutil.MaxAbsDiff(t, "hidden", hidden, testutil.DecodeF32(t, "hidden", c.run.HiddenB64, c.run.HiddenShape))
				dl := testutil.MaxAbsDiff(t, "logits", logits, testutil.DecodeF32(t, "logits", c.run.LogitsB64, c.run.LogitsShape))
				t.Logf("%s %s (%s pooling, shape %v) vs transformers %s: last_hidden_state max abs diff %.3g, logits max abs diff %.3g",
					name, c.what, c.pooling, c.run.HiddenShape, f.Transformers, dh, dl)
				if dh > tolerance || dl > tolerance {
					t.Errorf("max abs diff hidden=%g logits=%g, want both <= %g", dh, dl, tolerance)
				}
				if got := logitsOf(t, backend, clf, c.run.InputIDs, c.run.AttentionMask, false); testutil.MaxAbsDiff(t, "Logits", got, logits) != 0 {
					t.Errorf("Logits differs from Encoder, Pool and Head")
				}
			})
		}
	}
}

// example is one labelled sequence of the training fixture.
type example struct {
	ids, mask []int32
	label     int32
}

// collateExamples stacks examples of one length into [input_ids, attention_mask] and labels.
func collateExamples(batch []example) ([]*tensors.Tensor, *tensors.Tensor, error) {
	ids, mask, labels := make([][]int32, len(batch)), make([][]int32, len(batch)), make([]int32, len(batch))
	for i, e := range batch {
		ids[i], mask[i], labels[i] = e.ids, e.mask, e.label
	}
	return []*tensors.Tensor{matrix(ids), matrix(mask)}, tensors.FromValue(labels), nil
}

// TestTrainingParity: from the tiny checkpoint (every dropout rate 0), 20 plain SGD steps on
// two fixed batches taken in turn, run the way users train (accelerator.New, Prepare,
// TrainStep, CrossEntropy, Backward, on one XLA CPU device), give transformers' + PyTorch's
// losses within 1e-4.
func TestTrainingParity(t *testing.T) {
	f := loadFixtures(t)
	m := f.Models["tiny"]
	acc, err := accelerator.New(accelerator.Config{Backend: testutil.CPUPlugin(t), Devices: 1, Quiet: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	clf, err := LoadPretrained(filepath.Join("testdata", m.Folder), model.NewStore(), LoadOptions{LoadHead: true})
	if err != nil {
		t.Fatal(err)
	}
	var examples data.Slice[example]
	size := len(m.Train.Batches[0].Labels)
	for _, b := range m.Train.Batches {
		if len(b.Labels) != size {
			t.Fatalf("the fixture's batches have %d and %d examples", size, len(b.Labels))
		}
		for i := range b.Labels {
			examples = append(examples, example{b.InputIDs[i], b.AttentionMask[i], b.Labels[i]})
		}
	}
	loader, err := data.NewLoader(examples, data.LoaderConfig[example]{BatchSize: size, Collate: collateExamples})
	if err != nil {
		t.Fatal(err)
	}
	opt := optimizer.StochasticGradientDescent().WithLearningRate(m.Train.LearningRate).WithDecay(false).Done()
	job, err := acc.Prepare(clf, opt, loader)
	if err != nil {
		t.Fatal(err)
	}
	step := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *Node {
		l := accelerator.CrossEntropy(clf.Logits(s, b.Inputs), b.Labels, b.Mask)
		acc.Backward(s, l)
		return l
	})
	var losses []float64
	for len(losses) < len(m.Train.Losses) {
		for gb, err := range job.Batches() {
			if err != nil {
				t.Fatal(err)
			}
			l, err := step.Run(gb)
			if err != nil {
				t.Fatal(err)
			}
			v, err := l.Value()
			if err != nil {
				t.Fatal(err)
			}
			if losses = append(losses, v); len(losses) == len(m.Train.Losses) {
				break
			}
		}
	}
	worst := 0.0
	for i, want := range m.Train.Losses {
		d := math.Abs(losses[i] - want)
		worst = max(worst, d)
		if d > 1e-4 {
			t.Errorf("step %d: loss %.6f, transformers %.6f (diff %.3g)", i+1, losses[i], want, d)
		}
	}
	t.Logf("%d SGD steps (lr %g): losses %.4f -> %.4f, max abs diff from transformers %s %.3g",
		len(losses), m.Train.LearningRate, losses[0], losses[len(losses)-1], f.Transformers, worst)
}
