package accelerator

import (
	"fmt"
	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"github.com/goaccel/goaccel/accelerator/internal/strategy"
	"io"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goaccel/goaccel/accelerator/internal/precision"
	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/hostmem"
	"github.com/goaccel/goaccel/internal/plugins"
	"github.com/goaccel/goaccel/internal/timeline"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/distributed"
	_ "github.com/gomlx/compute/gobackend" // the pure-Go backend, always available
	"github.com/gomlx/go-xla/compute/xla"
	"github.com/gomlx/gomlx/ml/model"
)

// Config chooses where an Accelerator runs. The zero value discovers everything:
//
//	acc, err := accelerator.New(accelerator.Config{})                    // best backend found
//	acc, err := accelerator.New(accelerator.Config{Backend: "xla:cpu", Devices: 4}) // 4 CPU devices
type Config struct {
	// Backend forces a backend: "go" (pure Go, one device), "xla" (best XLA plugin found),
	// "xla:cuda", "xla:cpu", or the path of a PJRT plugin (".so", optionally after "xla:").
	// Empty means $GOMLX_BACKEND, else discovery (CUDA plugin when a GPU is present, then
	// the CPU plugin, then pure Go). XLA's options may follow after commas, as go-xla reads
	// them: "xla:cuda,tf32=off,memory_fraction=0.45,preallocate=on" (see TF32, MemoryFraction
	// and Preallocate).
	Backend string
	// Devices is how many devices to use; 0 means all that were found. On the XLA CPU
	// plugin it is also how many host devices are created (default 4 there, or
	// $GOACCEL_DEVICES, or --xla_force_host_platform_device_count in $XLA_FLAGS), at most
	// max(8, CPU cores) unless $GOACCEL_MAX_CPU_DEVICES sets another cap.
	Devices int
	// MixedPrecision is "no" (the default, also "fp32"), "bf16" or "fp16"; empty means
	// $GOACCEL_MIXED_PRECISION, else "no". With "bf16" or "fp16" the model computes its
	// activations and matrix products in bfloat16 or float16 while the variables (master
	// weights), the optimizer state and the update stay float32. A model that implements
	// ComputeDTypeSetter (bert.Classifier) does the casting itself; any other model, built
	// from GoMLX layers with nothing to implement, is cast by goaccel: the step and eval
	// functions see their float32 variables and float inputs in the 16-bit dtype (gradients
	// flow back to the float32 variables), CrossEntropy's softmax and the loss run in
	// float32, and a float32 constant mixed with 16-bit activations is an error naming the
	// op. "fp16" adds dynamic loss scaling with PyTorch GradScaler's defaults (Job.LossScale):
	// an update whose gradient is not finite is skipped on every process. docs/semantics.md
	// says what runs in which dtype.
	MixedPrecision string
	// Sharding shards the training state, as DeepSpeed's ZeRO stages and FSDP do: "no" (the
	// default, also "") keeps a full copy of everything on every device; "zero1" shards the
	// optimizer state, "zero2" also the gradient accumulators, "zero3" also the weights
	// (FSDP's FULL_SHARD). The update is the same as unsharded. Within one process the state
	// is sharded over its devices (docs/sharding.md): a variable on its first axis the device
	// count divides; scalars and variables it divides on no axis stay replicated. Over several
	// processes every stage shards the optimizer state over the processes (ZeRO-1 over MPI:
	// reduce-scatter of the gradients, each process updates its 1/P slice, all-gather of the
	// weights; docs/sharding-processes.md) and the weights and accumulators stay whole on each
	// device; the optimizer state's slices then live outside Job.Store (a checkpoint Save with
	// the Accelerator as its Processes still writes them whole). Empty means $GOACCEL_SHARDING,
	// else "no"; an unknown value is an error.
	Sharding string
	// Seed seeds variable initialisation and in-graph randomness (dropout) of prepared models.
	Seed int64
	// AllowDownload lets go-xla download a missing plugin. Off by default: offline machines
	// start in seconds instead of failing on the network.
	AllowDownload bool
	// Output receives Print's output; nil means os.Stdout.
	Output io.Writer
	// Quiet suppresses the one-line plan printed by New on the main process.
	Quiet bool
	// Timeout bounds every wait on other processes (barriers, gradient all-reduces, gathers)
	// in a run over several processes: a process that does not arrive in time makes the
	// waiting ones fail with an error naming it, instead of hanging. 0 means
	// $GOACCEL_TIMEOUT (a Go duration such as "90s" or "30m", or a number of seconds) or
	// else 30 minutes. ($GOACCEL_COLLECTIVE_TIMEOUT, its former name, is an error.)
	Timeout time.Duration
	// Verify checks the distributed update against one device at the first optimizer update
	// and then every Verify-th (updates 1, N, 2N, ...): before the update, rank 0 keeps a copy
	// of the variables and the optimizer state, gathers the update's global batches from all
	// processes, recomputes the update on its device 0 alone and compares every variable with
	// the distributed result; a difference beyond 1e-5 + 1e-3 x the variable's largest value
	// fails TrainStep.Run on every process with an error naming the step, the variable and the
	// difference. It costs a copy of the model and its optimizer state on rank 0 (twice the
	// memory) and the gather, only on the updates it checks; off, the step does nothing more.
	// It needs the step to be deterministic (no dropout) and the model to fit on one device.
	// 0 (the default) means $GOACCEL_VERIFY, else off; a negative value is an error.
	Verify int
	// GradientCompression is "no" (the default), "bf16" or "fp16": in a run over several
	// processes each update's gradients cross processes as 16-bit floats, half the bytes of
	// float32, by a reduce-scatter of the 16-bit values, a float32 sum on the process that owns
	// each chunk and an all-gather of the sums in 16 bit, so every process applies the same
	// update (docs/semantics.md gives its error bound). The loss and its weight stay exact. It
	// changes nothing in a single process, whose devices average in the compiled step. Empty
	// means $GOACCEL_GRADIENT_COMPRESSION, else "no". It cannot be combined with Verify, which
	// checks the exact update, nor with Sharding over several processes.
	GradientCompression string
	// Timeline is a folder where this process writes its Chrome trace (chrome://tracing,
	// Perfetto) as rank_<rank>.json when the Accelerator closes: each training step with,
	// inside it, its graph executions (the first one includes the compilation), all-reduces
	// (with their bytes) and the apply graph; the waits for the next global batch, gathers and
	// barriers. goaccel launch merges its node's ranks into timeline-node<N>.json. Empty means
	// $GOACCEL_TIMELINE, else off (off, recording costs one nil check).
	Timeline string
	// TF32 is "on" or "off" (also "true"/"false", "1"/"0"): whether XLA's CUDA plugin computes
	// float32 matrix products in TF32 (10-bit mantissa inputs, float32 accumulation; XLA's
	// default, on) or in full float32 (off, precision HIGHEST), as PyTorch's
	// torch.backends.cuda.matmul.allow_tf32. Empty means the backend string's "tf32=" option
	// ("xla:cuda,tf32=off"), else $GOACCEL_TF32, else XLA's default. Setting it for any other
	// backend is an error. docs/gpu.md.
	TF32 string
	// MemoryFraction is the share of each GPU's memory this process may use on XLA's CUDA
	// plugin, above 0 and at most 1 (the plugin's default is 0.75), as JAX's
	// XLA_PYTHON_CLIENT_MEM_FRACTION: processes sharing a GPU each get a part. 0 means the
	// backend string's "memory_fraction=" option, else $GOACCEL_MEMORY_FRACTION, else the
	// plugin's default. Setting it for any other backend is an error.
	MemoryFraction float64
	// Preallocate is "on" or "off": whether XLA's CUDA plugin reserves its memory share at
	// start (JAX's default) or grows into it as needed (go-xla's default, off). Empty means the
	// backend string's "preallocate=" option, else $GOACCEL_PREALLOCATE, else off. Setting it
	// for any other backend is an error.
	Preallocate string
	// DeviceMemory is the memory budget of each device, in bytes: a training step whose memory
	// plan (see MemoryPlan) needs more fails before its first execution, naming its largest
	// part and the ways out; with WithAutoBatch it picks a smaller per-device batch instead.
	// On the XLA CPU plugin it is the only limit. 0 means $GOACCEL_DEVICE_MEMORY ("2GiB",
	// "512MiB" or plain bytes), else no budget.
	DeviceMemory int64
}

