package accelerator

import (
	"errors"
	"fmt"
	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"slices"
	"strconv"
	"strings"
	"time"

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
	if _, err := stragglerEvery(); err != nil { // read by the straggler report, checked in every run
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

// combination is what the refused combinations are checked against: the settings, and what
// is chosen later — the strategy (by Prepare; nil before) and the micro-batches of an auto
// batch (by a TrainStep's first Run; 0 before).
type combination struct {
	*settings
	strategy     stepStrategy
	microBatches int
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

func isZero1(s stepStrategy) bool {
	_, ok := s.(zero1)
	return ok
}

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
