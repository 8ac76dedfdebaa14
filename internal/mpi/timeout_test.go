package mpi

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestParseTimeout: a positive Go duration or a positive number of seconds; anything else is
// an error quoting the value.
func TestParseTimeout(t *testing.T) {
	for v, want := range map[string]time.Duration{"90s": 90 * time.Second, "30m": 30 * time.Minute, "90": 90 * time.Second, "0.5": 500 * time.Millisecond} {
		if d, err := ParseTimeout(v); err != nil || d != want {
			t.Errorf("ParseTimeout(%q) = %s, %v; want %s", v, d, err, want)
		}
	}
	for _, v := range []string{"", "0", "-1", "-5s", "soon", "1e300", "NaN"} {
		if d, err := ParseTimeout(v); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", v)) {
			t.Errorf("ParseTimeout(%q) = %s, %v; want an error quoting it", v, d, err)
		}
	}
}

// TestInitReadsTheTimeout: Init's Comm has $GOACCEL_TIMEOUT as its Timeout, and Init fails on
// $GOACCEL_COLLECTIVE_TIMEOUT, naming the variable that replaced it (a singleton job, as in
// TestWithoutLauncher).
func TestInitReadsTheTimeout(t *testing.T) {
	lib := mpiLib(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ env, want string }{
		{"GOACCEL_TIMEOUT=75", "rank 0: ok: timeout 1m15s"},
		{"GOACCEL_COLLECTIVE_TIMEOUT=75s", `FAIL: mpi: init: $GOACCEL_COLLECTIVE_TIMEOUT="75s" is no longer read: set $GOACCEL_TIMEOUT`},
	} {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), childEnv+"=timeout", "GOACCEL_MPI_LIB="+lib.Path, "GOACCEL_TIMEOUT=", "GOACCEL_COLLECTIVE_TIMEOUT=", c.env)
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), c.want) {
			t.Errorf("%s: got\n%s\nwant %q", c.env, out, c.want)
		}
	}
}

func childTimeout(c *Comm) int {
	fmt.Printf("rank %d: ok: timeout %s\n", c.Rank(), c.Timeout())
	return 0
}
