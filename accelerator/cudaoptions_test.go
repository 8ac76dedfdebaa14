package accelerator

import (
	"reflect"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/plugins"
	"github.com/gomlx/go-xla/compute/xla"
	"github.com/gomlx/go-xla/pjrt"
)

// cudaPluginAt is a CUDA plugin as plugins.Find reports one from a pip install of JAX.
var cudaPluginAt = Plugin{Kind: plugins.CUDA, Path: "/venv/site-packages/jax_plugins/xla_cuda12/xla_cuda_plugin.so", From: "python site-packages"}

// clearKnobEnv unsets the knobs' variables for the test.
func clearKnobEnv(t *testing.T) {
	for _, d := range cudaKnobDefs {
		t.Setenv(d.env.Name, "")
	}
}

// TestXLAClientOptions: from Config, the backend string and the environment down to the
// config string and options map go-xla's NewWithOptions receives.
func TestXLAClientOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		backend string
		env     map[string]string
		config  string
		opts    pjrt.NamedValuesMap
	}{
		{name: "nothing set: the plugin's defaults", config: cudaPluginAt.Path, opts: pjrt.NamedValuesMap{}},
		{name: "Config", cfg: Config{TF32: "off", MemoryFraction: 0.45, Preallocate: "on"},
			config: cudaPluginAt.Path + ",tf32=false,preallocate=true", opts: pjrt.NamedValuesMap{"memory_fraction": float32(0.45)}},
		{name: "backend string", backend: "xla:cuda,tf32=on,memory_fraction=0.3",
			config: cudaPluginAt.Path + ",tf32=true", opts: pjrt.NamedValuesMap{"memory_fraction": float32(0.3)}},
		{name: "environment", env: map[string]string{"GOACCEL_TF32": "0", "GOACCEL_PREALLOCATE": "false", "GOACCEL_MEMORY_FRACTION": "1"},
			config: cudaPluginAt.Path + ",tf32=false,preallocate=false", opts: pjrt.NamedValuesMap{"memory_fraction": float32(1)}},
		{name: "Config wins over the environment", cfg: Config{TF32: "on"}, env: map[string]string{"GOACCEL_TF32": "off"},
			config: cudaPluginAt.Path + ",tf32=true", opts: pjrt.NamedValuesMap{}},
		{name: "the backend string wins over the environment", backend: "xla:cuda,preallocate=on", env: map[string]string{"GOACCEL_PREALLOCATE": "off"},
			config: cudaPluginAt.Path + ",preallocate=true", opts: pjrt.NamedValuesMap{}},
		{name: "Config and backend string agreeing", cfg: Config{TF32: "false"}, backend: "xla:cuda,tf32=off",
			config: cudaPluginAt.Path + ",tf32=false", opts: pjrt.NamedValuesMap{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearKnobEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			backend, fromBackend, err := splitBackendOptions(tc.backend, "Config.Backend")
			if err != nil {
				t.Fatal(err)
			}
			if tc.backend != "" && backend != "xla:cuda" {
				t.Errorf("backend %q without its options: got %q", tc.backend, backend)
			}
			knobs, err := resolveCUDAKnobs(tc.cfg, fromBackend)
			if err != nil {
				t.Fatal(err)
			}
			config, opts, err := xlaClientOptions(cudaPluginAt, 0, knobs)
			if err != nil {
				t.Fatal(err)
			}
			if config != tc.config || !reflect.DeepEqual(opts, tc.opts) {
				t.Errorf("got %q %v, want %q %v", config, opts, tc.config, tc.opts)
			}
		})
	}
}

