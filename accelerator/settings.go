package accelerator

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"github.com/goaccel/goaccel/accelerator/internal/precision"
	"github.com/goaccel/goaccel/internal/bytesize"
	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/mpi"
)

// settings is Config and the environment resolved once, by New, into typed values: every
// feature reads its setting here and nowhere else. A setting given in Config wins over its
// environment variable; a bad value in either is an error naming it as the user wrote it.
type settings struct {
	// precision is Config.MixedPrecision.
	precision precision.Precision
	shard     sharding          // Config.Sharding
	verify    int               // Config.Verify: check every verify-th update (0: off)
	codec     *collective.Codec // Config.GradientCompression (nil: exact float32)
	budget    int64             // Config.DeviceMemory: bytes per device (0: none)
	timeout   time.Duration     // Config.Timeout: bound on waits for other processes
	timeline  setting           // Config.Timeline: the folder of the Chrome trace ("": off)
	// stragglerEvery is $GOACCEL_STRAGGLER_EVERY: updates between the ranks' comparisons of
	// their busy time (0: off).
	stragglerEvery int
	// from names where each setting that the refused combinations name came from, as the
	// user wrote it: the Config field ("Config.Verify") or the variable ("$GOACCEL_VERIFY").
	from map[string]string
}

// resolveSettings resolves cfg and the environment, once (New calls it).
func resolveSettings(cfg Config) (settings, error) {
	s := settings{from: map[string]string{}}
	var err error
	if s.precision, err = mixedPrecision(cfg.MixedPrecision); err != nil {
		return s, err
	}
	if s.timeout, err = collectiveTimeout(cfg.Timeout); err != nil {
		return s, err
	}
	if s.verify, err = verifyEvery(cfg.Verify); err != nil {
		return s, err
	}
	if s.shard, err = resolveSharding(cfg.Sharding); err != nil {
		return s, err
	}
	if s.codec, err = gradientCompression(cfg.GradientCompression); err != nil {
		return s, err
	}
	if s.budget, err = deviceMemoryBudget(cfg.DeviceMemory); err != nil {
		return s, err
	}
	if _, err := envvar.Debug.Bool(); err != nil { // read by the MPI group: checked in every run
		return s, fmt.Errorf("accelerator: %w", err)
	}
	// Read by the block cache's C at the first malloc and by hostmalloc at start, which can
	// only warn: the error is here, whether or not either is in the program.
	if _, err := envvar.HostMalloc.Choice(); err != nil {
		return s, fmt.Errorf("accelerator: %w", err)
	}
	if s.stragglerEvery, err = stragglerEvery(); err != nil { // read by the straggler report (straggler.go)
		return s, err
	}
	s.timeline = resolveSetting("Timeline", cfg.Timeline, envvar.Timeline.Var)
	s.from["Verify"] = source(cfg.Verify != 0, "Verify", envvar.Verify.Name)
	s.from["Sharding"] = source(cfg.Sharding != "", "Sharding", envvar.Sharding.Name)
	s.from["GradientCompression"] = source(cfg.GradientCompression != "", "GradientCompression", envvar.GradientCompression.Name)
	return s, nil
}

// source names where a setting came from, as SettingError does: its Config field when set
// there, else its variable.
func source(inConfig bool, field, variable string) string {
	if inConfig {
		return "Config." + field
	}
	return "$" + variable
}

// mixedPrecision resolves Config.MixedPrecision (or, when empty, $GOACCEL_MIXED_PRECISION).
func mixedPrecision(cfg string) (precision.Precision, error) {
	s := resolveSetting("MixedPrecision", cfg, envvar.MixedPrecision.Var)
	p, err := precision.Parse(s.value)
	if err != nil {
		return p, s.refuse("%v", err)
	}
	return p, nil
}

