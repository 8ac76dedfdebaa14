// Package familytest holds what the parity tests of the model families (models/modernbert,
// models/deberta) share: the backends they run on, the fixtures' records of transformers'
// outputs, copying a Hugging Face folder with its tensors or config.json edited and checking
// the load errors, comparing a family's tensor list with a checkpoint's, the SGD training
// run checked against PyTorch's losses, and the token-classification checks (TokenKit: the
// token_fixtures.json of scripts/make_token_fixtures.py, the save and transformers round
// trip, the head-mismatch error). It is imported by tests only.
package familytest

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	_ "github.com/gomlx/compute/gobackend" // the pure-Go backend
	"github.com/gomlx/go-xla/compute/xla"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// goBackend is the pure-Go backend, created once per test binary.
var goBackend = sync.OnceValues(func() (compute.Backend, error) { return compute.NewWithConfig("go:ops_sequential") })

// xlaBackend is the XLA CPU backend, created once per test binary.
var xlaBackend = sync.OnceValues(func() (compute.Backend, error) {
	_ = envvar.NoAutoInstall.Set("1")
	return xla.New(testutil.FindCPUPlugin())
})

// Go returns the pure-Go backend.
func Go(t testing.TB) compute.Backend {
	t.Helper()
	b, err := goBackend()
	if err != nil {
		t.Fatalf("creating the pure-Go backend: %v", err)
	}
	return b
}

// XLA returns the XLA CPU backend; without the plugin the test is skipped loudly (a failure
// under CI).
func XLA(t testing.TB) compute.Backend {
	t.Helper()
	testutil.CPUPlugin(t)
	b, err := xlaBackend()
	if err != nil {
		t.Fatalf("creating the XLA CPU backend: %v", err)
	}
	return b
}

// Backend is a backend and the name the test logs give it.
type Backend struct {
	Name    string
	Backend compute.Backend
}

// Backends returns the pure-Go backend and the XLA CPU one; without the XLA plugin only the
// pure-Go one, with a SKIPPING line in the log (a failure under CI).
func Backends(t testing.TB) []Backend {
	t.Helper()
	out := []Backend{{"go", Go(t)}}
	if testutil.FindCPUPlugin() == "" {
		if envvar.CI.Value() != "" {
			testutil.CPUPlugin(t) // fails under CI
		}
		t.Log("SKIPPING the XLA CPU half: no XLA CPU plugin (run `make deps`, and the test with GOACCEL_HOME=$PWD/.deps)")
		return out
	}
	return append(out, Backend{"xla-cpu", XLA(t)})
}

// Run is one input of a fixture with transformers' outputs on it, as the scripts write it:
// int32 [B, L] inputs, and the last hidden states and logits as base64 little-endian float32.
type Run struct {
	InputIDs      [][]int32 `json:"input_ids"`
	AttentionMask [][]int32 `json:"attention_mask"`
	TokenTypeIDs  [][]int32 `json:"token_type_ids"`
	HiddenShape   []int     `json:"hidden_shape"`
	HiddenB64     string    `json:"last_hidden_state_f32_b64"`
	LogitsShape   []int     `json:"logits_shape"`
	LogitsB64     string    `json:"logits_f32_b64"`
}

// Hidden decodes transformers' last hidden states.
func (r *Run) Hidden(t testing.TB) []float32 {
	return testutil.DecodeF32(t, "last_hidden_state", r.HiddenB64, r.HiddenShape)
}

// Logits decodes transformers' logits.
func (r *Run) Logits(t testing.TB) []float32 {
	return testutil.DecodeF32(t, "logits", r.LogitsB64, r.LogitsShape)
}

// Without is a CopyFolder edit that drops the tensor name.
func Without(name string) func([]safetensors.Named) []safetensors.Named {
	return func(l []safetensors.Named) []safetensors.Named {
		return slices.DeleteFunc(l, func(n safetensors.Named) bool { return n.Name == name })
	}
}

