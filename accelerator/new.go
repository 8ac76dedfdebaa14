package accelerator

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"github.com/goaccel/goaccel/accelerator/internal/precision"
	"github.com/goaccel/goaccel/internal/cudalib"
	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/hostmem"
	"github.com/goaccel/goaccel/internal/plugins"
	"github.com/goaccel/goaccel/internal/timeline"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/distributed"
	_ "github.com/gomlx/compute/gobackend" // the pure-Go backend, always available
	"github.com/gomlx/go-xla/compute/xla"
)

// New: the backend and devices found and opened, the process group joined, and the plan line
// printed. The Accelerator itself and its accessors are in accelerator.go.

var xlaForceCount = regexp.MustCompile(`--xla_force_host_platform_device_count=(\d+)`)

// New finds the backend and devices and returns a ready Accelerator. On the main process
// it prints one line with the plan (backend, plugin, devices, processes, precision) unless
// cfg.Quiet is set.
//
// Errors name the problem and the way out: an unknown backend lists what was found, a
// path that is not a plugin says so, and asking for more devices than exist says how many do.
func New(cfg Config) (*Accelerator, error) {
	proc, err := readProcessEnv()
	if err != nil {
		return nil, wrapOp("New", err)
	}
	a, err := newAccelerator(cfg, proc, nil)
	if err != nil {
		return nil, wrapOp("New", err)
	}
	return a, nil
}

// newOption changes the Accelerator newAccelerator builds before it opens anything (tests
// define them, in _test.go files).
type newOption func(a *Accelerator)

// newAccelerator is New for the process proc; grp, when not nil, is its process group
// (tests run several "processes" in one), else it is opened from the environment.
func newAccelerator(cfg Config, proc processInfo, grp collective.Group, opts ...newOption) (*Accelerator, error) {
	set, err := resolveSettings(cfg)
	if err != nil {
		return nil, err
	}
	if err := checkCombination(combination{settings: &set}); err != nil {
		return nil, err
	}
	if cfg.Devices < 0 {
		return nil, setting{"Devices", "Config.Devices", fmt.Sprint(cfg.Devices)}.refuse("must be 0 (all) or a positive count")
	}
	// The device variables are checked in every run, as every setting is, not only on XLA's
	// CPU plugin, which reads them.
	if _, _, err := cpuDevices(cfg.Devices); err != nil {
		return nil, err
	}
	if _, _, err := cpuDeviceLimit(); err != nil {
		return nil, err
	}
	a := &Accelerator{cfg: cfg, settings: set, proc: proc, out: cfg.Output, seed: cfg.Seed, grp: collective.Solo{}, growthInterval: precision.GrowthInterval}
	a.info.Precision = set.precision.String()
	if a.out == nil {
		a.out = os.Stdout
	}
	for _, o := range opts {
		o(a)
	}
	if grp != nil {
		a.grp = grp
	} else if a.grp, err = joinGroup(proc, a.timeout); err != nil {
		return nil, err
	}
	if a.tl, err = timeline.Open(a.timeline.value, a.grp.Rank()); err != nil {
		a.Close()
		return nil, a.timeline.refuse("%v", err)
	}
	if g, ok := a.grp.(*collective.MPI); ok && a.tl != nil { // the buckets of each all-reduce, inside its span
		tl := a.tl
		g.OnBuckets(func(buckets string, bytes int64, start, end time.Time) {
			tl.Add("all-reduce buckets", "collective", start, end, "buckets", buckets, "bytes", bytes)
		})
	}
	xla.EnableAutoInstall(cfg.AllowDownload)
	if err := a.openBackend(); err != nil {
		a.Close()
		return nil, err
	}
	if a.info.Devices > 1 {
		a.mesh, err = a.makeMesh()
		if err != nil {
			a.Close() // the backend and the process group opened above
			return nil, fmt.Errorf("accelerator: creating the device mesh: %w", err)
		}
	}
	if !cfg.Quiet {
		a.Print(a.Plan())
	}
	return a, nil
}

// makeMesh makes the device mesh over a's devices (with a.newMesh when a test set it).
func (a *Accelerator) makeMesh() (*distributed.DeviceMesh, error) {
	if a.newMesh != nil {
		return a.newMesh(a)
	}
	return distributed.NewDeviceMesh([]int{a.info.Devices}, []string{meshAxis})
}