// collectiveTimeout resolves Config.Timeout: cfg, else $GOACCEL_TIMEOUT, else 30 minutes. The
// variable is checked even when cfg is set (a bad setting is an error in every run), with the
// parser the MPI layer uses (internal/mpi.ParseTimeout).
func collectiveTimeout(cfg time.Duration) (time.Duration, error) {
	if cfg < 0 {
		return 0, fmt.Errorf("accelerator: Timeout=%s: must be positive (or 0 for the default)", cfg)
	}
	env, err := mpi.TimeoutFromEnv()
	if err != nil {
		return 0, fmt.Errorf("accelerator: %w", err)
	}
	if cfg > 0 {
		return cfg, nil
	}
	return env, nil
}

// verifyEvery resolves Config.Verify: cfg, else $GOACCEL_VERIFY, else 0 (off).
func verifyEvery(cfg int) (int, error) {
	if cfg < 0 {
		return 0, setting{"Verify", "Config.Verify", fmt.Sprint(cfg)}.refuse(
			"must be 0 (off, or $%s) or the number of updates between checks", envvar.Verify.Name)
	}
	n, _, err := envvar.Verify.Int()
	if err != nil {
		return 0, fmt.Errorf("accelerator: %w", err)
	}
	if n < 0 {
		return 0, fromEnv("Verify", envvar.Verify.Var).refuse("must be 0 (off) or the number of updates between checks")
	}
	if cfg > 0 {
		return cfg, nil
	}
	return n, nil
}

// resolveSharding resolves Config.Sharding: cfg, else $GOACCEL_SHARDING, else "no".
func resolveSharding(cfg string) (sharding, error) {
	s := resolveSetting("Sharding", cfg, envvar.Sharding.Var)
	name := strings.ToLower(strings.TrimSpace(s.value))
	if name == "" {
		return shardNo, nil
	}
	if i := slices.Index(shardingNames, name); i >= 0 {
		return sharding(i), nil
	}
	return shardNo, s.refuse(`unknown sharding: valid values are "no", "zero1" (optimizer state sharded), ` +
		`"zero2" (and gradients) and "zero3" (and weights)`)
}

// gradientCompression resolves Config.GradientCompression: cfg, else
// $GOACCEL_GRADIENT_COMPRESSION, else "no" (nil: the exact float32 all-reduce).
func gradientCompression(cfg string) (*collective.Codec, error) {
	s := resolveSetting("GradientCompression", cfg, envvar.GradientCompression.Var)
	switch strings.ToLower(s.value) {
	case "", "no":
		return nil, nil
	case "bf16", "fp16":
		return collective.CodecNamed(strings.ToLower(s.value)), nil
	}
	return nil, s.refuse(`unknown gradient compression: valid values are "no", "bf16" and "fp16"`)
}

// deviceMemoryBudget resolves Config.DeviceMemory: cfg, else $GOACCEL_DEVICE_MEMORY, else none
// (0). The variable is checked even when cfg is set, so a bad setting is an error in every run.
func deviceMemoryBudget(cfg int64) (int64, error) {
	if cfg < 0 {
		return 0, setting{"DeviceMemory", "Config.DeviceMemory", fmt.Sprint(cfg)}.refuse(
			"must be a positive number of bytes (or 0 for none)")
	}
	var env int64
	if s := fromEnv("DeviceMemory", envvar.DeviceMemory.Var); s.value != "" {
		var err error
		if env, err = bytesize.Parse(s.value); err != nil {
			return 0, s.refuse("%v", err)
		}
	}
	if cfg > 0 {
		return cfg, nil
	}
	return env, nil
}

// One setting: where its value came from, and the error that refuses it.

// SettingError is a refused setting: New's error for a bad Config field or environment
// variable. It names where the value was set, as the user typed it: the environment
// variable ("$GOACCEL_MIXED_PRECISION") or the Config field ("Config.MixedPrecision"); a
// program whose flags set Config fields renames the field to its flag with NameFlags, so
// that its users read "--mixed_precision".
type SettingError struct {
	// Field is the Config field that the setting is ("MixedPrecision").
	Field string
	// Source is where the value came from: "$GOACCEL_MIXED_PRECISION",
	// "Config.MixedPrecision", or (after NameFlags) "--mixed_precision".
	Source string
	// Value is the value as it was set.
	Value string
	// Reason says what is wrong with it and what is valid.
	Reason string
}

