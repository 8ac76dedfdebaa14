package checkpoint

import (
	"fmt"
	"math"
	"os"
	"sync"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/distributed"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/go-xla/compute/xla"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/core/tensors/dtensor"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// xlaPluginEnv overrides where the XLA CPU PJRT plugin is looked for.
const xlaPluginEnv = "GOACCEL_XLA_CPU_PLUGIN"

var (
	xlaOnce    sync.Once
	xlaBackend compute.Backend
	xlaErr     error
)

// requireXLA returns the XLA CPU backend with at least 4 devices. Without the plugin the test is
// skipped, loudly; when the CI environment variable is set it fails instead (see
// testutil.CPUPlugin).
func requireXLA(t *testing.T) compute.Backend {
	t.Helper()
	plugin := testutil.CPUPlugin(t, os.Getenv(xlaPluginEnv))
	xlaOnce.Do(func() {
		xla.EnableAutoInstall(false)
		xlaBackend, xlaErr = xla.New(plugin)
		if xlaErr == nil && xlaBackend.NumDevices() < 4 {
			xlaErr = fmt.Errorf("XLA CPU backend has %d devices, the test needs 4", xlaBackend.NumDevices())
		}
	})
	if xlaErr != nil {
		t.Fatalf("the device-count portability test needs the XLA CPU plugin %s with 4 devices: %v", plugin, xlaErr)
	}
	return xlaBackend
}

// trainer runs Adam steps of a small regression model on 1 or 4 devices.
type trainer struct {
	store *model.Store
	exec  *model.Exec
	batch *distributed.ShardingSpec // Input sharding, nil on one device.
}

func newTrainer(t *testing.T, backend compute.Backend, store *model.Store, devices int) *trainer {
	t.Helper()
	opt := optimizer.Adam().LearningRate(0.01).Done()
	exec, err := model.NewExec(backend, store, func(scope *model.Scope, x, y *Node) *Node {
		h := Tanh(layers.DenseWithBias(scope.In("hidden"), x, 8))
		pred := layers.DenseWithBias(scope.In("out"), h, 1)
		loss := ReduceAllMean(Square(Sub(pred, y)))
		opt.UpdateGraph(scope, x.Graph(), loss)
		return loss
	})
	if err != nil {
		t.Fatal(err)
	}
	if devices > 1 {
		mesh, err := distributed.NewDeviceMesh([]int{devices}, []string{"data"})
		if err != nil {
			t.Fatal(err)
		}
		batch, err := distributed.BuildSpec(mesh).S("data").R().Done()
		if err != nil {
			t.Fatal(err)
		}
		replicated := distributed.NewReplicatedShardingSpec(mesh)
		exec = exec.AutoSharding(mesh).WithInputShardingSpecs(batch, batch).WithOutputShardingSpecs(replicated)
		if err := exec.SetDefaultShardingSpec(replicated); err != nil {
			t.Fatal(err)
		}
		return &trainer{store: store, exec: exec, batch: batch}
	}
	return &trainer{store: store, exec: exec}
}

// batchFor returns the (deterministic) batch of a step: 8 examples of 4 features.
func batchFor(step int) (*tensors.Tensor, *tensors.Tensor) {
	x := make([][]float32, 8)
	y := make([][]float32, 8)
	for i := range x {
		for j := range 4 {
			x[i] = append(x[i], float32(math.Sin(float64(step*31+i*7+j))))
		}
		y[i] = []float32{x[i][0]*0.5 - x[i][2] + 0.1}
	}
	return tensors.FromValue(x), tensors.FromValue(y)
}

// run trains the steps [from, to).
func (tr *trainer) run(t *testing.T, from, to int) {
	t.Helper()
	for step := from; step < to; step++ {
		x, y := batchFor(step)
		args := []any{x, y}
		if tr.batch != nil { // Split the batch over the devices.
			for i, v := range []*tensors.Tensor{x, y} {
				d, err := dtensor.ShardTensor(tr.batch, v)
				if err != nil {
					t.Fatal(err)
				}
				args[i] = d
			}
		}
		outs, err := tr.exec.Call(args...)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if want := max(1, tr.exec.NumDevices()); len(outs) != want || (tr.batch != nil && want != 4) {
			t.Fatalf("step %d ran on %d devices (%d outputs)", step, tr.exec.NumDevices(), len(outs))
		}
	}
}

// snapshot copies every variable's (merged) value to the host.
func snapshot(t *testing.T, store *model.Store) map[string]*tensors.Tensor {
	t.Helper()
	out := map[string]*tensors.Tensor{}
	for v := range store.IterVariables() {
		value, err := v.Value()
		if err != nil {
			t.Fatalf("%s: %v", v.Path(), err)
		}
		c, err := value.LocalClone()
		if err != nil {
			t.Fatal(err)
		}
		out[v.Path()] = c
	}
	return out
}

// compareSnapshots checks that two snapshots have the same variables and values within tol
// (tol 0: bitwise).
func compareSnapshots(t *testing.T, what string, got, want map[string]*tensors.Tensor, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d variables, want %d", what, len(got), len(want))
	}
	for path, w := range want {
		g, ok := got[path]
		switch {
		case !ok:
			t.Errorf("%s: variable %q missing", what, path)
		case tol == 0 && !g.Equal(w):
			t.Errorf("%s: variable %q = %v, want %v", what, path, g, w)
		case tol > 0 && w.DType().IsFloat() && !g.InDelta(w, tol):
			t.Errorf("%s: variable %q = %v, want %v (±%g)", what, path, g, w, tol)
		case tol > 0 && !w.DType().IsFloat() && !g.Equal(w):
			t.Errorf("%s: variable %q = %v, want %v", what, path, g, w)
		}
	}
}

