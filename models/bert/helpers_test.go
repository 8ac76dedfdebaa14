package bert

import (
	"os"
	"sync"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/compute"
	_ "github.com/gomlx/compute/gobackend"
	"github.com/gomlx/go-xla/compute/xla"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/loss"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// goBackend returns the pure-Go backend, created once per test binary.
var goBackend = sync.OnceValues(func() (compute.Backend, error) {
	return compute.NewWithConfig("go:ops_sequential")
})

// mustGoBackend returns the pure-Go backend or fails the test.
func mustGoBackend(t testing.TB) compute.Backend {
	t.Helper()
	b, err := goBackend()
	if err != nil {
		t.Fatalf("creating the pure-Go backend: %v", err)
	}
	return b
}

// xlaPluginPath is the XLA CPU PJRT plugin of $PJRT_PLUGIN_LIBRARY_PATH or $GOACCEL_HOME (the
// Makefile's .deps, filled by `make deps`), or "".
func xlaPluginPath() string { return testutil.FindCPUPlugin() }

// xlaBackend returns the XLA CPU backend, created once per test binary.
var xlaBackend = sync.OnceValues(func() (compute.Backend, error) {
	_ = os.Setenv("GOMLX_NO_AUTO_INSTALL", "1")
	return xla.New(xlaPluginPath())
})

// testBackends lists the backends to run graph tests on: always the pure-Go one, and the XLA
// CPU plugin when it is installed (the test says loudly when it is not).
func testBackends(t *testing.T) map[string]compute.Backend {
	t.Helper()
	backends := map[string]compute.Backend{"go": mustGoBackend(t)}
	if _, err := os.Stat(xlaPluginPath()); err != nil {
		// Half of what the test proves is on XLA: say so, and fail under CI, where make deps installs it.
		testutil.Missing(t, "the XLA CPU plugin (not in $PJRT_PLUGIN_LIBRARY_PATH or $GOACCEL_HOME), so this test's XLA half",
			"run `make deps`, and the test with GOACCEL_HOME=$PWD/.deps")
	}
	b, err := xlaBackend()
	if err != nil {
		t.Fatalf("creating the XLA CPU backend from %s: %v", xlaPluginPath(), err)
	}
	backends["xla-cpu"] = b
	return backends
}

// encodeOnce runs the classifier's encoder once and returns hidden [B, L, H] and pooled [B, H].
func encodeOnce(t *testing.T, backend compute.Backend, clf *Classifier, enc *Encoded) (hidden, pooled []float32) {
	t.Helper()
	exec, err := model.NewExec(backend, clf.Store(), func(s *model.Scope, ids, mask, types *Node) (*Node, *Node) {
		return clf.Encoder(s, ids, mask, types)
	})
	if err != nil {
		t.Fatalf("NewExec: %v", err)
	}
	in := enc.Tensors()
	outs, err := exec.Call(in[0], in[1], in[2])
	if err != nil {
		t.Fatalf("running the encoder: %v", err)
	}
	return tensors.MustCopyFlatData[float32](outs[0]), tensors.MustCopyFlatData[float32](outs[1])
}

// logitsOnce runs Classifier.Logits once (training=false unless train) and returns [B, labels].
func logitsOnce(t *testing.T, backend compute.Backend, clf *Classifier, enc *Encoded, train bool) []float32 {
	t.Helper()
	exec, err := model.NewExec(backend, clf.Store(), func(s *model.Scope, inputs []*Node) *Node {
		s.Store().SetTraining(inputs[0].Graph(), train)
		return clf.Logits(s, inputs)
	})
	if err != nil {
		t.Fatalf("NewExec: %v", err)
	}
	in := enc.Tensors()
	outs, err := exec.Call(in[0], in[1], in[2])
	if err != nil {
		t.Fatalf("running Logits: %v", err)
	}
	return tensors.MustCopyFlatData[float32](outs[0])
}

// variableValues reads every classifier variable of store (HF name -> values).
func variableValues(t *testing.T, store *model.Store, cfg Config, withHead bool) map[string][]float32 {
	t.Helper()
	specs := cfg.EncoderTensors()
	if withHead {
		specs = cfg.Tensors()
	}
	out := make(map[string][]float32, len(specs))
	for _, spec := range specs {
		path, _ := VarPath(spec.Name)
		v := store.GetVariable(path)
		if v == nil || !v.HasValue() {
			t.Fatalf("variable %s (%s) missing or without value", path, spec.Name)
		}
		value, err := v.Value()
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		out[spec.Name] = tensors.MustCopyFlatData[float32](value)
	}
	return out
}

// microConfig is a very small BERT used by the unit tests.
func microConfig(vocabSize int) Config {
	cfg := TinyConfig(vocabSize)
	cfg.HiddenSize = 16
	cfg.NumAttentionHeads = 4
	cfg.IntermediateSize = 24
	cfg.MaxPositionEmbeddings = 12
	cfg.NumLabels = 3
	cfg.InitializerRange = 0.5 // large weights make mistakes visible
	return cfg
}

// microVocab is a handcrafted vocabulary for tokenizer and model tests.
var microVocab = []string{
	PadToken, UnkToken, ClsToken, SepToken, MaskToken,
	"the", "movie", "was", "great", "bad", "un", "##aff", "##able", "##s", "!", ",", ".", "'", "t", "don",
	"cafe", "a", "##b", "##c", "東", "京", "$", "hello", "world", "run", "##ning", "is", "fun",
}

// newMicroModel returns a classifier with randomly initialised variables (seeded) and its tokenizer.
func newMicroModel(t *testing.T, backend compute.Backend, seed int64, maxLen int) (*Classifier, *Tokenizer) {
	t.Helper()
	tok, err := NewTokenizerFromVocab(microVocab, maxLen)
	if err != nil {
		t.Fatalf("NewTokenizerFromVocab: %v", err)
	}
	store := model.NewStore()
	if err := store.SetRNGStateFromSeed(seed); err != nil {
		t.Fatalf("SetRNGStateFromSeed: %v", err)
	}
	clf, err := NewClassifier(microConfig(tok.VocabSize()), store)
	if err != nil {
		t.Fatalf("NewClassifier: %v", err)
	}
	// Running the model once creates and initialises every variable.
	logitsOnce(t, backend, clf, tok.EncodeBatch([]string{"the movie"}), false)
	return clf, tok
}

// trainExec returns a training step of clf (ids, mask, types, labels -> mean cross-entropy,
// then opt's update), dropout on; onGraph, when not nil, sees the graph it builds.
func trainExec(t *testing.T, backend compute.Backend, clf *Classifier, opt optimizer.Interface, onGraph func(*Graph)) *model.Exec {
	t.Helper()
	step, err := model.NewExec(backend, clf.Store(), func(s *model.Scope, ids, mask, types, labels *Node) *Node {
		g := ids.Graph()
		if onGraph != nil {
			onGraph(g)
		}
		s.Store().SetTraining(g, true)
		logits := clf.Logits(s, []*Node{ids, mask, types})
		l := ReduceAllMean(loss.SparseCategoricalCrossEntropyLogits([]*Node{InsertAxes(labels, -1)}, []*Node{logits}))
		opt.UpdateGraph(s, g, l)
		return l
	})
	if err != nil {
		t.Fatal(err)
	}
	return step
}