// Error says where the value was set, the value, and what is wrong with it:
// `accelerator: $GOACCEL_DEVICES=64: 64 XLA CPU devices requested, above the limit of ...`.
func (e *SettingError) Error() string {
	v := e.Value
	if _, err := strconv.ParseFloat(v, 64); err != nil {
		v = strconv.Quote(v)
	}
	sep := "="
	if strings.HasPrefix(e.Source, "-") {
		sep = " "
	}
	return "accelerator: " + e.Source + sep + v + ": " + e.Reason
}

// NameFlags returns err with its SettingError naming the flag that set the Config field,
// for a program whose flags set Config fields: flags maps a field ("MixedPrecision") to its
// flag ("--mixed_precision"). A value that came from the environment keeps naming its
// variable; any other error is returned as it is.
func NameFlags(err error, flags map[string]string) error {
	var se *SettingError
	if !errors.As(err, &se) || se.Source != "Config."+se.Field || flags[se.Field] == "" {
		return err
	}
	named := *se
	named.Source = flags[se.Field]
	old, msg := strings.TrimPrefix(se.Error(), "accelerator: "), strings.TrimPrefix(named.Error(), "accelerator: ")
	return &renamedError{msg: strings.Replace(err.Error(), old, msg, 1), err: &named}
}

// renamedError is an error whose SettingError NameFlags renamed.
type renamedError struct {
	msg string
	err *SettingError
}

func (e *renamedError) Error() string { return e.msg }
func (e *renamedError) Unwrap() error { return e.err }

// setting is a Config field resolved with its environment variable: its value and where the
// value came from, so that an error names what the user set.
type setting struct {
	field, source, value string
}

// resolveSetting is Config field's value cfg, or, when it is empty, v's value.
func resolveSetting(field, cfg string, v *envvar.Var) setting {
	if cfg != "" || v == nil {
		return setting{field, "Config." + field, cfg}
	}
	return setting{field, "$" + v.Name, v.Value()}
}

// fromEnv is the setting of field that v's value gives.
func fromEnv(field string, v *envvar.Var) setting { return setting{field, "$" + v.Name, v.Value()} }

// refuse is the error refusing s: reason says what is wrong and what is valid.
func (s setting) refuse(format string, args ...any) *SettingError {
	return &SettingError{Field: s.field, Source: s.source, Value: s.value, Reason: fmt.Sprintf(format, args...)}
}

// positiveInt parses s as a count of at least 1.
func (s setting) positiveInt() (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s.value))
	if err != nil || n <= 0 {
		return 0, s.refuse("not a positive integer")
	}
	return n, nil
}

