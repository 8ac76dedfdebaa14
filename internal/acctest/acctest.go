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
// accelerator.FindPlugins finds, else the one `make deps` installs. Without one the test is
// skipped loudly, or fails under CI (see testutil.CPUPlugin).
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
