package accelerator

import (
	"flag"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/checkpoint"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/bert"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// zero1Result is one process's run of a sharded-equivalence case.
type zero1Result struct {
	Losses []float64
	Params map[string][]float32
	// DeviceBytes is what this process's devices hold of variables and optimizer state, device
	// by device, measured (Job.ResidentBytes), and DeviceStates the optimizer state's part;
	// Weights, Grads and States split device 0's bytes (all of the unsharded 1-device run's).
	DeviceBytes, DeviceStates []int64
	Weights, Grads, States    int64
}

// zero1Case is a model the sharded tests train at global batch 8, with Adam.
type zero1Case struct {
	name    string
	devices []int // devices per process of the loopback test's 2 processes
	updates *int  // optimizer updates (2 batches each)
	run     func(a *Accelerator, steps int, opts ...PrepareOption) (zero1Result, error)
}

// zero1Opts are the options of the sharded equivalence tests: clipping (at a norm the toy
// gradients exceed) and accumulation over 2 batches.
func zero1Opts() []PrepareOption {
	return []PrepareOption{WithClipGradNorm(0.5), WithGradientAccumulation(2)}
}

func zero1Adam() optimizer.Interface { return optimizer.Adam().LearningRate(0.01).Done() }

var zero1Cases = []zero1Case{
	{"mlp", []int{2, 1}, new(30), func(a *Accelerator, steps int, opts ...PrepareOption) (zero1Result, error) {
		x, y := toyData(48)
		return zero1Train(a, model.NewStore(), &fixedSource{x: x, y: y, batch: 8 / a.NumReplicas()}, func(s *model.Scope, b GraphBatch) *Node {
			lv := CrossEntropy(mlpLogits(s, b.Inputs[0]), b.Labels, b.Mask)
			a.Backward(s, lv)
			return lv
		}, steps, opts...)
	}},
	{"bert", []int{2}, flag.Int("zero1.bert_updates", 10, "TestZero1MatchesUnsharded: the tiny BERT's updates (30 by hand)"),
		zero1Bert(func(c *bert.Config) { c.HiddenSize, c.IntermediateSize, c.MaxPositionEmbeddings = 16, 32, 8 })},
}

// zero1Bert is the run of a BERT classifier of bert.TinyConfig(40) changed by change, without
// dropout (it differs per process), on rows of 8 tokens.
func zero1Bert(change func(*bert.Config)) func(a *Accelerator, steps int, opts ...PrepareOption) (zero1Result, error) {
	return func(a *Accelerator, steps int, opts ...PrepareOption) (zero1Result, error) {
		cfg := bert.TinyConfig(40)
		change(&cfg)
		cfg.HiddenDropoutProb, cfg.AttentionProbsDropoutProb = 0, 0
		clf, err := bert.NewClassifier(cfg, model.NewStore())
		if err != nil {
			return zero1Result{}, err
		}
		src, err := data.NewLoader[tokenRow](tokenRows(32, 8, 40), data.LoaderConfig[tokenRow]{BatchSize: 8 / a.NumReplicas(), Collate: collateTokenRows})
		if err != nil {
			return zero1Result{}, err
		}
		return zero1Train(a, clf.Store(), src, func(s *model.Scope, b GraphBatch) *Node {
			lv := CrossEntropy(clf.Logits(s, b.Inputs), b.Labels, b.Mask)
			a.Backward(s, lv)
			return lv
		}, steps, opts...)
	}
}

// zero1Train trains fn with Adam for steps batches and returns the losses, the trainable
// variables and the bytes held per device, measured during the next update (steps must be a
// whole number of updates).
func zero1Train(a *Accelerator, store *model.Store, src data.Source, fn StepFn, steps int, opts ...PrepareOption) (zero1Result, error) {
	// One batch more, before the bytes are measured: the first batch of the next update only
	// accumulates (the variables stay), and it puts the weights back on the devices. Right
	// after an update under zero1 over processes the new weights are host tensors (the
	// all-gather is on the host) until the next step sends them, and would count nowhere.
	job, losses, err := trainSteps(a, store, zero1Adam(), src, fn, steps+1, opts...)
	if err != nil {
		return zero1Result{}, err
	}
	res := zero1Result{Losses: losses[:steps]}
	if res.Params, err = trainableValues(store); err != nil {
		return zero1Result{}, err
	}
	res.DeviceBytes, res.DeviceStates, res.Weights, res.Grads, res.States, err = deviceBytes(job)
	return res, err
}

// deviceBytes measures what the job's variables and optimizer state hold on each of this
// process's devices (Job.ResidentBytes: the sizes of the PJRT buffers, the sharded state's
// slices on the device they live on), in total and of optimizer state, and the bytes of
// weights, gradient accumulators and other state on device 0.
func deviceBytes(job *Job) (perDevice, states []int64, weights, grads, state0 int64, err error) {
	rb, err := job.ResidentBytes()
	if err != nil {
		return nil, nil, 0, 0, 0, err
	}
	for _, r := range rb {
		perDevice = append(perDevice, r.Total())
		states = append(states, r.OptimizerState)
	}
	return perDevice, states, rb[0].Weights, rb[0].Gradients, rb[0].OptimizerState, nil
}

// tokenRow is a tiny sequence-classification example.
type tokenRow struct {
	ids   []int32
	label int32
}

// tokenRows makes n deterministic rows of length l over a vocabulary of vocab tokens, whose
// label depends on the tokens.
func tokenRows(n, l, vocab int) data.Slice[tokenRow] {
	rows := make(data.Slice[tokenRow], n)
	for i := range rows {
		ids := make([]int32, l)
		for k := range ids {
			ids[k] = int32(5 + (i*7+k*11)%(vocab-5))
		}
		rows[i] = tokenRow{ids: ids, label: ids[1] % 2}
	}
	return rows
}

func collateTokenRows(b []tokenRow) ([]*tensors.Tensor, *tensors.Tensor, error) {
	ids, mask, labels := make([][]int32, len(b)), make([][]int32, len(b)), make([]int32, len(b))
	for i, r := range b {
		ids[i], labels[i] = r.ids, r.label
		mask[i] = make([]int32, len(r.ids))
		for k := range mask[i] {
			mask[i][k] = 1
		}
	}
	return []*tensors.Tensor{tensors.FromValue(ids), tensors.FromValue(mask)}, tensors.FromValue(labels), nil
}

// zero1Worst compares a sharded run's results with the reference: the largest loss and
// variable differences, and the largest difference of any rank's variables from rank 0's.
func zero1Worst(ref zero1Result, res []zero1Result) (loss, param, ranks float64) {
	for _, got := range res {
		for i := range ref.Losses {
			loss = math.Max(loss, math.Abs(got.Losses[i]-ref.Losses[i]))
		}
		for name, p := range got.Params {
			param = math.Max(param, maxDiff(p, ref.Params[name]))
			ranks = math.Max(ranks, maxDiff(p, res[0].Params[name]))
		}
	}
	return loss, param, ranks
}

// TestZero1MatchesUnsharded: Config.Sharding "zero1" over 2 processes (loopback goroutines
// standing in for MPI) of 2 devices (and of 1 for the MLP) trains the MLP (30 updates) and a
// tiny BERT (10 updates; 30 with -zero1.bert_updates 30) with Adam, clipping and accumulation
// over 2 batches to the losses and variables of one unsharded process on one device; every
// rank ends with the same variables, bit for bit. On 2 x 2, the bytes of variables and
// optimizer state on each device, measured by Job.ResidentBytes (the PJRT buffers, the
// sharded state's slices included), are at most (weights + gradients + state / 2) x 1.05 of
// the unsharded run's, and the ranks' devices together hold at least its optimizer state.
func TestZero1MatchesUnsharded(t *testing.T) {
	t.Parallel()
	for _, c := range zero1Cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "bert" {
				testutil.Long(t, "zero1 on the tiny BERT (tier 1: the MLP case, the same checks and the bytes on 2 x 2)")
			}
			batches := 2 * *c.updates
			ref, err := c.run(newXLA(t, 1), batches, zero1Opts()...)
			if err != nil {
				t.Fatal(err)
			}
			for _, devices := range c.devices {
				res := runProcessesConfig(t, 2, devices, func(cfg *Config) { cfg.Sharding = "zero1" }, nil,
					func(a *Accelerator) (zero1Result, error) { return c.run(a, batches, zero1Opts()...) })
				loss, param, ranks := zero1Worst(ref, res)
				if loss > equivTol || param > equivTol {
					t.Errorf("zero1 2x%d: max |loss diff| %g, max |param diff| %g from unsharded 1x1 (tolerance %g)", devices, loss, param, equivTol)
				}
				if ranks != 0 {
					t.Errorf("zero1 2x%d: the ranks' variables differ by up to %g; want identical", devices, ranks)
				}
				t.Logf("zero1 2x%d, %d updates: max |loss diff| %.2g, max |param diff| %.2g from unsharded 1x1; ranks identical",
					devices, batches/2, loss, param)
				if devices != 2 {
					continue
				}
				zero1CheckBytes(t, "zero1 2x2", ref, res)
			}
		})
	}
}

