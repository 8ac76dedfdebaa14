package bench

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// loadAverage is the machine's 1, 5 and 15-minute load averages as /proc/loadavg gives
// them, or "unknown" where there is none.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// Header is the first line of the bench's table: when it ran (UTC), on which machine, and
// the load averages at its start and end (on a shared machine the figures depend on them).
func Header(machine string, start time.Time, loadStart, loadEnd string) string {
	return fmt.Sprintf("goaccel bench %s to %s UTC on %s; load average %s at the start, %s at the end\n",
		start.UTC().Format("2006-01-02 15:04"), time.Now().UTC().Format("15:04"), machine, loadStart, loadEnd)
}
