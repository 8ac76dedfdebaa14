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

// slowModelParams is the size above which SlowBackendWarning speaks up: the tiny test models
// train in seconds on the pure-Go backend, MiniLM (22.7M parameters) takes minutes per step.
const slowModelParams = 1_000_000

// SlowBackendWarning returns a warning of a few lines when this Accelerator runs on the
// pure-Go backend and a model of params trainable parameters (more than a tiny test model)
// is about to train on it; "" otherwise. It names XLA's CPU plugin, how to install it and the
// expected slowdown. Programs print it before their first step, on the main process.
//
// Kept exported: example programs (examples/bert_classify) call it, and they may import only
// the module's public packages, since users copy them out of the module.
func (a *Accelerator) SlowBackendWarning(params int) string {
	if a.info.Backend != "go" || params <= slowModelParams {
		return ""
	}
	return fmt.Sprintf("WARNING: training a %.1fM-parameter model on the pure-Go backend (%s).\n"+
		"WARNING: expect it to be about %s than on XLA's CPU plugin (pjrt_c_api_cpu_plugin.so, "+
		"pip package lammps-jax-pjrt-cpu) on the same cores.\n"+
		"WARNING: to install the plugin: %s.",
		float64(params)/1e6, a.info.Reason, pureGoSlowdown, plugins.InstallHint)
}

// pureGoSlowdown is the measured slowdown of the pure-Go backend against XLA's CPU plugin:
// 4 steps of MiniLM (per-device batch 16, max_len 64, one device, 2 shared cores) took 240 s
// on pure Go and 37 s on XLA, compilation and loading included.
const pureGoSlowdown = "7 times (4 MiniLM steps: 240 s against 37 s)"
