// Package cudalib finds NVIDIA's CUDA libraries for XLA's CUDA PJRT plugin and points the
// plugin at them.
//
// The plugin needs two things from NVIDIA's pip packages (site-packages/nvidia/...): shared
// libraries (cudart, cuBLAS, cuDNN, NCCL...), which XLA opens by their soname, and a CUDA
// "data dir" holding nvvm/libdevice/libdevice.10.bc and bin/ptxas, which XLA looks for in
// --xla_gpu_cuda_data_dir first (XLA's tsl CandidateCudaRoots, then the plugin's own
// ../../nvidia/cuda_nvcc). go-xla looks for them only in an nvidia/ folder beside the plugin's
// folder (jax_plugins/nvidia for a pip install of JAX, which has none) and otherwise warns.
// Find looks there, then where a pip install puts them (site-packages/nvidia, next to
// jax_plugins/), then in every site-packages folder; Apply sets --xla_gpu_cuda_data_dir in
// XLA_FLAGS (unless the user's XLA_FLAGS already names one) and loads the shared libraries by
// their full paths with RTLD_GLOBAL, as JAX's own plugin package does, so XLA's later opens by
// soname find them whatever LD_LIBRARY_PATH (read by the dynamic loader at start only) says.
package cudalib

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/goaccel/goaccel/internal/envvar"
)

// Libraries is what Find picked for one CUDA plugin.
type Libraries struct {
	// Root is the nvidia/ folder found ("" when none was).
	Root string `json:"root,omitempty"`
	// Why says why Root was picked, or where Find looked when it found none.
	Why string `json:"why"`
	// DataDir is the folder for --xla_gpu_cuda_data_dir (nvvm/libdevice and bin/ptxas inside).
	DataDir string `json:"data_dir,omitempty"`
	// DataDirFrom says where DataDir comes from: "found", or "XLA_FLAGS" when the user's
	// XLA_FLAGS already sets it (Apply then leaves it alone).
	DataDirFrom string `json:"data_dir_from,omitempty"`
	// Libs are the shared libraries Apply loads, in dependency order.
	Libs []string `json:"libs,omitempty"`
	// Missing names the libraries of the list that Root lacks (XLA may still find them
	// elsewhere, on LD_LIBRARY_PATH or in the system's folders).
	Missing []string `json:"missing,omitempty"`
}

// preloadOrder is the libraries in the order they are loaded (each after those it needs):
// the pip package folder under nvidia/ and the library's name before ".so". For CUDA 13 every
// library is in nvidia/cu13/lib.
var preloadOrder = []struct{ pkg, lib string }{
	{"cuda_runtime", "libcudart"},
	{"cuda_nvrtc", "libnvrtc"},
	{"nvjitlink", "libnvJitLink"},
	{"cublas", "libcublasLt"},
	{"cublas", "libcublas"},
	{"cuda_cupti", "libcupti"},
	{"cusparse", "libcusparse"},
	{"cusolver", "libcusolver"},
	{"cufft", "libcufft"},
	{"nccl", "libnccl"},
	{"nvshmem", "libnvshmem_host"},
	{"cudnn", "libcudnn"},
}

// Find picks the nvidia/ folder for the CUDA plugin at pluginPath: beside the plugin's folder
// (go-xla's place), else the pip layout's (site-packages/jax_plugins/xla_cudaNN/plugin.so ->
// site-packages/nvidia), else the first of sitePackages that has one. It reads the file
// system only.
func Find(pluginPath string, sitePackages []string) Libraries {
	major := cudaMajor(pluginPath)
	dir := filepath.Dir(pluginPath)
	type place struct{ root, why string }
	places := []place{
		{filepath.Join(filepath.Dir(dir), "nvidia"), "beside the plugin's folder, where go-xla looks"},
		{filepath.Join(filepath.Dir(filepath.Dir(dir)), "nvidia"), "in the plugin's site-packages (pip's layout)"},
	}
	for _, sp := range sitePackages {
		places = append(places, place{filepath.Join(sp, "nvidia"), "in Python's site-packages " + sp})
	}
	var looked []string
	var l Libraries
	for _, p := range places {
		if slices.Contains(looked, p.root) {
			continue
		}
		looked = append(looked, p.root)
		if libs, missing := libraries(p.root, major); len(libs) > 0 {
			l = Libraries{Root: p.root, Why: p.why, Libs: libs, Missing: missing}
			break
		}
	}
	if l.Root == "" {
		l.Why = "no nvidia/ folder with CUDA " + major + " libraries in " + strings.Join(looked, ", ")
	}
	if d := userDataDir(); d != "" {
		l.DataDir, l.DataDirFrom = d, "XLA_FLAGS"
	} else if l.Root != "" {
		for _, sub := range []string{"cu" + major, "cuda_nvcc"} {
			if isDir(filepath.Join(l.Root, sub, "nvvm", "libdevice")) {
				l.DataDir, l.DataDirFrom = filepath.Join(l.Root, sub), "found"
				break
			}
		}
	}
	return l
}