// TestCUDAKnobErrors: every bad setting is an error naming it as the user typed it.
func TestCUDAKnobErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		backend string
		env     map[string]string
		want    string
	}{
		{name: "bad Config.TF32", cfg: Config{TF32: "maybe"}, want: `Config.TF32="maybe" is not on or off`},
		{name: "bad Config.MemoryFraction", cfg: Config{MemoryFraction: 1.5}, want: "Config.MemoryFraction=1.5 is not a fraction"},
		{name: "bad variable", env: map[string]string{"GOACCEL_MEMORY_FRACTION": "45%"}, want: `$GOACCEL_MEMORY_FRACTION="45%" is not a fraction`},
		{name: "bad variable though Config is set", cfg: Config{Preallocate: "on"}, env: map[string]string{"GOACCEL_PREALLOCATE": "sometimes"},
			want: `$GOACCEL_PREALLOCATE="sometimes" is not on or off`},
		{name: "bad option value", backend: "xla:cuda,tf32=maybe", want: `Config.Backend="xla:cuda,tf32=maybe": tf32="maybe" is not on or off`},
		{name: "zero fraction", backend: "xla:cuda,memory_fraction=0", want: `memory_fraction="0" is not a fraction above 0`},
		{name: "unknown option", backend: "xla:cuda,allocator=bfc", want: `Config.Backend="xla:cuda,allocator=bfc": option "allocator=bfc" is not one of`},
		{name: "option without a value", backend: "xla:cuda,tf32", want: `option "tf32" is not one of`},
		{name: "Config and backend string disagree", cfg: Config{TF32: "on"}, backend: "xla:cuda,tf32=off",
			want: `Config.TF32="on" and Config.Backend="xla:cuda,tf32=off" disagree on tf32`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearKnobEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, fromBackend, err := splitBackendOptions(tc.backend, "Config.Backend")
			if err == nil {
				_, err = resolveCUDAKnobs(tc.cfg, fromBackend)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestCUDAKnobsRefusedOffCUDA: New refuses each knob on the CPU plugin and the pure-Go backend,
// naming the setting as the user typed it, before opening anything.
func TestCUDAKnobsRefusedOffCUDA(t *testing.T) {
	clearKnobEnv(t)
	t.Setenv(envvar.Backend.Name, "")
	for _, tc := range []struct {
		name string
		cfg  Config
		env  map[string]string
		want string
	}{
		{name: "tf32 on the pure-Go backend", cfg: Config{Backend: "go", TF32: "off"},
			want: `tf32 (from Config.TF32="off") applies to XLA's CUDA plugin only, but the backend is go (pure Go)`},
		{name: "variable on the pure-Go backend", cfg: Config{Backend: "go"}, env: map[string]string{"GOACCEL_MEMORY_FRACTION": "0.5"},
			want: `memory_fraction (from $GOACCEL_MEMORY_FRACTION="0.5") applies to XLA's CUDA plugin only`},
		{name: "tf32 on the CPU plugin", cfg: Config{Backend: "xla:cpu,tf32=on"},
			want: `tf32 (from Config.Backend="xla:cpu,tf32=on") applies to XLA's CUDA plugin only, but the backend is xla:cpu (`},
		{name: "preallocate in GOMLX_BACKEND on the CPU plugin", env: map[string]string{"GOMLX_BACKEND": "xla:cpu,preallocate=off"},
			want: `preallocate (from $GOMLX_BACKEND="xla:cpu,preallocate=off") applies to XLA's CUDA plugin only, but the backend is xla:cpu (`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.want, "xla:cpu") {
				cpuPlugin(t)
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			tc.cfg.Quiet = true
			a, err := New(tc.cfg)
			if err == nil {
				a.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestGoXLAReadsTheOptions pins what go-xla v0.4.1 does with what xlaClientOptions builds: it
// accepts every option in the config string (a load error comes before any option error
// otherwise, and an unknown option is refused), and "tf32" sets the backend's
// DotGeneralUseTF32 (checked on the CPU plugin, which accepts the option too).
func TestGoXLAReadsTheOptions(t *testing.T) {
	clearKnobEnv(t)
	knobs, err := resolveCUDAKnobs(Config{TF32: "off", MemoryFraction: 0.45, Preallocate: "on"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	missing := Plugin{Kind: plugins.CUDA, Path: t.TempDir() + "/xla_cuda12/xla_cuda_plugin.so"}
	config, opts, err := xlaClientOptions(missing, 0, knobs)
	if err != nil {
		t.Fatal(err)
	}
	_, err = xla.NewWithOptions(config, opts)
	if err == nil || strings.Contains(err.Error(), "option") {
		t.Errorf("go-xla on %q: got %v, want an error loading the (missing) plugin after reading every option", config, err)
	}
	if _, err := xla.NewWithOptions(config+",bogus=1", opts); err == nil || !strings.Contains(err.Error(), "unknown plugin options [bogus]") {
		t.Errorf("go-xla no longer refuses an unknown option (got %v): the check above proves nothing", err)
	}
	cpu := cpuPlugin(t)
	for _, want := range []bool{false, true} {
		b, err := xla.NewWithOptions(cpu+",tf32="+map[bool]string{false: "false", true: "true"}[want], nil)
		if err != nil {
			t.Fatal(err)
		}
		if b.DotGeneralUseTF32 != want {
			t.Errorf("tf32=%v: go-xla set DotGeneralUseTF32=%v", want, b.DotGeneralUseTF32)
		}
		b.Finalize()
	}
}

// TestCPUClientOptions: XLA's CPU client gets the device count asked for, and runs a single
// device's executions on the calling thread (asynchronous false); several devices keep the
// client's pool, and a count left to XLA (0) sets neither.
func TestCPUClientOptions(t *testing.T) {
	cpu := Plugin{Path: "/opt/xla/pjrt_c_api_cpu_plugin.so", Kind: plugins.CPU, From: "the test"}
	for _, tc := range []struct {
		count int
		want  pjrt.NamedValuesMap
	}{
		{1, pjrt.NamedValuesMap{"cpu_device_count": int64(1), "asynchronous": false}},
		{4, pjrt.NamedValuesMap{"cpu_device_count": int64(4)}},
		{0, pjrt.NamedValuesMap{}},
	} {
		config, opts, err := xlaClientOptions(cpu, tc.count, nil)
		if err != nil || config != cpu.Path || !reflect.DeepEqual(opts, tc.want) {
			t.Errorf("%d devices: %q %v %v, want %q %v", tc.count, config, opts, err, cpu.Path, tc.want)
		}
	}
}
