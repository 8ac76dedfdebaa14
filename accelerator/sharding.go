package accelerator

import (
	"fmt"
	"strings"

	"github.com/goaccel/goaccel/internal/envvar"
)

// The values of Config.Sharding.
const (
	shardingNo    = "no"
	shardingZero1 = "zero1"
	shardingZero2 = "zero2"
	shardingZero3 = "zero3"
)

// resolveSharding is Config.Sharding made canonical: cfg, else $GOACCEL_SHARDING, else "no"
// ("" means "no"). An unknown value is an error naming the valid ones.
func resolveSharding(cfg string) (string, error) {
	raw, source := cfg, "Config.Sharding"
	if strings.TrimSpace(raw) == "" {
		raw, source = envvar.Sharding.Value(), "$"+envvar.Sharding.Name
	}
	switch v := strings.ToLower(strings.TrimSpace(raw)); v {
	case "", shardingNo:
		return shardingNo, nil
	case shardingZero1, shardingZero2, shardingZero3:
		return v, nil
	}
	return "", fmt.Errorf(`accelerator: unknown sharding %q (from %s): valid values are "no", "zero1", "zero2" and "zero3"`, raw, source)
}

// shardsOverProcesses reports whether the sharding splits the optimizer state over the
// processes: every ZeRO stage does (zero2 and zero3 add, within a process, the sharding over
// its devices).
func shardsOverProcesses(sharding string) bool {
	return sharding == shardingZero1 || sharding == shardingZero2 || sharding == shardingZero3
}