// TestDeviceCountPortability saves a run trained on 4 XLA CPU devices and continues it on 1,
// and the reverse; and reloads a checkpoint in place into a Store whose variables hold
// 4-device distributed values.
func TestDeviceCountPortability(t *testing.T) {
	backend := requireXLA(t)
	const saveAt, total = 3, 6
	// Differences between 1 and 4 devices come only from the order of the gradient reduction.
	const tol = 1e-5

	for _, tc := range []struct{ from, to int }{{4, 1}, {1, 4}} {
		t.Run(fmt.Sprintf("%d devices to %d", tc.from, tc.to), func(t *testing.T) {
			m, _ := newTestManager(t, t.TempDir(), Options{})
			src := model.NewStore()
			src.SetParam(model.ParamInitialSeed, int64(42))
			srcTrainer := newTrainer(t, backend, src, tc.from)
			srcTrainer.run(t, 0, saveAt)
			path, err := m.Save(&State{Store: src, Progress: Progress{Step: saveAt, Devices: tc.from}})
			if err != nil {
				t.Fatal(err)
			}
			atSave := snapshot(t, src)

			dst := model.NewStore()
			st := &State{Store: dst}
			if err := m.Load(path, st); err != nil {
				t.Fatal(err)
			}
			if st.Progress.Devices != tc.from {
				t.Errorf("Progress.Devices = %d, want %d", st.Progress.Devices, tc.from)
			}
			compareSnapshots(t, "loaded", snapshot(t, dst), atSave, 0)
			for v := range src.IterVariables() {
				if dv := dst.GetVariable(v.Path()); dv == nil || dv.Trainable != v.Trainable {
					t.Errorf("variable %q: Trainable not restored", v.Path())
				}
			}

			// Continue both runs: the source on its devices, the copy on the other count.
			newTrainer(t, backend, dst, tc.to).run(t, saveAt, total)
			srcTrainer.run(t, saveAt, total)
			continued := snapshot(t, src)
			resumed := snapshot(t, dst)
			compareSnapshots(t, "continued", resumed, continued, tol)
			maxDiff := 0.0
			for p, w := range continued {
				if w.DType() == dtypes.Float32 {
					a, b := tensors.MustCopyFlatData[float32](w), tensors.MustCopyFlatData[float32](resumed[p])
					for i := range a {
						maxDiff = max(maxDiff, math.Abs(float64(a[i]-b[i])))
					}
				}
			}
			t.Logf("%d more steps on %d vs %d devices: max |difference| %.3g over %d variables",
				total-saveAt, tc.to, tc.from, maxDiff, len(continued))
			if got := optimizer.GetGlobalStep(dst); got != total {
				t.Errorf("global step after resuming = %d, want %d", got, total)
			}

			// Load the checkpoint again into the source Store, in place (its variables now hold
			// values on tc.from devices), and replay the same steps: the result must be identical.
			if err := m.Load(path, &State{Store: src}); err != nil {
				t.Fatal(err)
			}
			compareSnapshots(t, "reloaded in place", snapshot(t, src), atSave, 0)
			srcTrainer.run(t, saveAt, total)
			compareSnapshots(t, "replayed", snapshot(t, src), continued, 0)
		})
	}
}
