package accelerator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/plugins"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// isolateFromPlugins points every plugin search place at empty folders.
func isolateFromPlugins(t *testing.T) {
	empty := t.TempDir()
	t.Setenv("PJRT_PLUGIN_LIBRARY_PATH", empty)
	t.Setenv("HOME", empty)
	t.Setenv("VIRTUAL_ENV", "")
	t.Setenv("PATH", empty) // no python3 to ask for site-packages
	t.Setenv("GOMLX_BACKEND", "")
	t.Setenv("GOACCEL_HOME", empty)
	t.Setenv("XDG_DATA_HOME", empty)
	t.Chdir(empty)
}

func TestDiscoveryFallsBackToGoQuickly(t *testing.T) {
	isolateFromPlugins(t)
	if ps := plugins.Find(); len(ps) > 0 {
		// System-wide site-packages can still hold a plugin; then this machine cannot show
		// the fallback.
		t.Skipf("SKIPPING: a system-wide plugin is visible even with an empty environment: %v", ps)
	}
	start := time.Now()
	a, err := New(Config{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// The fallback takes well under a second; the bound is a margin that holds on a machine
	// at load 8, and still catches a wait on the network (a download, a DNS timeout).
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("New took %s without plugins, want well under 20 s", el)
	}
	if a.Info().Backend != "go" || a.NumDevices() != 1 {
		t.Errorf("got backend %q with %d devices, want the pure-Go backend with 1", a.Info().Backend, a.NumDevices())
	}
	if !strings.Contains(a.Plan(), "pure") || !strings.Contains(a.Plan(), "goaccel setup") {
		t.Errorf("plan line %q does not say why the pure-Go backend was chosen and how to get XLA (goaccel setup)", a.Plan())
	}
}

func TestBadConfigErrors(t *testing.T) {
	isolateFromPlugins(t)
	fake := filepath.Join(t.TempDir(), "pjrt_c_api_fake_plugin.so")
	if err := os.WriteFile(fake, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"unknown backend lists what was found", Config{Backend: "tpu"}, []string{`Config.Backend="tpu": unknown backend`, "no XLA PJRT plugin found"}},
		{"xla without plugin", Config{Backend: "xla:cpu"}, []string{"not available", "goaccel setup"}},
		{"missing plugin file", Config{Backend: "/nonexistent/pjrt_c_api_cpu_plugin.so"}, []string{"does not exist"}},
		{"not a plugin", Config{Backend: fake}, []string{fake, "PJRT"}},
		{"too many devices for pure Go", Config{Backend: "go", Devices: 2}, []string{"2 devices requested", "pure-Go backend has 1"}},
		{"negative devices", Config{Devices: -1}, []string{"Devices=-1"}},
		{"unknown precision", Config{MixedPrecision: "fp8"}, []string{`Config.MixedPrecision="fp8": unknown precision`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Quiet = true
			a, err := New(c.cfg)
			if err == nil {
				a.Close()
				t.Fatalf("New(%+v) succeeded, want an error", c.cfg)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	t.Run("env backend is named", func(t *testing.T) {
		t.Setenv("GOMLX_BACKEND", "nope")
		_, err := New(Config{Quiet: true})
		if err == nil || !strings.Contains(err.Error(), "$GOMLX_BACKEND") {
			t.Errorf("error %v does not name $GOMLX_BACKEND", err)
		}
	})
	t.Run("half a launcher environment is refused clearly", func(t *testing.T) {
		t.Setenv("WORLD_SIZE", "2")
		_, err := New(Config{Quiet: true, Backend: "go"})
		if err == nil || !strings.Contains(err.Error(), "$WORLD_SIZE is set but $RANK is not") {
			t.Errorf("got %v, want an error naming WORLD_SIZE and RANK", err)
		}
	})
	t.Run("rank outside the world", func(t *testing.T) {
		t.Setenv("PMI_RANK", "3")
		t.Setenv("PMI_SIZE", "2")
		_, err := New(Config{Quiet: true, Backend: "go"})
		if err == nil || !strings.Contains(err.Error(), "$PMI_RANK=3 is not below $PMI_SIZE=2 (set by MPICH/Hydra)") {
			t.Errorf("got %v", err)
		}
	})
}

func TestStepErrors(t *testing.T) {
	t.Parallel()
	a := newXLA(t, 4)
	x, y := toyData(16)
	src := &fixedSource{x: x, y: y, batch: 2}
	job, err := a.Prepare(model.NewStore(), optimizer.Adam().Done(), src)
	if err != nil {
		t.Fatal(err)
	}
	var step *data.GlobalBatch
	for st, err := range job.Batches() {
		if err != nil {
			t.Fatal(err)
		}
		step = st
		break
	}
	t.Run("never calls Backward", func(t *testing.T) {
		_, err := job.TrainStep(func(s *model.Scope, b GraphBatch) *Node {
			return CrossEntropy(mlpLogits(s, b.Inputs[0]), b.Labels, b.Mask)
		}).Run(step)
		if err == nil || !strings.Contains(err.Error(), "never called Accelerator.Backward") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("wrong shard count", func(t *testing.T) {
		bad := &data.GlobalBatch{Shards: step.Shards[:3]}
		_, err := job.TrainStep(func(s *model.Scope, b GraphBatch) *Node { return nil }).Run(bad)
		if err == nil || !strings.Contains(err.Error(), "3 shard(s) but there are 4 device(s)") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("uneven per-device batches", func(t *testing.T) {
		other := &fixedSource{x: x, y: y, batch: 3}
		_ = other.Distribute(4, []int{0, 1, 2, 3})
		var odd *data.GlobalBatch
		for st := range other.Epoch() {
			odd = st
			break
		}
		mixed := &data.GlobalBatch{Shards: append(append([]*data.Batch{}, step.Shards[:3]...), odd.Shards[3])}
		_, err := job.TrainStep(func(s *model.Scope, b GraphBatch) *Node { return nil }).Run(mixed)
		if err == nil || !strings.Contains(err.Error(), "same per-device batch shape") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("Backward outside a step", func(t *testing.T) {
		g := NewGraph(a.Backend(), "outside")
		err := tryCatch(func() { a.Backward(model.NewStore().RootScope(), Const(g, float32(1))) })
		if err == nil || !strings.Contains(err.Error(), "outside a step function") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("bad prepare options", func(t *testing.T) {
		if _, err := a.Prepare(model.NewStore(), optimizer.Adam().Done(), nil, WithGradientAccumulation(0)); err == nil {
			t.Error("accumulation 0 accepted")
		}
		if _, err := a.Prepare(model.NewStore(), nil, nil); err == nil || !strings.Contains(err.Error(), "optimizer is nil") {
			t.Errorf("nil optimizer: %v", err)
		}
	})
}

func tryCatch(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = e
			} else {
				err = errorf("%v", r)
			}
		}
	}()
	fn()
	return nil
}
func errorf(f string, a ...any) error { return fmt.Errorf(f, a...) }

func TestReduce(t *testing.T) {
	t.Parallel()
	a, err := New(Config{Backend: "go", Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, op := range []ReduceOp{OpSum, OpMean, OpMax} {
		if got, err := a.Reduce(2.5, op); err != nil || got != 2.5 {
			t.Errorf("Reduce(2.5, %d) on one process = %g, %v; want 2.5", op, got, err)
		}
	}
	if _, err := a.Reduce(1, ReduceOp(9)); err == nil || !strings.Contains(err.Error(), "unknown ReduceOp") {
		t.Errorf("unknown op: %v", err)
	}
}

// TestCPUDeviceLimit: absurd XLA CPU device counts are refused before the plugin is loaded
// (64 devices were killed at 21 GB on a 2-core machine, 100000 hung): the plugin here is a
// file that is no plugin, so that loading it would fail with another error.
func TestCPUDeviceLimit(t *testing.T) {
	notAPlugin := filepath.Join(t.TempDir(), "pjrt_c_api_cpu_plugin.so")
	if err := os.WriteFile(notAPlugin, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOACCEL_DEVICES", "")
	t.Setenv("XLA_FLAGS", "")
	for _, c := range []struct {
		devices int
		env     string
		want    string
	}{
		{64, "4", "64 XLA CPU devices requested, above the limit of 4"},
		{100000, "", "100000 XLA CPU devices requested"},
		{4, "2", "above the limit of 2"},
		{4, "x", `$GOACCEL_MAX_CPU_DEVICES="x"`},
		{0, "x", `$GOACCEL_MAX_CPU_DEVICES="x"`}, // checked even when no count is asked for
	} {
		t.Run(fmt.Sprintf("%d devices, limit %q", c.devices, c.env), func(t *testing.T) {
			t.Setenv("GOACCEL_MAX_CPU_DEVICES", c.env)
			a, err := New(Config{Backend: notAPlugin, Devices: c.devices, Quiet: true})
			if err == nil {
				a.Close()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "loading the XLA plugin") {
				t.Errorf("error %q does not say %q before loading the plugin", err, c.want)
			}
		})
	}
}