// zero1CheckBytes checks the bytes measured on each device of each rank of a zero1 run over 2
// processes against the unsharded 1-device run's weights W, gradient accumulators G and
// state S: at most (W + G + S/2) x 1.05 on every device, and at least S held by the ranks'
// devices together (each rank its slices; the counters and the random state on every device),
// so that a count that misses the sharded state fails.
func zero1CheckBytes(t testing.TB, name string, ref zero1Result, res []zero1Result) {
	t.Helper()
	const mib = 1 << 20
	bound := float64(ref.Weights+ref.Grads+ref.States/2) * 1.05
	var held int64
	for r, got := range res {
		for d, b := range got.DeviceBytes {
			if float64(b) > bound {
				t.Errorf("%s: rank %d device %d holds %d bytes; want at most (weights %d + gradients %d + state %d / 2) x 1.05 = %.0f",
					name, r, d, b, ref.Weights, ref.Grads, ref.States, bound)
			}
		}
		for _, b := range got.DeviceStates {
			held += b
		}
	}
	if held < ref.States {
		t.Errorf("%s: the ranks' devices hold %d bytes of optimizer state together, less than the unsharded run's %d: "+
			"Job.ResidentBytes misses the sharded state", name, held, ref.States)
	}
	t.Logf("%s measured bytes per device: rank 0 %v (%.2f MiB most; device 0: weights %d + gradients %d + state %d), rank 1 %v; "+
		"unsharded 1x1: weights %d + gradients %d + state %d = %d (%.2f MiB); bound (W+G+S/2)x1.05 = %.0f (%.2f MiB)",
		name, res[0].DeviceBytes, float64(slices.Max(res[0].DeviceBytes))/mib, res[0].Weights, res[0].Grads, res[0].States, res[1].DeviceBytes,
		ref.Weights, ref.Grads, ref.States, ref.Weights+ref.Grads+ref.States, float64(ref.Weights+ref.Grads+ref.States)/mib, bound, bound/mib)
}

