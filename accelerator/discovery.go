package accelerator

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/home"
)

// PluginKind says what hardware an XLA PJRT plugin drives.
type PluginKind string

// The plugin kinds goaccel looks for.
const (
	PluginCUDA PluginKind = "cuda"
	PluginCPU  PluginKind = "cpu"
)

// Plugin is an XLA PJRT plugin found on this machine.
type Plugin struct {
	Kind PluginKind // cuda or cpu
	Path string     // absolute path of the shared library
	From string     // where it was found: "PJRT_PLUGIN_LIBRARY_PATH", "goaccel home", "go-xla install folder", "python site-packages"
}

// FindPlugins lists the XLA PJRT plugins reachable from this process, in the order
// accelerator.New prefers them within each kind: PJRT_PLUGIN_LIBRARY_PATH first, then
// goaccel's install folder that `goaccel setup` fills ($GOACCEL_HOME, default
// ~/.local/share/goaccel: its pjrt-cpu/*/), then the go-xla install folders, then Python's
// site-packages (JAX's CUDA plugin, pip CPU plugin packages). Where the program or its
// working directory lies plays no part. It never touches the network and returns within a couple of seconds even when
// it has to ask python3 where its site-packages are.
func FindPlugins() []Plugin {
	var found []Plugin
	seen := map[string]bool{}
	add := func(kind PluginKind, path, from string) {
		abs, err := filepath.Abs(path)
		if err != nil {
			return
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		if seen[abs] {
			return
		}
		if st, err := os.Stat(abs); err != nil || st.IsDir() {
			return
		}
		seen[abs] = true
		found = append(found, Plugin{Kind: kind, Path: abs, From: from})
	}
	scanDir := func(dir, from string) {
		for _, pattern := range []string{"pjrt_c_api_*_plugin.so", "pjrt-plugin-*.so", "pjrt_plugin_*.so", "xla_cuda_plugin.so"} {
			matches, _ := filepath.Glob(filepath.Join(dir, pattern))
			slices.Sort(matches)
			for _, m := range matches {
				add(kindOfPlugin(m), m, from)
			}
		}
	}
	if env := envvar.PluginPath.Value(); env != "" {
		for _, dir := range strings.Split(env, ":") {
			if dir == "" {
				continue
			}
			if strings.HasSuffix(dir, ".so") {
				add(kindOfPlugin(dir), dir, "PJRT_PLUGIN_LIBRARY_PATH")
				continue
			}
			scanDir(dir, "PJRT_PLUGIN_LIBRARY_PATH")
		}
	}
	if dir, _, err := home.Dir(); err == nil {
		for _, d := range home.PluginDirs(dir) {
			scanDir(d, "goaccel home")
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		scanDir(filepath.Join(home, ".local", "lib", "go-xla"), "go-xla install folder")
	}
	scanDir("/usr/local/lib/go-xla", "go-xla install folder")
	for _, sp := range sitePackages() {
		cuda, _ := filepath.Glob(filepath.Join(sp, "jax_plugins", "xla_cuda*", "xla_cuda_plugin.so"))
		slices.Sort(cuda)
		slices.Reverse(cuda) // newest CUDA major first (xla_cuda13 before xla_cuda12)
		for _, m := range cuda {
			add(PluginCUDA, m, "python site-packages")
		}
		for _, rel := range cpuPluginPackages {
			matches, _ := filepath.Glob(filepath.Join(sp, rel))
			for _, m := range matches {
				add(PluginCPU, m, "python site-packages")
			}
		}
	}
	return found
}

// cpuPluginPackages are the pip packages known to carry XLA's CPU PJRT plugin, as globs
// relative to a site-packages folder.
var cpuPluginPackages = []string{
	"lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so",
	"xla_cpu_pjrt/*.so",
	"jax_plugins/*cpu*/*.so",
}

func kindOfPlugin(path string) PluginKind {
	if strings.Contains(strings.ToLower(filepath.Base(path)), "cuda") {
		return PluginCUDA
	}
	return PluginCPU
}

// sitePackages returns Python's site-packages folders: the usual locations by glob, the
// active virtual environment, and (bounded to 1.5 s) whatever python3 itself reports.
func sitePackages() []string {
	var dirs []string
	globs := []string{
		"/usr/lib/python3*/site-packages", "/usr/lib/python3/dist-packages",
		"/usr/local/lib/python3*/site-packages", "/usr/local/lib/python3*/dist-packages",
	}
	if home, err := os.UserHomeDir(); err == nil {
		globs = append(globs, filepath.Join(home, ".local/lib/python3*/site-packages"))
	}
	if venv := envvar.VirtualEnv.Value(); venv != "" {
		globs = append(globs, filepath.Join(venv, "lib/python3*/site-packages"))
	}
	for _, g := range globs {
		m, _ := filepath.Glob(g)
		dirs = append(dirs, m...)
	}
	if py, err := exec.LookPath("python3"); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		cmd := exec.CommandContext(ctx, py, "-S", "-c",
			"import sysconfig;print(sysconfig.get_paths()['purelib']);print(sysconfig.get_paths()['platlib'])")
		cmd.Env = append(envvar.Environ(), envvar.PythonNoUserSite.KV("1"))
		if out, err := cmd.Output(); err == nil {
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if line = strings.TrimSpace(line); line != "" {
					dirs = append(dirs, line)
				}
			}
		}
	}
	var uniq []string
	for _, d := range dirs {
		if !slices.Contains(uniq, d) {
			uniq = append(uniq, d)
		}
	}
	return uniq
}

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

// SearchedPlaces lists, for messages, where FindPlugins looks.
const SearchedPlaces = "PJRT_PLUGIN_LIBRARY_PATH, $GOACCEL_HOME/pjrt-cpu (default ~/.local/share/goaccel), " +
	"~/.local/lib/go-xla, /usr/local/lib/go-xla and Python's site-packages"

// InstallHint says how to install XLA's CPU plugin, for messages.
const InstallHint = "run `goaccel setup` (in your module: `go get -tool github.com/goaccel/goaccel/cmd/goaccel`, " +
	"then `go tool goaccel setup`; pip installs lammps-jax-pjrt-cpu==0.11.2 into $GOACCEL_HOME, default " +
	"~/.local/share/goaccel), or set PJRT_PLUGIN_LIBRARY_PATH to a PJRT CPU plugin (.so)"

// describePlugins formats plugins for error messages: "cuda /path (from X), cpu /path (from Y)".
func describePlugins(plugins []Plugin) string {
	if len(plugins) == 0 {
		return "no XLA PJRT plugin found (looked in " + SearchedPlaces + ")"
	}
	parts := make([]string, len(plugins))
	for i, p := range plugins {
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
func (a *Accelerator) SlowBackendWarning(params int) string {
	if a.info.Backend != "go" || params <= slowModelParams {
		return ""
	}
	return fmt.Sprintf("WARNING: training a %.1fM-parameter model on the pure-Go backend (%s).\n"+
		"WARNING: expect it to be about %s than on XLA's CPU plugin (pjrt_c_api_cpu_plugin.so, "+
		"pip package lammps-jax-pjrt-cpu) on the same cores.\n"+
		"WARNING: to install the plugin: %s.",
		float64(params)/1e6, a.info.Reason, pureGoSlowdown, InstallHint)
}

// pureGoSlowdown is the measured slowdown of the pure-Go backend against XLA's CPU plugin:
// 4 steps of MiniLM (per-device batch 16, max_len 64, one device, 2 shared cores) took 240 s
// on pure Go and 37 s on XLA, compilation and loading included.
const pureGoSlowdown = "7 times (4 MiniLM steps: 240 s against 37 s)"