// openBackend resolves cfg.Backend / $GOMLX_BACKEND / discovery into a live backend.
func (a *Accelerator) openBackend() error {
	set := resolveSetting("Backend", a.cfg.Backend, envvar.Backend.Var)
	choice, source := set.value, set.source
	var fromBackend []cudaKnob
	if c := strings.ToLower(strings.TrimSpace(choice)); c != "go" && c != "simplego" && !strings.HasPrefix(c, "go:") {
		var err error
		if choice, fromBackend, err = splitBackendOptions(choice, source); err != nil {
			return err
		}
	}
	knobs, err := resolveCUDAKnobs(a.cfg, fromBackend)
	if err != nil {
		return err
	}
	a.knobs = knobs
	found := plugins.Find()
	a.info.Found = found
	byKind := func(k plugins.Kind) (Plugin, bool) {
		for _, p := range found {
			if p.Kind == k {
				return p, true
			}
		}
		return Plugin{}, false
	}
	var plugin Plugin
	switch c := strings.ToLower(strings.TrimSpace(choice)); {
	case c == "":
		if p, ok := byKind(plugins.CUDA); ok && gpuPresent() {
			plugin, a.info.Reason = p, "a GPU is present and XLA's CUDA plugin was found"
		} else if p, ok := byKind(plugins.CPU); ok {
			plugin, a.info.Reason = p, "XLA's CPU plugin was found"
			if gpuPresent() {
				a.info.Reason = "a GPU is present but no CUDA plugin was found; XLA's CPU plugin was"
			}
		} else {
			a.info.Reason = "no XLA plugin was found; using the pure-Go backend (slower, one device; " +
				"for XLA: goaccel setup)"
			return a.openGo()
		}
	case c == "go" || c == "simplego":
		a.info.Reason = "chosen by " + source
		return a.openGo()
	case strings.HasPrefix(c, "go:"):
		a.info.Reason = "chosen by " + source
		a.goConfig = strings.TrimSpace(choice)
		return a.openGo()
	case c == "xla" || c == "xla:cuda" || c == "xla:cpu" || c == "cuda" || c == "cpu":
		want := strings.TrimPrefix(c, "xla:")
		var ok bool
		if want == "xla" {
			if plugin, ok = byKind(plugins.CUDA); !ok || !gpuPresent() {
				plugin, ok = byKind(plugins.CPU)
			}
		} else {
			plugin, ok = byKind(plugins.Kind(want))
		}
		if !ok {
			return set.refuse("not available: %s; install one (goaccel setup installs XLA's CPU plugin) or "+
				"set PJRT_PLUGIN_LIBRARY_PATH, or use \"go\"", describePlugins(found))
		}
		a.info.Reason = "chosen by " + source
	case strings.HasSuffix(c, ".so"):
		path := strings.TrimPrefix(strings.TrimSpace(choice), "xla:")
		st, err := os.Stat(path)
		if err != nil {
			return set.refuse("the plugin does not exist: %v", err)
		}
		if st.IsDir() {
			return set.refuse("%s is a directory, not a PJRT plugin (.so)", path)
		}
		plugin = Plugin{Kind: plugins.KindOf(path), Path: path, From: source}
		a.info.Reason = "chosen by " + source
	default:
		return set.refuse("unknown backend: valid values are \"go\", \"xla\", \"xla:cpu\", \"xla:cuda\" or the "+
			"path of a PJRT plugin (.so); %s", describePlugins(found))
	}
	return a.openXLA(plugin)
}

// defaultGoConfig runs the pure-Go backend's ops one at a time (each op still uses every
// core): GoMLX v0.28.3's default, parallel ops each starting parallel matmuls on one shared
// worker pool, can deadlock a training step (docs/backends.md).
const defaultGoConfig = "go:ops_sequential"