// zero1Checkpoint trains the MLP for batches global batches of 8 (Adam, clipping,
// accumulation over 2), starting from the checkpoint at from when it is not empty, and
// saves the result as step `save` in dir when that is not empty. It returns the losses and
// the trainable variables.
func zero1Checkpoint(a *Accelerator, from, dir string, save int64, batches int) (zero1Result, error) {
	store := model.NewStore()
	if from != "" {
		m, err := checkpoint.NewManager(filepath.Dir(from), checkpoint.Options{Processes: a, Logf: func(string, ...any) {}})
		if err == nil {
			err = m.Load(from, &checkpoint.State{Store: store})
		}
		if err != nil {
			return zero1Result{}, err
		}
	}
	x, y := toyData(48) // 6 global batches an epoch: every epoch is the same
	_, losses, err := trainSteps(a, store, zero1Adam(), &fixedSource{x: x, y: y, batch: 8 / a.NumReplicas()},
		func(s *model.Scope, b GraphBatch) *Node {
			lv := CrossEntropy(mlpLogits(s, b.Inputs[0]), b.Labels, b.Mask)
			a.Backward(s, lv)
			return lv
		}, batches, zero1Opts()...)
	if err != nil {
		return zero1Result{}, err
	}
	res := zero1Result{Losses: losses}
	if res.Params, err = trainableValues(store); err != nil {
		return zero1Result{}, err
	}
	if dir != "" {
		m, err := checkpoint.NewManager(dir, checkpoint.Options{Processes: a, Logf: func(string, ...any) {}})
		if err == nil {
			st := &checkpoint.State{Store: store, Progress: checkpoint.Progress{Step: save}}
			if zero1SaveAsync {
				if _, err = m.SaveAsync(st); err == nil {
					err = m.Wait()
				}
			} else {
				_, err = m.Save(st)
			}
		}
		if err != nil {
			return zero1Result{}, err
		}
	}
	return res, nil
}

// zero1SaveAsync makes zero1Checkpoint save with SaveAsync and Wait instead of Save.
var zero1SaveAsync bool

