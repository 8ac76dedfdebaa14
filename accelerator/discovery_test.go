package accelerator

import (
	"strings"
	"testing"
)

// TestSlowBackendWarning: on the pure-Go backend, a model bigger than a tiny one gets a loud
// warning naming the plugin, how to install it and the slowdown; a tiny one gets none.
func TestSlowBackendWarning(t *testing.T) {
	t.Parallel()
	acc, err := New(Config{Backend: "go", Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	if w := acc.SlowBackendWarning(100_000); w != "" {
		t.Errorf("a tiny model got a warning: %s", w)
	}
	w := acc.SlowBackendWarning(22_700_000)
	for _, want := range []string{"WARNING", "22.7M-parameter", "pure-Go", "pjrt_c_api_cpu_plugin.so",
		"lammps-jax-pjrt-cpu", "goaccel setup", "go tool goaccel setup", "7 times"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning misses %q:\n%s", want, w)
		}
	}
}