func (a *Accelerator) openGo() error {
	if err := refuseCUDAKnobs(a.knobs, "go (pure Go)"); err != nil {
		return err
	}
	config := a.goConfig
	if config == "" {
		config = defaultGoConfig
	}
	b, err := compute.NewWithConfig(config)
	if err != nil {
		return fmt.Errorf("accelerator: creating the pure-Go backend (%q): %w", config, err)
	}
	if a.cfg.Devices > 1 {
		return setting{"Devices", "Config.Devices", fmt.Sprint(a.cfg.Devices)}.refuse("%d devices requested but "+
			"the pure-Go backend has 1; for several CPU devices install XLA's CPU plugin: %s; or set Devices to 0 or 1",
			a.cfg.Devices, plugins.InstallHint)
	}
	a.backend = b
	a.info.Backend, a.info.Devices, a.info.Available = "go", 1, 1
	return nil
}

// defaultCPUDevices is how many XLA CPU devices New creates when nothing asks for a number
// (the plugin's own default is 4). One device already spreads its products over every core,
// so more devices in one process only add a replica of the state each and a fixed cost per
// step: measured, 4 devices took 7% longer end to end on a 2-core Zen 3 and 10% and 26-30%
// longer per step on 2-core Intel and Zen 4 machines (docs/performance.md, "Devices in one
// process").
const defaultCPUDevices = 1

// cpuDevices is the number of XLA CPU devices asked for (0: none asked, New creates
// defaultCPUDevices) and where it came from: Config.Devices (cfg), else $GOACCEL_DEVICES,
// else XLA_FLAGS's --xla_force_host_platform_device_count.
func cpuDevices(cfg int) (int, setting, error) {
	if cfg > 0 {
		return cfg, setting{"Devices", "Config.Devices", strconv.Itoa(cfg)}, nil
	}
	if s := fromEnv("Devices", envvar.Devices.Var); s.value != "" {
		n, err := s.positiveInt()
		return n, s, err
	}
	if m := xlaForceCount.FindStringSubmatch(envvar.XLAFlags.Value()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, setting{"Devices", "$" + envvar.XLAFlags.Name, m[0]}, nil
	}
	return 0, setting{}, nil
}

// cpuDeviceLimit is the largest number of XLA CPU devices New creates, and what set it:
// $GOACCEL_MAX_CPU_DEVICES, else max(8, CPU cores).
func cpuDeviceLimit() (int, string, error) {
	if s := fromEnv("Devices", envvar.MaxCPUDevices.Var); s.value != "" {
		n, err := s.positiveInt()
		return n, "set by " + s.source + "=" + s.value, err
	}
	return max(8, runtime.NumCPU()), fmt.Sprintf("(max(8, CPU cores) on this machine's %d cores)", runtime.NumCPU()), nil
}

func (a *Accelerator) openXLA(p Plugin) error {
	want, asked, cpuCount := a.cfg.Devices, setting{"Devices", "Config.Devices", strconv.Itoa(a.cfg.Devices)}, 0
	if p.Kind == plugins.CPU {
		n, s, err := cpuDevices(a.cfg.Devices)
		if err != nil {
			return err
		}
		limit, why, err := cpuDeviceLimit()
		if err != nil {
			return err
		}
		if n > 0 {
			if n > limit {
				return s.refuse("%d XLA CPU devices requested, above the limit of %d %s: each host device holds a full "+
					"model replica and its own thread pool, so more devices than cores only costs memory; ask for fewer, "+
					"or raise the limit with $%s", n, limit, why, envvar.MaxCPUDevices.Name)
			}
			cpuCount, want, asked = n, n, s
		} else {
			cpuCount = defaultCPUDevices
		}
	}
	config, opts, err := xlaClientOptions(p, cpuCount, a.knobs)
	if err != nil {
		return err
	}
	var libErr error
	if p.Kind == plugins.CUDA {
		libErr = a.useNVIDIALibraries(p)
	}
	b, err := xla.NewWithOptions(config, opts)
	if err != nil {
		if p.Kind == plugins.CUDA {
			err = fmt.Errorf("%w; %s", err, a.info.NVIDIA.Describe())
			if libErr != nil {
				err = fmt.Errorf("%w; %v", err, libErr)
			}
		}
		return fmt.Errorf("accelerator: loading the XLA plugin %q (from %s) failed; is it a PJRT "+
			"plugin built for this machine? Use Backend \"go\" to run without XLA: %w", p.Path, p.From, err)
	}
	avail := b.NumDevices()
	if want > avail {
		b.Finalize()
		return asked.refuse("%d devices requested but %s exposes %d; ask for at most %d (or 0 for all)",
			want, p.Path, avail, avail)
	}
	if want == 0 {
		want = avail
	}
	a.backend = b
	a.info.Backend, a.info.Plugin, a.info.Devices, a.info.Available = "xla", p, want, avail
	return nil
}