// TestZero1SaveAsyncWholeState: an asynchronous save under zero1 on 2 processes writes the
// whole optimizer state too: the same variables, shapes and values as one unsharded process's
// synchronous save after the same 3 updates.
func TestZero1SaveAsyncWholeState(t *testing.T) {
	t.Parallel()
	const half = 6 // batches: 3 updates
	dir := t.TempDir()
	if _, err := zero1Checkpoint(newXLA(t, 1), "", filepath.Join(dir, "plain"), 3, half); err != nil {
		t.Fatal(err)
	}
	zero1SaveAsync = true
	defer func() { zero1SaveAsync = false }()
	runProcessesConfig(t, 2, 1, func(cfg *Config) { cfg.Sharding = "zero1" }, nil, func(a *Accelerator) (zero1Result, error) {
		return zero1Checkpoint(a, "", filepath.Join(dir, "async"), 3, half)
	})
	plain := checkpointValues(t, filepath.Join(dir, "plain", "ckpt-000000003"))
	async := checkpointValues(t, filepath.Join(dir, "async", "ckpt-000000003"))
	worst := 0.0
	for path, want := range plain {
		got := async[path]
		if got == nil || !got.Shape().Equal(want.Shape()) {
			t.Errorf("zero1 asynchronous checkpoint: %s is %v; the unsharded one has %s", path, got, want.Shape())
			continue
		}
		if want.DType() == got.DType() && want.DType().String() == "Float32" {
			worst = math.Max(worst, maxDiff(tensors.MustCopyFlatData[float32](got), tensors.MustCopyFlatData[float32](want)))
		}
	}
	if len(async) != len(plain) || worst > equivTol {
		t.Errorf("zero1 asynchronous checkpoint: %d variables, max |diff| %g from the unsharded one's %d", len(async), worst, len(plain))
	}
	t.Logf("zero1 SaveAsync (2 processes) vs unsharded Save: %d variables, max |diff| %.2g", len(plain), worst)
}

