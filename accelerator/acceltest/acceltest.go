// Package acceltest is a test kit for programs and packages built on the accelerator, as
// net/http/httptest is for net/http: what a test needs to run a multi-device step on CPU. It
// is imported by the tests of trainer and of the examples, and by a user's own tests; the
// accelerator's own tests cannot import it (it imports the accelerator).
package acceltest

import (
	"testing"

	"github.com/goaccel/goaccel/internal/plugins"
	"github.com/goaccel/goaccel/internal/testutil"
)

// CPUPlugin returns the XLA CPU PJRT plugin for a multi-device test: the first one
// plugins.Find finds, as a program would ($PJRT_PLUGIN_LIBRARY_PATH, then
// $GOACCEL_HOME, which the Makefile sets to the repository's .deps that `make deps` fills, then
// the system's places). Without one the test is skipped with a line that starts with SKIPPING
// and says how to install one, except when the CI environment variable is set: there the
// plugin is part of the install, and its absence fails the test.
func CPUPlugin(t testing.TB) string {
	t.Helper()
	var found []string
	for _, p := range plugins.Find() {
		if p.Kind == plugins.CPU {
			found = append(found, p.Path)
		}
	}
	return testutil.CPUPlugin(t, found...)
}