// cudaMajor is the plugin's CUDA major version from its folder (jax_plugins/xla_cuda13: "13"),
// else "12".
func cudaMajor(pluginPath string) string {
	if m := regexp.MustCompile(`cuda(\d+)`).FindStringSubmatch(filepath.Base(filepath.Dir(pluginPath))); m != nil {
		return m[1]
	}
	return "12"
}

// libraries lists preloadOrder's files under root (nvidia/<pkg>/lib/, or nvidia/cu<major>/lib/)
// and the names it lacks.
func libraries(root, major string) (libs, missing []string) {
	if !isDir(root) {
		return nil, nil
	}
	for _, e := range preloadOrder {
		var file string
		for _, libDir := range []string{filepath.Join(root, "cu"+major, "lib"), filepath.Join(root, e.pkg, "lib")} {
			if file = soFile(libDir, e.lib); file != "" {
				break
			}
		}
		if file == "" {
			missing = append(missing, e.lib)
			continue
		}
		libs = append(libs, file)
	}
	return libs, missing
}

// soFile is the library name.so.N in dir (the shortest versioned name: the soname), or "".
func soFile(dir, name string) string {
	matches, _ := filepath.Glob(filepath.Join(dir, name+".so.*"))
	slices.SortFunc(matches, func(a, b string) int { return len(a) - len(b) })
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && !st.IsDir() {
			return m
		}
	}
	return ""
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// dataDirFlag is XLA's flag for the CUDA data dir.
const dataDirFlag = "--xla_gpu_cuda_data_dir"

// userDataDir is the --xla_gpu_cuda_data_dir already in XLA_FLAGS, or "".
func userDataDir() string {
	for _, f := range strings.Fields(envvar.XLAFlags.Value()) {
		if v, ok := strings.CutPrefix(f, dataDirFlag+"="); ok {
			return v
		}
	}
	return ""
}

// Apply points this process's XLA at l before the CUDA plugin is loaded: it adds
// --xla_gpu_cuda_data_dir to XLA_FLAGS (when found and not the user's), turns off go-xla's
// warning about the nvidia/ folder it looks for (when l found one elsewhere and
// GOPJRT_CUDA_CHECKS is unset) and loads l's libraries. It returns the libraries that failed
// to load, each with the loader's reason; the plugin may still find them elsewhere.
func Apply(l Libraries) []error {
	if l.DataDirFrom == "found" {
		flags := strings.TrimSpace(envvar.XLAFlags.Value() + " " + dataDirFlag + "=" + l.DataDir)
		if err := envvar.XLAFlags.Set(flags); err != nil {
			return []error{err}
		}
	}
	if l.Root == "" {
		return nil
	}
	if _, set := envvar.GoPJRTCUDAChecks.Lookup(); !set {
		if err := envvar.GoPJRTCUDAChecks.Set("0"); err != nil {
			return []error{err}
		}
	}
	var errs []error
	for _, lib := range l.Libs {
		if err := load(lib); err != nil {
			errs = append(errs, fmt.Errorf("loading %s: %w", lib, err))
		}
	}
	return errs
}

// Describe is l in one line for goaccel env and the plan.
func (l Libraries) Describe() string {
	if l.Root == "" {
		s := "NVIDIA libraries: none found (" + l.Why + ")"
		if l.DataDir != "" {
			s += "; CUDA data dir " + l.DataDir + " (from XLA_FLAGS)"
		}
		return s
	}
	s := fmt.Sprintf("NVIDIA libraries: %s (%s), %d to load", l.Root, l.Why, len(l.Libs))
	if len(l.Missing) > 0 {
		s += " (missing there: " + strings.Join(l.Missing, ", ") + ")"
	}
	switch l.DataDirFrom {
	case "found":
		s += "; CUDA data dir " + l.DataDir + " (set as " + dataDirFlag + " in XLA_FLAGS)"
	case "XLA_FLAGS":
		s += "; CUDA data dir " + l.DataDir + " (the user's XLA_FLAGS)"
	default:
		s += "; no CUDA data dir (nvvm/libdevice) under it: XLA looks in its own places"
	}
	return s
}