// checkpointValues loads the checkpoint at path into a new Store and returns every variable
// but the random state, flat, with its shape.
func checkpointValues(t *testing.T, path string) map[string]*tensors.Tensor {
	t.Helper()
	store := model.NewStore()
	m, err := checkpoint.NewManager(filepath.Dir(path), checkpoint.Options{Logf: func(string, ...any) {}})
	if err == nil {
		err = m.Load(path, &checkpoint.State{Store: store})
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*tensors.Tensor{}
	for v := range store.IterVariables() {
		if v.Path() != model.JoinPath("/", model.RNGStateVariableName) {
			out[v.Path()] = v.MustValue()
		}
	}
	return out
}

// TestZero1CheckpointAnyTopology: a checkpoint saved under zero1 on 2 processes holds the
// whole optimizer state in the unsharded format (the same variables, shapes and values as
// one unsharded process's after the same 3 updates), loads on 1 unsharded process, and an
// unsharded checkpoint loads under zero1 on 2 processes: both continue 3 more updates to the
// losses and variables of the run that never stopped.
func TestZero1CheckpointAnyTopology(t *testing.T) {
	t.Parallel()
	const half = 6 // batches: 3 updates
	dir := t.TempDir()
	ref, err := zero1Checkpoint(newXLA(t, 1), "", "", 0, 2*half)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zero1Checkpoint(newXLA(t, 1), "", filepath.Join(dir, "plain"), 3, half); err != nil {
		t.Fatal(err)
	}
	zero1 := func(cfg *Config) { cfg.Sharding = "zero1" }
	runProcessesConfig(t, 2, 1, zero1, nil, func(a *Accelerator) (zero1Result, error) {
		return zero1Checkpoint(a, "", filepath.Join(dir, "zero1"), 3, half)
	})
	plainCkpt, zeroCkpt := filepath.Join(dir, "plain", "ckpt-000000003"), filepath.Join(dir, "zero1", "ckpt-000000003")

	plain, sharded := checkpointValues(t, plainCkpt), checkpointValues(t, zeroCkpt)
	worst, moments := 0.0, 0
	for path, want := range plain {
		got := sharded[path]
		if got == nil || !got.Shape().Equal(want.Shape()) {
			t.Errorf("zero1 checkpoint: %s is %v; the unsharded one has %s", path, got, want.Shape())
			continue
		}
		if strings.HasSuffix(path, "_moment") {
			moments++
		}
		if want.DType() == got.DType() && want.DType().String() == "Float32" {
			worst = math.Max(worst, maxDiff(tensors.MustCopyFlatData[float32](got), tensors.MustCopyFlatData[float32](want)))
		}
	}
	if len(sharded) != len(plain) || moments == 0 || worst > equivTol {
		t.Errorf("zero1 checkpoint: %d variables (%d Adam moments), max |diff| %g from the unsharded one's %d (tolerance %g)",
			len(sharded), moments, worst, len(plain), equivTol)
	}
	t.Logf("zero1 checkpoint (2 processes) vs unsharded (1 process) after 3 updates: %d variables, %d of them Adam moments, same shapes, max |diff| %.2g",
		len(plain), moments, worst)

	check := func(what string, res []zero1Result) {
		t.Helper()
		tail := zero1Result{Losses: ref.Losses[half:], Params: ref.Params}
		loss, param, ranks := zero1Worst(tail, res)
		if loss > equivTol || param > equivTol || ranks != 0 {
			t.Errorf("%s: max |loss diff| %g, max |param diff| %g from the run that never stopped, ranks differ by %g",
				what, loss, param, ranks)
		}
		t.Logf("%s, 3 more updates: max |loss diff| %.2g, max |param diff| %.2g from the run that never stopped", what, loss, param)
	}
	res, err := zero1Checkpoint(newXLA(t, 1), zeroCkpt, "", 0, half)
	if err != nil {
		t.Fatal(err)
	}
	check("zero1 2x1 checkpoint resumed unsharded on 1x1", []zero1Result{res})
	check("unsharded 1x1 checkpoint resumed under zero1 on 2x1", runProcessesConfig(t, 2, 1, zero1, nil,
		func(a *Accelerator) (zero1Result, error) { return zero1Checkpoint(a, plainCkpt, "", 0, half) }))
}

// TestZero1RefusesVerify: Config.Verify recomputes the update on rank 0 from the whole
// optimizer state, which zero1 does not keep there: Prepare says so on every process instead
// of reporting a false difference later.
func TestZero1RefusesVerify(t *testing.T) {
	t.Parallel()
	errs := runProcessesConfig(t, 2, 1, func(c *Config) { c.Sharding, c.Verify = "zero1", 1 }, nil,
		func(a *Accelerator) (error, error) {
			_, err := a.Prepare(model.NewStore(), zero1Adam(), nil)
			return err, nil
		})
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "Verify") || !strings.Contains(err.Error(), `"zero1"`) {
			t.Errorf("rank %d: Prepare returned %v; want an error naming Verify and zero1", r, err)
		}
	}
}

// BenchmarkZero1BertBaseMemory prints the bytes of variables and optimizer state on each
// device of BERT-base widths with 2 layers (hidden 768, 12 heads, intermediate 3072, vocabulary
// 30522; Adam, clipping, accumulation over 2, 2 updates) unsharded on 1 device and under zero1
// on 2 processes x 2 devices (loopback), measured (Job.ResidentBytes), and fails as
// zero1CheckBytes says. By hand (needs about 8 GB free):
//
//	go test ./accelerator -run '^$' -bench Zero1BertBaseMemory -benchtime 1x
//
// With -zero1.bert_layers 12 it is the full BERT-base (its process peaks near 24 GB resident).
var zero1BertLayers = flag.Int("zero1.bert_layers", 2, "BenchmarkZero1BertBaseMemory: encoder layers (12: the full BERT-base)")

func BenchmarkZero1BertBaseMemory(b *testing.B) {
	run := zero1Bert(func(c *bert.Config) {
		*c = bert.TinyConfig(30522)
		c.HiddenSize, c.NumAttentionHeads, c.IntermediateSize, c.MaxPositionEmbeddings = 768, 12, 3072, 512
		c.NumHiddenLayers = *zero1BertLayers
	})
	ref, err := run(newXLA(b, 1), 4, zero1Opts()...)
	if err != nil {
		b.Fatal(err)
	}
	res := runProcessesConfig(b, 2, 2, func(c *Config) { c.Sharding = "zero1" }, nil,
		func(a *Accelerator) (zero1Result, error) { return run(a, 4, zero1Opts()...) })
	name := fmt.Sprintf("BERT-base widths, %d layers", *zero1BertLayers)
	b.Logf("%s: %.1f M parameters", name, float64(ref.Weights)/4e6)
	zero1CheckBytes(b, "zero1 2x2 "+name, ref, res)
}