// Set is a CopyFolder edit of config.json that sets key to value.
func Set(key string, value any) func(map[string]any) {
	return func(doc map[string]any) { doc[key] = value }
}

// LoadCase is a folder's edits and what loading it must say: the words of the error, or
// nothing when the edited folder must load.
type LoadCase[O any] struct {
	What       string
	Edit       func([]safetensors.Named) []safetensors.Named
	EditConfig func(map[string]any)
	Opts       O
	Want       []string
}

// Case is a LoadCase: loading the folder edited by edit and editConfig (each nil: unchanged)
// with opts must fail with an error that has the words want, or succeed when want is empty.
func Case[O any](what string, edit func([]safetensors.Named) []safetensors.Named, editConfig func(map[string]any), opts O, want ...string) LoadCase[O] {
	return LoadCase[O]{What: what, Edit: edit, EditConfig: editConfig, Opts: opts, Want: want}
}

// CheckLoadErrors loads, for each case, folder src copied with the case's edits, with load,
// and checks the error against the case's words.
func CheckLoadErrors[O any](t *testing.T, src string, cases []LoadCase[O], load func(dir string, opts O) error) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.What, func(t *testing.T) {
			err := load(CopyFolder(t, src, c.Edit, c.EditConfig), c.Opts)
			if c.Want == nil {
				if err != nil {
					t.Fatalf("the folder does not load: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("loaded; want an error with %q", c.Want)
			}
			for _, w := range c.Want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// CopyFolder copies the config.json and model.safetensors of folder src into a temporary
// folder, passing the tensors through edit (nil: unchanged) and config.json through
// editConfig (nil: unchanged), and returns the new folder.
func CopyFolder(t testing.TB, src string, edit func([]safetensors.Named) []safetensors.Named, editConfig func(map[string]any)) string {
	t.Helper()
	dir := t.TempDir()
	contents, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if editConfig != nil {
		var doc map[string]any
		if err := json.Unmarshal(contents, &doc); err != nil {
			t.Fatal(err)
		}
		editConfig(doc)
		if contents, err = json.Marshal(doc); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), contents, 0o644); err != nil {
		t.Fatal(err)
	}
	list, meta, err := safetensors.ReadFile(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		list = edit(list)
	}
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), list, meta); err != nil {
		t.Fatal(err)
	}
	return dir
}

