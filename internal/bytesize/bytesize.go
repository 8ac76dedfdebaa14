// Package bytesize writes and reads byte counts for people: the memory plans of package
// accelerator, $GOACCEL_DEVICE_MEMORY and `goaccel estimate --device-memory`.
package bytesize

import (
	"fmt"
	"strconv"
	"strings"
)

// Format writes a byte count the way the plans print it: "512 B", "1.5 KiB", "73.3 MiB",
// "2.0 GiB".
func Format(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for ; (v >= unit || v <= -unit) && i < 4; i++ {
		v /= unit
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i])
}

// Parse reads a byte count: plain bytes ("1048576") or a number with one of the units
// B, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000), case-insensitive,
// a space allowed before the unit ("2GiB", "512 MiB", "1.5GB").
func Parse(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	units := []struct {
		suffix string
		mult   float64
	}{
		{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
		{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12}, {"b", 1},
	}
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || t == "" {
		return 0, fmt.Errorf("%q is not a byte count (want plain bytes or a number with KiB, MiB, GiB, TiB, KB, MB, GB, TB)", s)
	}
	return int64(v * mult), nil
}