// Plan is the one-line description of the run printed by New: backend, plugin, devices,
// processes and precision. Prepare prints a second line with the batch sizes.
func (a *Accelerator) Plan() string {
	backend := "go (pure Go)"
	if a.info.Backend == "xla" {
		backend = fmt.Sprintf("xla:%s (%s)", a.info.Plugin.Kind, a.info.Plugin.Path)
		if k := describeKnobs(a.knobs); k != "" {
			backend = fmt.Sprintf("xla:%s (%s; %s)", a.info.Plugin.Kind, a.info.Plugin.Path, k)
		}
	}
	return fmt.Sprintf("goaccel: backend %s; devices %d of %d; processes %d; precision %s; %s%s",
		backend, a.info.Devices, a.info.Available, a.grp.Size(), a.precision.String()+a.precision.Caveat(a.info.Backend, a.info.Plugin.Kind, precision.CPUHasBF16Dots()),
		a.info.Reason, hostMemoryNote(a.info, runtime.GOOS, hostmem.OptedIn()))
}

// hostMemoryNote is the plan line's word on host memory: on XLA's CPU plugin under Linux, a
// program that does not import hostmalloc runs with the C library's malloc, which makes every
// step fault XLA's temporaries in again; the note says what the import gains.
func hostMemoryNote(info Info, goos string, optedIn bool) string {
	if optedIn || goos != "linux" || info.Backend != "xla" || info.Plugin.Kind != plugins.CPU {
		return ""
	}
	return "; host memory: the C library's malloc (import _ \"github.com/goaccel/goaccel/hostmalloc\" keeps the " +
		"temporaries XLA frees for the next step instead of faulting them in again every step: less CPU time per " +
		"step, measured in docs/hostmalloc.md)"
}

// useNVIDIALibraries points XLA at p's NVIDIA libraries; the error joins the libraries that did
// not load, for the message of a plugin that then fails.
func (a *Accelerator) useNVIDIALibraries(p Plugin) error {
	a.info.NVIDIA = plugins.NVIDIALibraries(p)
	return errors.Join(cudalib.Apply(a.info.NVIDIA)...)
}

// slowModelParams is the size above which SlowBackendWarning speaks up: the tiny test models
// train in seconds on the pure-Go backend, MiniLM (22.7M parameters) takes minutes per step.
const slowModelParams = 1_000_000

// SlowBackendWarning returns a warning of a few lines when this Accelerator runs on the
// pure-Go backend and a model of params trainable parameters (more than a tiny test model)
// is about to train on it; "" otherwise. It names XLA's CPU plugin, how to install it and the
// expected slowdown. Programs print it before their first step, on the main process.
//
// Kept exported: example programs (examples/bert_classify) call it, and they may import only
// the module's public packages, since users copy them out of the module.
func (a *Accelerator) SlowBackendWarning(params int) string {
	if a.info.Backend != "go" || params <= slowModelParams {
		return ""
	}
	return fmt.Sprintf("WARNING: training a %.1fM-parameter model on the pure-Go backend (%s).\n"+
		"WARNING: expect it to be about %s than on XLA's CPU plugin (pjrt_c_api_cpu_plugin.so, "+
		"pip package lammps-jax-pjrt-cpu) on the same cores.\n"+
		"WARNING: to install the plugin: %s.",
		float64(params)/1e6, a.info.Reason, pureGoSlowdown, plugins.InstallHint)
}

// pureGoSlowdown is the measured slowdown of the pure-Go backend against XLA's CPU plugin:
// 4 steps of MiniLM (per-device batch 16, max_len 64, one device, 2 shared cores) took 240 s
// on pure Go and 37 s on XLA, compilation and loading included.
const pureGoSlowdown = "7 times (4 MiniLM steps: 240 s against 37 s)"