// CheckTensors fails the test unless tensors, given the folder's config.json, lists the
// tensors of its model.safetensors, name for name and shape for shape (in any order).
func CheckTensors(t testing.TB, dir string, tensors func(configPath string) ([]hf.TensorSpec, error)) {
	t.Helper()
	ours, err := tensors(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	var theirs []hf.TensorSpec
	for _, info := range st.Header().Tensors {
		theirs = append(theirs, hf.TensorSpec{Name: info.Name, Dims: info.Dims})
	}
	for _, l := range [][]hf.TensorSpec{ours, theirs} {
		sort.Slice(l, func(i, j int) bool { return l[i].Name < l[j].Name })
	}
	if !slices.EqualFunc(ours, theirs, func(a, b hf.TensorSpec) bool { return a.Name == b.Name && slices.Equal(a.Dims, b.Dims) }) {
		t.Errorf("tensors differ:\n ours   %v\n theirs %v", ours, theirs)
	}
}

// Matrix is rows as a [B, L] int32 tensor.
func Matrix(rows [][]int32) *tensors.Tensor {
	return tensors.FromFlatDataAndDimensions(slices.Concat(rows...), len(rows), len(rows[0]))
}

// TrainRun is a fixture's training record, as the scripts write it: plain SGD steps on
// labelled batches taken in turn, and PyTorch's mean cross-entropy of each step before its
// update.
type TrainRun struct {
	LearningRate float64 `json:"learning_rate"`
	Batches      []struct {
		InputIDs      [][]int32 `json:"input_ids"`
		AttentionMask [][]int32 `json:"attention_mask"`
		Labels        []int32   `json:"labels"`
	} `json:"batches"`
	Losses []float64 `json:"losses"`
}

// example is one labelled sequence of a training record.
type example struct {
	ids, mask []int32
	label     int32
}

// collate stacks examples of one length into [input_ids, attention_mask] and labels.
func collate(batch []example) ([]*tensors.Tensor, *tensors.Tensor, error) {
	ids, mask, labels := make([][]int32, len(batch)), make([][]int32, len(batch)), make([]int32, len(batch))
	for i, e := range batch {
		ids[i], mask[i], labels[i] = e.ids, e.mask, e.label
	}
	return []*tensors.Tensor{Matrix(ids), Matrix(mask)}, tensors.FromValue(labels), nil
}

// Check runs the record's SGD steps on clf the way users train (accelerator.New, Prepare,
// TrainStep, CrossEntropy, Backward, on one XLA CPU device; logits gets [input_ids,
// attention_mask]) and fails the test when a loss differs from PyTorch's by more than
// tolerance; transformers names the version in the log line. Without the XLA CPU plugin the
// test is skipped loudly (a failure under CI).
func (r *TrainRun) Check(t testing.TB, clf model.StoreProvider, logits func(s *model.Scope, inputs []*Node) *Node, tolerance float64, transformers string) {
	t.Helper()
	losses := r.run(t, clf, logits, r.sgd(), len(r.Losses), "no", nil)
	worst := r.compare(t, losses, tolerance, transformers)
	t.Logf("%d SGD steps (lr %g): losses %.4f -> %.4f, max abs diff from transformers %s %.3g",
		len(losses), r.LearningRate, losses[0], losses[len(losses)-1], transformers, worst)
}

// CheckMixed runs the record's SGD steps as Check does under the accelerator's mixed
// precision (precision "bf16" or "fp16": Prepare hands the compute dtype to clf's
// SetComputeDType) and fails the test when a loss differs from PyTorch's float32 one by more
// than tolerance relative to it (to at least 0.1: a loss near 0 is compared as if it were
// 0.1), or when every loss equals it (the half-precision products did not run).
func (r *TrainRun) CheckMixed(t testing.TB, clf model.StoreProvider, logits func(s *model.Scope, inputs []*Node) *Node, precision string, tolerance float64, transformers string) {
	t.Helper()
	losses := r.run(t, clf, logits, r.sgd(), len(r.Losses), precision, nil)
	worst, worstRel := 0.0, 0.0
	for i, want := range r.Losses {
		d := math.Abs(losses[i] - want)
		rel := d / max(math.Abs(want), 0.1)
		worst, worstRel = max(worst, d), max(worstRel, rel)
		if !(rel <= tolerance) {
			t.Errorf("step %d: loss %.6f in %s, transformers %s %.6f in float32 (diff %.3g, relative %.3g)", i+1, losses[i], precision, transformers, want, d, rel)
		}
	}
	if worst == 0 {
		t.Errorf("%s: every loss equals float32's: the products did not run in half precision", precision)
	}
	t.Logf("%d SGD steps in %s (lr %g): losses %.4f -> %.4f, max diff from transformers %s in float32 %.3g (relative %.3g)",
		len(losses), precision, r.LearningRate, losses[0], losses[len(losses)-1], transformers, worst, worstRel)
}

// compare fails the test for each loss further than tolerance from the record's and returns
// the largest difference.
func (r *TrainRun) compare(t testing.TB, losses []float64, tolerance float64, transformers string) float64 {
	t.Helper()
	worst := 0.0
	for i, want := range r.Losses {
		d := math.Abs(losses[i] - want)
		worst = max(worst, d)
		if d > tolerance {
			t.Errorf("step %d: loss %.6f, transformers %s %.6f (diff %.3g)", i+1, losses[i], transformers, want, d)
		}
	}
	return worst
}

// sgd is the record's optimizer: plain SGD at its learning rate.
func (r *TrainRun) sgd() optimizer.Interface {
	return optimizer.StochasticGradientDescent().WithLearningRate(r.LearningRate).WithDecay(false).Done()
}

// run trains clf for steps steps of opt on the record's batches, taken in turn, the way users
// train (accelerator.New, Prepare, TrainStep, CrossEntropy, Backward, on one XLA CPU device,
// with the accelerator's MixedPrecision precision), and returns each step's loss; done (when
// not nil) runs after the last step, while the variables' values are still on the
// accelerator's backend.
func (r *TrainRun) run(t testing.TB, clf model.StoreProvider, logits func(s *model.Scope, inputs []*Node) *Node, opt optimizer.Interface, steps int, precision string, done func()) []float64 {
	t.Helper()
	var examples data.Slice[example]
	size := len(r.Batches[0].Labels)
	for _, b := range r.Batches {
		if len(b.Labels) != size {
			t.Fatalf("the fixture's batches have %d and %d examples", size, len(b.Labels))
		}
		for i := range b.Labels {
			examples = append(examples, example{b.InputIDs[i], b.AttentionMask[i], b.Labels[i]})
		}
	}
	return trainSteps(t, 1, examples, size, collate, clf, func(s *model.Scope, b accelerator.GraphBatch) *Node { return logits(s, b.Inputs) },
		opt, steps, precision, done)
}

// trainSteps trains clf for steps steps of opt on examples in global batches of size, taken
// in turn, the way users train (accelerator.New, Prepare, TrainStep, CrossEntropy, Backward,
// on devices XLA CPU devices, with the accelerator's MixedPrecision precision), and returns each step's
// loss; done (when not nil) runs after the last step, while the variables' values are still
// on the accelerator's backend.
func trainSteps[E any](t testing.TB, devices int, examples data.Slice[E], size int, collate func([]E) ([]*tensors.Tensor, *tensors.Tensor, error),
	clf model.StoreProvider, logits func(s *model.Scope, b accelerator.GraphBatch) *Node, opt optimizer.Interface, steps int,
	precision string, done func()) []float64 {
	t.Helper()
	acc, err := accelerator.New(accelerator.Config{Backend: testutil.CPUPlugin(t), Devices: devices, Quiet: true, Seed: 1, MixedPrecision: precision})
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	loader, err := data.NewLoader(examples, data.LoaderConfig[E]{BatchSize: size / devices, Collate: collate})
	if err != nil {
		t.Fatal(err)
	}
	job, err := acc.Prepare(clf, opt, loader)
	if err != nil {
		t.Fatal(err)
	}
	step := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *Node {
		l := accelerator.CrossEntropy(logits(s, b), b.Labels, b.Mask)
		acc.Backward(s, l)
		return l
	})
	var losses []float64
	for len(losses) < steps {
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
			if losses = append(losses, v); len(losses) == steps {
				break
			}
		}
	}
	if done != nil {
		done()
	}
	return losses
}

