// Package acctest holds test helpers for the packages built on the accelerator (trainer, the
// examples). The accelerator's own tests cannot import it (it imports the accelerator) and use
// internal/testutil directly.
package acctest

import (
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/internal/testutil"
)

// CPUPlugin returns the XLA CPU PJRT plugin for a multi-device test: the first one
// accelerator.FindPlugins finds, as a program would ($PJRT_PLUGIN_LIBRARY_PATH, then
// $GOACCEL_HOME, which the Makefile sets to the repository's .deps that `make deps` fills, then
// the system's places). Without one the test is skipped loudly, or fails under CI (see
// testutil.CPUPlugin).
func CPUPlugin(t testing.TB) string {
	t.Helper()
	var found []string
	for _, p := range accelerator.FindPlugins() {
		if p.Kind == accelerator.PluginCPU {
			found = append(found, p.Path)
		}
	}
	return testutil.CPUPlugin(t, found...)
}
