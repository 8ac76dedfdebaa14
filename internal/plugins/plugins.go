// Package plugins finds XLA's PJRT plugins on this machine and the NVIDIA libraries a CUDA
// plugin needs: what package accelerator loads, and what `goaccel env` and `goaccel bench`
// report. It reads the file system (and asks python3 where its site-packages are) only.
package plugins

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goaccel/goaccel/internal/cudalib"
	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/home"
)

// Kind says what hardware an XLA PJRT plugin drives.
type Kind string

// The plugin kinds goaccel looks for.
const (
	CUDA Kind = "cuda"
	CPU  Kind = "cpu"
)

// Plugin is an XLA PJRT plugin found on this machine.
type Plugin struct {
	Kind Kind   // cuda or cpu
	Path string // absolute path of the shared library
	From string // where it was found: "PJRT_PLUGIN_LIBRARY_PATH", "goaccel home", "go-xla install folder", "python site-packages"
}

// Find lists the XLA PJRT plugins reachable from this process, in the order
// accelerator.New prefers them within each kind: PJRT_PLUGIN_LIBRARY_PATH first, then
// goaccel's install folder that `goaccel setup` fills ($GOACCEL_HOME, default
// ~/.local/share/goaccel: its pjrt-cpu/*/), then the go-xla install folders, then Python's
// site-packages (JAX's CUDA plugin, pip CPU plugin packages). Where the program or its
// working directory lies plays no part. It never touches the network and returns within a couple of seconds even when
// it has to ask python3 where its site-packages are.
func Find() []Plugin {
	var found []Plugin
	seen := map[string]bool{}
	add := func(kind Kind, path, from string) {
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
				add(KindOf(m), m, from)
			}
		}
	}
	if env := envvar.PluginPath.Value(); env != "" {
		for _, dir := range strings.Split(env, ":") {
			if dir == "" {
				continue
			}
			if strings.HasSuffix(dir, ".so") {
				add(KindOf(dir), dir, "PJRT_PLUGIN_LIBRARY_PATH")
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
	for _, sp := range SitePackages() {
		cuda, _ := filepath.Glob(filepath.Join(sp, "jax_plugins", "xla_cuda*", "xla_cuda_plugin.so"))
		slices.Sort(cuda)
		slices.Reverse(cuda) // newest CUDA major first (xla_cuda13 before xla_cuda12)
		for _, m := range cuda {
			add(CUDA, m, "python site-packages")
		}
		for _, rel := range cpuPluginPackages {
			matches, _ := filepath.Glob(filepath.Join(sp, rel))
			for _, m := range matches {
				add(CPU, m, "python site-packages")
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

// KindOf says what a plugin drives from its file name: cuda when the name says so, else cpu.
func KindOf(path string) Kind {
	if strings.Contains(strings.ToLower(filepath.Base(path)), "cuda") {
		return CUDA
	}
	return CPU
}

// SitePackages returns Python's site-packages folders: the usual locations by glob, the
// active virtual environment, and (bounded to 1.5 s) whatever python3 itself reports.
func SitePackages() []string {
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

// SearchedPlaces lists, for messages, where Find looks.
const SearchedPlaces = "PJRT_PLUGIN_LIBRARY_PATH, $GOACCEL_HOME/pjrt-cpu (default ~/.local/share/goaccel), " +
	"~/.local/lib/go-xla, /usr/local/lib/go-xla and Python's site-packages"

// InstallHint says how to install XLA's CPU plugin, for messages.
const InstallHint = "run `goaccel setup` (in your module: `go get -tool github.com/goaccel/goaccel/cmd/goaccel`, " +
	"then `go tool goaccel setup`; pip installs lammps-jax-pjrt-cpu==0.11.2 into $GOACCEL_HOME, default " +
	"~/.local/share/goaccel), or set PJRT_PLUGIN_LIBRARY_PATH to a PJRT CPU plugin (.so)"

// NVIDIALibraries says which NVIDIA libraries accelerator.New would use for the CUDA plugin p
// and why: an nvidia/ folder beside the plugin's folder (go-xla's place), else
// site-packages/nvidia of the plugin's own pip install, else that of any of Python's
// site-packages. New points XLA there before loading p: --xla_gpu_cuda_data_dir in XLA_FLAGS
// (unless XLA_FLAGS sets it) and the shared libraries loaded by path. It reads the file system
// only.
func NVIDIALibraries(p Plugin) cudalib.Libraries { return cudalib.Find(p.Path, SitePackages()) }
