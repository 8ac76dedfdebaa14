// Package testutil holds what the tests of several goaccel packages share: finding the XLA
// CPU PJRT plugin that the multi-device tests run on, and the MPI library of the
// multi-process tests.
package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/home"
)

// FindCPUPlugin returns the XLA CPU PJRT plugin named by $PJRT_PLUGIN_LIBRARY_PATH (a file, or
// a folder holding pjrt_c_api_cpu_plugin.so), else the one `goaccel setup` installed in
// goaccel's home folder ($GOACCEL_HOME, which the Makefile sets to the repository's .deps), or
// "" when there is none. It is for tests that cannot import the accelerator (which finds more
// places: plugins.Find).
func FindCPUPlugin() string {
	const name = "pjrt_c_api_cpu_plugin.so"
	var candidates []string
	for _, p := range envvar.PluginPath.Paths() {
		switch {
		case p == "":
		case strings.HasSuffix(p, ".so"):
			candidates = append(candidates, p)
		default:
			candidates = append(candidates, filepath.Join(p, name))
		}
	}
	if dir, _, err := home.Dir(); err == nil {
		for _, d := range home.PluginDirs(dir) {
			candidates = append(candidates, filepath.Join(d, name))
		}
	}
	for _, p := range candidates {
		if st, err := os.Stat(p); err == nil && !st.IsDir() && strings.Contains(filepath.Base(p), "cpu") {
			return p
		}
	}
	return ""
}

// CPUPlugin returns the XLA CPU PJRT plugin for a test that needs one: the first of found (for
// example what plugins.Find found, or a path from an environment variable) that
// names an existing file, else FindCPUPlugin's. Without a plugin the test is skipped with a
// line that starts with SKIPPING and says how to install one, except when the CI environment
// variable is set: there the plugin is part of the install, and its absence fails the test.
func CPUPlugin(t testing.TB, found ...string) string {
	t.Helper()
	for _, p := range append(found, FindCPUPlugin()) {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	msg := "SKIPPING: no XLA CPU PJRT plugin found in $PJRT_PLUGIN_LIBRARY_PATH or " + homeDesc() +
		" (run `make deps`, which runs `goaccel setup --dir .deps`, and the test with GOACCEL_HOME=$PWD/.deps)"
	if envvar.CI.Value() != "" {
		t.Fatal("CI is set but " + msg)
	}
	t.Skip(msg)
	return ""
}

// homeDesc names goaccel's home folder for messages.
func homeDesc() string {
	dir, from, err := home.Dir()
	if err != nil {
		return "goaccel's home folder (" + err.Error() + ")"
	}
	return "goaccel's home folder " + dir + " (" + from + ")"
}
