// Package testutil holds what the tests of several goaccel packages share: finding the XLA
// CPU PJRT plugin that the multi-device tests run on.
package testutil

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// LocalCPUPlugin is where `make deps` installs the XLA CPU PJRT plugin inside the repository
// (.deps/pjrt-cpu/...); the file may be absent.
func LocalCPUPlugin() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", ".deps", "pjrt-cpu", "lammps_jax_pjrt_cpu", "pjrt_c_api_cpu_plugin.so")
}

// CPUPlugin returns the XLA CPU PJRT plugin for a test that needs one: the first of found (for
// example what accelerator.FindPlugins found, or a path from an environment variable) that
// names an existing file, else LocalCPUPlugin if it exists. Without a plugin the test is
// skipped with a line that starts with SKIPPING and says how to install one, except when the
// CI environment variable is set: there the plugin is part of the install, and its absence
// fails the test.
func CPUPlugin(t testing.TB, found ...string) string {
	t.Helper()
	for _, p := range append(found, LocalCPUPlugin()) {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	msg := "SKIPPING: no XLA CPU PJRT plugin found (run `make deps`, or set PJRT_PLUGIN_LIBRARY_PATH)"
	if os.Getenv("CI") != "" {
		t.Fatal("CI is set but " + msg)
	}
	t.Skip(msg)
	return ""
}