// Replay runs the record's SGD steps on clf as Check does (accelerator.New, Prepare,
// TrainStep on one XLA CPU device, MixedPrecision "no") and returns the losses.
func (r *TrainRun) Replay(t testing.TB, clf model.StoreProvider, logits func(s *model.Scope, inputs []*Node) *Node) []float64 {
	t.Helper()
	return r.run(t, clf, logits, r.sgd(), len(r.Losses), "no", nil)
}

// Prefix is the record cut to its first n steps (all of them when it has fewer).
func (r *TrainRun) Prefix(n int) *TrainRun {
	c := *r
	c.Losses = r.Losses[:min(n, len(r.Losses))]
	return &c
}

// TrainingProducts builds clf's training graph once on backend (logits on one batch in
// training mode, their sum as a loss, its gradient with respect to every trainable float
// variable) and counts its matrix products: activation checkpointing's recompute adds
// some.
func TrainingProducts(t testing.TB, backend compute.Backend, clf model.StoreProvider, logits func(s *model.Scope, inputs []*Node) *Node, ids, mask [][]int32) int {
	t.Helper()
	count := 0
	exec, err := model.NewExec(backend, clf.Store(), func(s *model.Scope, ids, mask *Node) *Node {
		g := ids.Graph()
		s.Store().SetTraining(g, true)
		loss := ReduceAllSum(logits(s, []*Node{ids, mask}))
		var vars []*Node
		for v := range s.Store().IterVariables() {
			if v.Trainable && v.DType().IsFloat() {
				vars = append(vars, v.NodeValue(g))
			}
		}
		grads := Gradient(loss, vars...)
		for _, n := range g.Nodes() {
			if n.Type() == NodeTypeDotGeneral || n.Type() == NodeTypeFusedDense {
				count++
			}
		}
		return Add(loss, ReduceAllSum(grads[0]))
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.Call(Matrix(ids), Matrix(mask)); err != nil {
		t.Fatalf("building the training graph: %v", err)
	}
	return count
}

// CheckGradientCheckpointing replays the record (its first 6 steps in -short mode) on two
// classifiers from load, without and with gradient checkpointing (load sets the family's
// Config.GradientCheckpointing, and dropout in every layer so that the recompute must
// reproduce its random bits), and fails the test unless the losses agree within 1e-5 (float32
// summation order: the recompute is another XLA program, and the steps carry its rounding; a
// dropout mask drawn anew would move a loss by far more) and the checkpointed training graph
// has more matrix products than the plain one (the recompute is there). ids and mask are the
// batch the graphs are counted on.
func (r *TrainRun) CheckGradientCheckpointing(t *testing.T, load func(checkpoint bool) (model.StoreProvider, func(*model.Scope, []*Node) *Node), ids, mask [][]int32) {
	t.Helper()
	record := r
	if testing.Short() { // tier 1: 6 steps; make test-all: all of them
		record = r.Prefix(6)
	}
	run := func(checkpoint bool) ([]float64, int) {
		clf, logits := load(checkpoint) // a fresh classifier each time: the graphs run on two backends
		products := TrainingProducts(t, XLA(t), clf, logits, ids, mask)
		clf, logits = load(checkpoint)
		return record.Replay(t, clf, logits), products
	}
	plain, plainProducts := run(false)
	remat, rematProducts := run(true)
	t.Logf("plain losses %.6f, with checkpointing %.6f; matrix products %d and %d", plain, remat, plainProducts, rematProducts)
	if rematProducts <= plainProducts {
		t.Errorf("the checkpointed training graph has %d matrix products, the plain one %d: no recompute", rematProducts, plainProducts)
	}
	worst := 0.0
	for i := range plain {
		d := math.Abs(remat[i] - plain[i])
		worst = max(worst, d)
		if !(d <= 1e-5) {
			t.Errorf("step %d: loss %.7f with checkpointing, %.7f without (diff %.3g)", i+1, remat[i], plain[i], d)
		}
	}
	t.Logf("largest loss difference %.3g", worst)
}

// MixedClassifier is a family's classifier with its own mixed precision.
type MixedClassifier interface {
	model.StoreProvider
	SetComputeDType(dtypes.DType) error
}

// CheckMixedLogits checks clf's SetComputeDType on one padded batch (ids, mask) on backend:
// bfloat16 and float16 give logits within 5% of the float32 ones (relative to their largest
// magnitude) but not equal to them, the variables stay float32, a training graph builds, and
// an integer compute dtype is refused. clf is left in float32.
func CheckMixedLogits(t *testing.T, backend compute.Backend, clf MixedClassifier, logits func(s *model.Scope, inputs []*Node) *Node, ids, mask [][]int32) {
	t.Helper()
	run := func(train bool) []float32 {
		exec, err := model.NewExec(backend, clf.Store(), func(s *model.Scope, ids, mask *Node) *Node {
			s.Store().SetTraining(ids.Graph(), train)
			return logits(s, []*Node{ids, mask})
		})
		if err != nil {
			t.Fatal(err)
		}
		outs, err := exec.Call(Matrix(ids), Matrix(mask))
		if err != nil {
			t.Fatalf("running Logits: %v", err)
		}
		if outs[0].DType() != dtypes.Float32 {
			t.Errorf("logits are %s, want float32", outs[0].DType())
		}
		return tensors.MustCopyFlatData[float32](outs[0])
	}
	want := run(false)
	largest := 0.0
	for _, v := range want {
		largest = max(largest, math.Abs(float64(v)))
	}
	defer func() { _ = clf.SetComputeDType(dtypes.Float32) }()
	for _, dt := range []dtypes.DType{dtypes.BFloat16, dtypes.Float16} {
		if err := clf.SetComputeDType(dt); err != nil {
			t.Fatal(err)
		}
		d := testutil.MaxAbsDiff(t, dt.String(), run(false), want)
		t.Logf("%s logits: max abs diff to float32 = %.3g (logits up to %.3g)", dt, d, largest)
		if d == 0 || d > 0.05*largest {
			t.Errorf("%s logits differ from float32 by %g: want a small non-zero rounding difference", dt, d)
		}
		run(true)
		for v := range clf.Store().IterVariables() {
			if v.DType().IsFloat() && v.DType() != dtypes.Float32 { // the random state aside
				t.Errorf("variable %s is %s after a %s graph: variables must stay float32", v.Path(), v.DType(), dt)
			}
		}
	}
	if err := clf.SetComputeDType(dtypes.Int32); err == nil {
		t.Error("SetComputeDType(Int32) succeeded, want an error")
	}
}

// TokenFixtures is a package's testdata/token_fixtures.json, written by
// scripts/make_token_fixtures.py: the package's committed sequence-classifier checkpoints
// read by transformers' *ForTokenClassification, saved again, and its per-token logits.
type TokenFixtures struct {
	Transformers string                 `json:"transformers_version"`
	Models       map[string]*TokenModel `json:"models"`
}

// TokenModel is one checkpoint of a TokenFixtures: the folder it was read from, the class,
// config.json and tensor list that transformers saved (each tensor the folder's), and a
// padded batch with transformers' per-token logits [B, L, num_labels].
type TokenModel struct {
	Folder        string          `json:"folder"`
	Class         string          `json:"model_class"`
	Config        json.RawMessage `json:"config"`
	Tensors       [][]any         `json:"tensors"`
	InputIDs      [][]int32       `json:"input_ids"`
	AttentionMask [][]int32       `json:"attention_mask"`
	TokenTypeIDs  [][]int32       `json:"token_type_ids"`
	LogitsShape   []int           `json:"logits_shape"`
	LogitsB64     string          `json:"logits_f32_b64"`
}

// LoadTokenFixtures reads testdata/token_fixtures.json.
func LoadTokenFixtures(t testing.TB) *TokenFixtures {
	t.Helper()
	contents, err := os.ReadFile(filepath.Join("testdata", "token_fixtures.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f TokenFixtures
	if err := json.Unmarshal(contents, &f); err != nil {
		t.Fatalf("parsing testdata/token_fixtures.json: %v", err)
	}
	if len(f.Models) == 0 {
		t.Fatal("testdata/token_fixtures.json has no models")
	}
	return &f
}

// Logits decodes transformers' per-token logits.
func (m *TokenModel) Logits(t testing.TB) []float32 {
	return testutil.DecodeF32(t, "token logits", m.LogitsB64, m.LogitsShape)
}

// Specs are the tensors transformers saved, sorted by name.
func (m *TokenModel) Specs() []hf.TensorSpec {
	var specs []hf.TensorSpec
	for _, entry := range m.Tensors {
		name, _ := entry[0].(string)
		raw, _ := entry[1].([]any)
		dims := make([]int, len(raw))
		for i, d := range raw {
			dims[i] = int(d.(float64))
		}
		specs = append(specs, hf.TensorSpec{Name: name, Dims: dims})
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	return specs
}

// WriteFolder rebuilds the token checkpoint transformers saved: testdata/<Folder>'s tensors
// that it lists, and its config.json.
func (m *TokenModel) WriteFolder(t testing.TB) string {
	t.Helper()
	keep := map[string]bool{}
	for _, s := range m.Specs() {
		keep[s.Name] = true
	}
	dir := CopyFolder(t, filepath.Join("testdata", m.Folder), func(l []safetensors.Named) []safetensors.Named {
		return slices.DeleteFunc(l, func(n safetensors.Named) bool { return !keep[n.Name] })
	}, nil)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), m.Config, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// CheckTransformersTokenLogits loads the token classifier's folder dir with transformers'
// AutoModelForTokenClassification (eager attention, eval) in the Python that
// GOACCEL_TORCH_PYTHON names (with torch and transformers, outside the repository), and fails
// the test unless it builds class, with label1 as id2label["1"], and gives the per-token
// logits want of the inputs within tolerance; typeIDs may be nil. Without
// GOACCEL_TORCH_PYTHON it skips the test loudly.
func CheckTransformersTokenLogits(t testing.TB, dir, class, label1 string, want []float32, tolerance float64, ids, mask, typeIDs [][]int32) {
	t.Helper()
	python := envvar.TorchPython.Value()
	if python == "" {
		testutil.TorchPython(t, "the transformers half")
	}
	in, _ := json.Marshal(map[string]any{"input_ids": ids, "attention_mask": mask, "token_type_ids": typeIDs})
	const script = `
import json, sys, torch
from transformers import AutoModelForTokenClassification
m = AutoModelForTokenClassification.from_pretrained(sys.argv[1], attn_implementation="eager").eval()
feed = {k: torch.tensor(v) for k, v in json.loads(sys.argv[2]).items() if v is not None}
with torch.no_grad():
    print(json.dumps({"class": type(m).__name__, "id2label": m.config.id2label, "logits": m(**feed).logits.flatten().tolist()}))
`
	var res struct {
		Class    string            `json:"class"`
		ID2Label map[string]string `json:"id2label"`
		Logits   []float32         `json:"logits"`
	}
	testutil.RunPythonJSON(t, "transformers loading "+dir, python, script, &res, dir, string(in))
	if res.Class != class || res.ID2Label["1"] != label1 {
		t.Errorf("transformers read %s with id2label %v, want %s with %q as class 1", res.Class, res.ID2Label, class, label1)
	}
	d := testutil.MaxAbsDiff(t, "logits", res.Logits, want)
	t.Logf("transformers loaded the saved folder as %s: per-token logits max abs diff %.3g", res.Class, d)
	if float64(d) > tolerance {
		t.Errorf("transformers' logits differ by %g, want <= %g", d, tolerance)
	}
}

// CheckHeadMismatch fails the test unless load, with LoadHead and the head given, refuses
// both the token folder tokenDir for a sequence classifier and the sequence folder seqDir for
// a token classifier, with an error naming the folder's class (prefix + the head's suffix)
// and both heads.
func CheckHeadMismatch(t testing.TB, prefix, tokenDir, seqDir string, load func(dir string, head hf.Head) error) {
	t.Helper()
	for _, c := range []struct {
		dir         string
		named, head hf.Head
	}{{tokenDir, hf.TokenClassification, hf.SequenceClassification}, {seqDir, hf.SequenceClassification, hf.TokenClassification}} {
		err := load(c.dir, c.head)
		name := func(h hf.Head) string { return strings.TrimPrefix(h.String(), "For") }
		for _, w := range []string{prefix + c.named.String(), "a " + name(c.named) + " checkpoint", "is " + name(c.head)} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("LoadHead with Head %s on %s: error %v, want one saying %q", name(c.head), c.dir, err, w)
			}
		}
	}
}

// CheckTokenConfig fails the test unless the config.json of folder dir names the one
// architecture class and, as transformers' token classifiers write it, no problem_type.
func CheckTokenConfig(t testing.TB, dir, class string) {
	t.Helper()
	contents, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(contents, &doc); err != nil {
		t.Fatal(err)
	}
	if archs, _ := doc["architectures"].([]any); len(archs) != 1 || archs[0] != class || doc["problem_type"] != nil {
		t.Errorf("%s: architectures %v problem_type %v, want [%s] and none", filepath.Join(dir, "config.json"), doc["architectures"], doc["problem_type"], class)
	}
}

// TokenKit is what the token-classification tests of a family need to know of it: how to
// load a folder, run Logits and save, for its classifier type C.
type TokenKit[C any] struct {
	// Prefix is the family's prefix of transformers' classes, "ModernBert".
	Prefix string
	// Tolerance is the largest max-abs difference accepted from transformers' logits.
	Tolerance float64
	// Load loads folder dir with LoadHead and the head given.
	Load func(dir string, head hf.Head) (C, error)
	// Config is the configuration of a classifier: its head and tensors.
	Config func(clf C) (hf.Head, []hf.TensorSpec)
	// Logits runs the classifier's Logits once (inference) on m's batch, flattened.
	Logits func(t *testing.T, backend compute.Backend, clf C, m *TokenModel) []float32
	// Save sets the class names of the classifier and saves it into dir.
	Save func(dir string, clf C, labels []string) error
}

// CheckParity loads each model of f with its token head and checks its tensors (those
// transformers saved) and its per-token logits (transformers', within Tolerance) on the
// pure-Go and the XLA CPU backends.
func (k TokenKit[C]) CheckParity(t *testing.T, f *TokenFixtures) {
	t.Helper()
	for name, m := range f.Models {
		dir := m.WriteFolder(t)
		for _, b := range Backends(t) {
			t.Run(name+"/"+b.Name, func(t *testing.T) {
				clf, err := k.Load(dir, hf.TokenClassification)
				if err != nil {
					t.Fatal(err)
				}
				head, specs := k.Config(clf)
				sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
				if theirs := m.Specs(); head != hf.TokenClassification ||
					!slices.EqualFunc(specs, theirs, func(a, b hf.TensorSpec) bool { return a.Name == b.Name && slices.Equal(a.Dims, b.Dims) }) {
					t.Errorf("head %v, tensors differ from %s's:\n ours   %v\n theirs %v", head, m.Class, specs, theirs)
				}
				want := m.Logits(t)
				got := k.Logits(t, b.Backend, clf, m)
				if len(got) != len(want) {
					t.Fatalf("%d logits, want %d (%v)", len(got), len(want), m.LogitsShape)
				}
				d := testutil.MaxAbsDiff(t, "logits", got, want)
				t.Logf("%s token classifier on %s vs transformers %s: per-token logits %v max abs diff %.3g", name, b.Name, f.Transformers, m.LogitsShape, d)
				if d > k.Tolerance {
					t.Errorf("max abs diff %g, want <= %g", d, k.Tolerance)
				}
			})
		}
	}
}

// CheckSave loads model m with its token head, names its classes labels and saves it: the
// folder must say the family's *ForTokenClassification (no problem_type), load back with the
// same logits and, with GOACCEL_TORCH_PYTHON, give transformers' AutoModelForTokenClassification
// the same logits within Tolerance (CheckTransformersTokenLogits).
func (k TokenKit[C]) CheckSave(t *testing.T, m *TokenModel, labels []string) {
	t.Helper()
	clf, err := k.Load(m.WriteFolder(t), hf.TokenClassification)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "saved")
	if err := k.Save(out, clf, labels); err != nil {
		t.Fatal(err)
	}
	class := k.Prefix + hf.TokenClassification.String()
	CheckTokenConfig(t, out, class)
	back, err := k.Load(out, hf.TokenClassification)
	if err != nil {
		t.Fatalf("loading the saved folder: %v", err)
	}
	want := k.Logits(t, Go(t), clf, m)
	if got := k.Logits(t, Go(t), back, m); testutil.MaxAbsDiff(t, "logits", got, want) != 0 {
		t.Error("the saved folder gives other logits")
	}
	CheckTransformersTokenLogits(t, out, class, labels[1], want, k.Tolerance, m.InputIDs, m.AttentionMask, m.TokenTypeIDs)
}
