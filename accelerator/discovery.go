package accelerator

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/plugins"
)

// Plugin is an XLA PJRT plugin found on this machine: its kind ("cuda" or "cpu"), the
// absolute path of its shared library and where it was found. Kept exported as the type of
// Info.Plugin and Info.Found, which programs read to report where they run; finding plugins
// without an Accelerator is internal (`goaccel env` and `goaccel bench` do it).
type Plugin = plugins.Plugin

// gpuPresent reports whether an NVIDIA GPU is visible to this process, honouring
// CUDA_VISIBLE_DEVICES (empty or "-1" hides every GPU).
func gpuPresent() bool {
	if v, ok := envvar.CUDAVisibleDevices.Lookup(); ok {
		v = strings.TrimSpace(v)
		if v == "" || v == "-1" {
			return false
		}
	}
	matches, _ := filepath.Glob("/dev/nvidia[0-9]*")
	return len(matches) > 0
}

// describePlugins formats plugins for error messages: "cuda /path (from X), cpu /path (from Y)".
func describePlugins(found []Plugin) string {
	if len(found) == 0 {
		return "no XLA PJRT plugin found (looked in " + plugins.SearchedPlaces + ")"
	}
	parts := make([]string, len(found))
	for i, p := range found {
		parts[i] = fmt.Sprintf("%s %s (from %s)", p.Kind, p.Path, p.From)
	}
	return "found: " + strings.Join(parts, ", ")
}