// Info describes what New found and chose.
type Info struct {
	Backend   string // "go" or "xla"
	Plugin    Plugin // the XLA plugin in use (zero for the pure-Go backend)
	Reason    string // why this backend was chosen
	Devices   int    // devices in use
	Available int    // devices the backend exposes
	Precision string // "fp32", "bf16" or "fp16"
	Found     []Plugin
	NVIDIA    NVIDIALibraries // for a CUDA plugin: the NVIDIA libraries it was pointed at
}

// Accelerator owns the backend, the device mesh and the process group. Create one with New
// at the start of a program; it is safe for use by one training loop at a time.
type Accelerator struct {
	cfg      Config
	backend  compute.Backend
	info     Info
	mesh     *distributed.DeviceMesh // nil on a single device
	proc     processInfo
	grp      collective.Group // the processes of the run (soloGroup for one): the source of rank and process count
	left     bool             // Close left grp
	settings                  // Config and the environment resolved (settings.go)
	// growthInterval is the finite fp16 updates in a row after which the loss scale grows
	// (precision.GrowthInterval; tests shorten it).
	growthInterval int64
	tl             *timeline.Recorder // Config.Timeline's recorder (nil: off)
	out            io.Writer
	muOut          sync.Mutex
	seed           int64
	// goConfig is an explicit pure-Go backend configuration ("go:..."), if one was given.
	goConfig string
	// knobs are the CUDA plugin's settings given (TF32, MemoryFraction, Preallocate).
	knobs []cudaKnob

	// shardedState holds, by Store, the state that a sharded job keeps outside its Store
	// (CompleteStore gives it to checkpoints).
	shardedState map[*model.Store]*strategy.Zero1
}

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