// Config chooses where an Accelerator runs. The zero value discovers everything:
//
//	acc, err := accelerator.New(accelerator.Config{})                                 // best backend found
//	cpu4, err := accelerator.New(accelerator.Config{Backend: "xla:cpu", Devices: 4}) // 4 CPU devices
type Config struct {
	// Backend forces a backend: "go" (pure Go, one device), "xla" (best XLA plugin found),
	// "xla:cuda", "xla:cpu", or the path of a PJRT plugin (".so", optionally after "xla:").
	// Empty means $GOMLX_BACKEND, else discovery (CUDA plugin when a GPU is present, then
	// the CPU plugin, then pure Go). XLA's options may follow after commas, as go-xla reads
	// them: "xla:cuda,tf32=off,memory_fraction=0.45,preallocate=on" (see TF32, MemoryFraction
	// and Preallocate).
	Backend string
	// Devices is how many devices to use; 0 means all that were found. On the XLA CPU
	// plugin it is also how many host devices are created: $GOACCEL_DEVICES, or
	// --xla_force_host_platform_device_count in $XLA_FLAGS, else 1 (one device already uses
	// every core, and more in one process were slower: docs/backends.md), at most max(8, CPU
	// cores) unless $GOACCEL_MAX_CPU_DEVICES sets another cap.
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

// sharding is Config.Sharding resolved.
type sharding int

const (
	shardNo sharding = iota
	shardZero1
	shardZero2
	shardZero3
)

var shardingNames = []string{"no", "zero1", "zero2", "zero3"}

func (s sharding) String() string { return shardingNames[s] }

// combination is what the refused combinations are checked against: the settings, and what
// is chosen later — the strategy (by Prepare; nil before) and the micro-batches of an auto
// batch (by a TrainStep's first Run; 0 before).
type combination struct {
	*settings
	strategy     strategyTraits
	microBatches int
}

// strategyTraits is what the refusals ask of the job's strategy (every strategy has it).
type strategyTraits interface {
	// shardsOverProcesses reports whether the strategy keeps the optimizer state sharded over
	// the processes (zero1).
	shardsOverProcesses() bool
}

// refusal is a combination of two settings that cannot run together.
type refusal struct {
	first, second string // the settings, as Config names them (or a PrepareOption)
	applies       func(c combination) bool
	why           string
}

// refusals is the one table of the combinations a run refuses, checked by checkCombination
// as soon as what a row names is known (New, Prepare, the first Run of an auto batch).
var refusals = []refusal{
	{"GradientCompression", "Verify", func(c combination) bool { return c.codec != nil && c.verify > 0 },
		"Verify checks the exact float32 update, which a compressed all-reduce does not compute"},
	{"Sharding", "Verify", func(c combination) bool { return c.verify > 0 && isZero1(c.strategy) },
		"over several processes the optimizer state is sharded over them, and Verify's reference update needs it whole on rank 0"},
	{"Sharding", "GradientCompression", func(c combination) bool { return c.codec != nil && isZero1(c.strategy) },
		"over several processes ZeRO-1's reduce-scatter and all-gather are exact float32"},
	{"Verify", "WithAutoBatch", func(c combination) bool { return c.verify > 0 && c.microBatches > 1 },
		"the auto batch splits each global batch into micro-batches, whose update Verify does not recompute"},
}

func isZero1(s strategyTraits) bool { return s != nil && s.shardsOverProcesses() }

// checkCombination returns the error of the first refused combination c holds, naming both
// settings as the user gave them.
func checkCombination(c combination) error {
	for _, r := range refusals {
		if r.applies(c) {
			return fmt.Errorf("accelerator: %s with %s: %s; turn one of them off", c.describe(r.first), c.describe(r.second), r.why)
		}
	}
	return nil
}

// describe names a setting of a refused combination with its value.
func (c combination) describe(name string) string {
	switch name {
	case "Verify":
		return fmt.Sprintf("%s %d", c.from[name], c.verify)
	case "GradientCompression":
		return fmt.Sprintf("%s %q", c.from[name], c.codec.Name())
	case "Sharding":
		return fmt.Sprintf("%s %q", c.from[name], c.shard)
	case "WithAutoBatch":
		return fmt.Sprintf("WithAutoBatch (%d micro-batches)", c.microBatches)
	}
	return name
}

// DefaultStragglerEvery is how often, in optimizer updates, the ranks compare their busy
// time when $GOACCEL_STRAGGLER_EVERY is unset.
const DefaultStragglerEvery = 100

// stragglerEvery is $GOACCEL_STRAGGLER_EVERY, checked: DefaultStragglerEvery when unset, 0 to
// switch the comparison off, and an error naming the variable for anything else.
func stragglerEvery() (int, error) {
	every, set, err := envvar.StragglerEvery.Int()
	switch {
	case err != nil || set && every < 0:
		return 0, fmt.Errorf("accelerator: $%s=%q: want a number of updates >= 0 (0 switches the comparison of the ranks off; unset: every %d)",
			envvar.StragglerEvery.Name, envvar.StragglerEvery.Value(), DefaultStragglerEvery)
	case !set:
		return DefaultStragglerEvery, nil
	}
	return every, nil
}