// newAccelerator is New for the process proc; grp, when not nil, is its process group
// (tests run several "processes" in one), else it is opened from the environment.
func newAccelerator(cfg Config, proc processInfo, grp collective.Group) (*Accelerator, error) {
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
		a.mesh, err = newMesh(a)
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

// newMesh makes the device mesh over a's devices (a variable: tests make it fail).
var newMesh = func(a *Accelerator) (*distributed.DeviceMesh, error) {
	return distributed.NewDeviceMesh([]int{a.info.Devices}, []string{meshAxis})
}

// meshAxis is the name of the device-mesh axis that batches are sharded along.
const meshAxis = "data"

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

// cpuDevices is the number of XLA CPU devices asked for (0: the plugin's default) and where
// it came from: Config.Devices (cfg), else $GOACCEL_DEVICES, else XLA_FLAGS's
// --xla_force_host_platform_device_count.
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
		backend, a.info.Devices, a.info.Available, a.grp.Size(), a.precision.String()+a.precision.Caveat(a.info.Backend, a.info.Plugin.Kind),
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

// Info returns what New found and chose.
func (a *Accelerator) Info() Info { return a.info }

// Backend returns the GoMLX backend in use.
func (a *Accelerator) Backend() compute.Backend { return a.backend }

// NumDevices is the number of devices this process drives; each holds a full replica of the
// model and one per-device batch of every step.
func (a *Accelerator) NumDevices() int { return a.info.Devices }

// NumReplicas is the number of model replicas over all processes: devices x processes.
func (a *Accelerator) NumReplicas() int { return a.info.Devices * a.grp.Size() }

// SetSeed sets the seed used by models prepared afterwards (variable initialisation and
// in-graph randomness such as dropout).
func (a *Accelerator) SetSeed(seed int64) { a.seed = seed }

// Seed returns the current seed.
func (a *Accelerator) Seed() int64 { return a.seed }

// Close releases the backend and leaves the process group. The Accelerator must not be used
// afterwards: its rank and process count still read right, but a collective across processes
// fails.
func (a *Accelerator) Close() {
	if err := a.tl.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "accelerator: Close: writing the timeline: %v\n", err)
	}
	if a.backend != nil {
		a.backend.Finalize()
		a.backend = nil
	}
	if a.grp != nil && !a.left {
		_ = a.grp.Close()
		a.left = true
	}
}
