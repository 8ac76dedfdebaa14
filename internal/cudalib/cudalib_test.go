package cudalib

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/envvar"
)

// touch creates the files (and their folders) under root.
func touch(t *testing.T, root string, files ...string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// pipCUDA12 is a pip install of jax[cuda12]'s plugin and NVIDIA's packages, as files relative
// to site-packages (nvshmem left out).
var pipCUDA12 = []string{
	"jax_plugins/xla_cuda12/xla_cuda_plugin.so",
	"nvidia/cuda_runtime/lib/libcudart.so.12",
	"nvidia/cuda_nvrtc/lib/libnvrtc.so.12", "nvidia/cuda_nvrtc/lib/libnvrtc-builtins.so.12.9",
	"nvidia/nvjitlink/lib/libnvJitLink.so.12",
	"nvidia/cublas/lib/libcublas.so.12", "nvidia/cublas/lib/libcublasLt.so.12",
	"nvidia/cuda_cupti/lib/libcupti.so.12",
	"nvidia/cusparse/lib/libcusparse.so.12", "nvidia/cusolver/lib/libcusolver.so.11",
	"nvidia/cufft/lib/libcufft.so.11", "nvidia/nccl/lib/libnccl.so.2",
	"nvidia/cudnn/lib/libcudnn.so.9", "nvidia/cudnn/lib/libcudnn_graph.so.9",
	"nvidia/cuda_nvcc/bin/ptxas", "nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc",
}

// TestFindInPipLayout: a pip install has no jax_plugins/nvidia (go-xla's place); Find takes
// site-packages/nvidia, the data dir with nvvm/libdevice, and the libraries in load order.
func TestFindInPipLayout(t *testing.T) {
	t.Setenv(envvar.XLAFlags.Name, "--xla_force_host_platform_device_count=2")
	sp := filepath.Join(t.TempDir(), "lib", "python3.12", "site-packages")
	touch(t, sp, pipCUDA12...)
	l := Find(filepath.Join(sp, "jax_plugins/xla_cuda12/xla_cuda_plugin.so"), nil)
	nv := filepath.Join(sp, "nvidia")
	if l.Root != nv || !strings.Contains(l.Why, "pip's layout") {
		t.Fatalf("Root %q (%s), want %q from pip's layout", l.Root, l.Why, nv)
	}
	if want := filepath.Join(nv, "cuda_nvcc"); l.DataDir != want || l.DataDirFrom != "found" {
		t.Errorf("DataDir %q (%s), want %q found", l.DataDir, l.DataDirFrom, want)
	}
	var names []string
	for _, f := range l.Libs {
		names = append(names, strings.TrimPrefix(f, nv+"/"))
	}
	want := []string{"cuda_runtime/lib/libcudart.so.12", "cuda_nvrtc/lib/libnvrtc.so.12", "nvjitlink/lib/libnvJitLink.so.12",
		"cublas/lib/libcublasLt.so.12", "cublas/lib/libcublas.so.12", "cuda_cupti/lib/libcupti.so.12",
		"cusparse/lib/libcusparse.so.12", "cusolver/lib/libcusolver.so.11", "cufft/lib/libcufft.so.11",
		"nccl/lib/libnccl.so.2", "cudnn/lib/libcudnn.so.9"}
	if !slices.Equal(names, want) {
		t.Errorf("Libs\n%q\nwant\n%q", names, want)
	}
	if !slices.Equal(l.Missing, []string{"libnvshmem_host"}) {
		t.Errorf("Missing %q, want [libnvshmem_host]", l.Missing)
	}
	if d := l.Describe(); !strings.Contains(d, nv) || !strings.Contains(d, "--xla_gpu_cuda_data_dir") {
		t.Errorf("Describe: %s", d)
	}

	// Apply adds the flag after the user's, and turns go-xla's warning off.
	t.Setenv(envvar.GoPJRTCUDAChecks.Name, "")
	os.Unsetenv(envvar.GoPJRTCUDAChecks.Name)
	errs := Apply(Libraries{Root: l.Root, DataDir: l.DataDir, DataDirFrom: l.DataDirFrom})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if got, want := envvar.XLAFlags.Value(), "--xla_force_host_platform_device_count=2 --xla_gpu_cuda_data_dir="+l.DataDir; got != want {
		t.Errorf("XLA_FLAGS=%q, want %q", got, want)
	}
	if got := envvar.GoPJRTCUDAChecks.Value(); got != "0" {
		t.Errorf("GOPJRT_CUDA_CHECKS=%q, want 0", got)
	}
	// The fake libraries are empty files: loading them fails, naming each.
	if errs := Apply(Libraries{Root: l.Root, Libs: l.Libs[:1]}); len(errs) != 1 || !strings.Contains(errs[0].Error(), "libcudart.so.12") {
		t.Errorf("Apply of an empty file: %v, want one error naming libcudart.so.12", errs)
	}
}

// TestFindOrder: go-xla's place (nvidia/ beside the plugin's folder) first, then the pip
// layout, then the site-packages given; a CUDA 13 plugin takes nvidia/cu13; the user's
// --xla_gpu_cuda_data_dir is kept; nothing found says where Find looked.
func TestFindOrder(t *testing.T) {
	t.Setenv(envvar.XLAFlags.Name, "")
	root := t.TempDir()
	goxla := filepath.Join(root, "go-xla")
	touch(t, goxla, "cuda/pjrt_c_api_cuda_plugin.so", "nvidia/cuda_runtime/lib/libcudart.so.12")
	if l := Find(filepath.Join(goxla, "cuda/pjrt_c_api_cuda_plugin.so"), nil); l.Root != filepath.Join(goxla, "nvidia") ||
		!strings.Contains(l.Why, "go-xla") || l.DataDir != "" {
		t.Errorf("go-xla's place: %+v", l)
	}

	other := filepath.Join(root, "venv", "site-packages")
	touch(t, other, "nvidia/cu13/lib/libcudart.so.13", "nvidia/cu13/lib/libcublas.so.13", "nvidia/cu13/nvvm/libdevice/libdevice.10.bc")
	plugin := filepath.Join(root, "copied", "xla_cuda13", "xla_cuda_plugin.so")
	touch(t, root, "copied/xla_cuda13/xla_cuda_plugin.so")
	l := Find(plugin, []string{filepath.Join(root, "empty"), other})
	if l.Root != filepath.Join(other, "nvidia") || l.DataDir != filepath.Join(other, "nvidia", "cu13") || len(l.Libs) != 2 {
		t.Errorf("CUDA 13 in another site-packages: %+v", l)
	}

	t.Setenv(envvar.XLAFlags.Name, "--xla_gpu_cuda_data_dir=/opt/cuda")
	l = Find(plugin, []string{other})
	if l.DataDir != "/opt/cuda" || l.DataDirFrom != "XLA_FLAGS" {
		t.Errorf("the user's data dir: %+v", l)
	}
	Apply(Libraries{DataDir: l.DataDir, DataDirFrom: l.DataDirFrom})
	if got := envvar.XLAFlags.Value(); got != "--xla_gpu_cuda_data_dir=/opt/cuda" {
		t.Errorf("Apply changed the user's XLA_FLAGS: %q", got)
	}

	l = Find(plugin, []string{filepath.Join(root, "empty")})
	if l.Root != "" || !strings.Contains(l.Why, filepath.Join(root, "empty", "nvidia")) || !strings.Contains(l.Describe(), "none found") {
		t.Errorf("nothing found: %+v", l)
	}
}

// TestLoadRealLibrary: load opens a real shared library (built here with the C compiler cgo
// uses) and keeps it in the process.
func TestLoadRealLibrary(t *testing.T) {
	cc := strings.Fields(os.Getenv("CC") + " cc")[0]
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("SKIPPING: no C compiler %q to build a library to load", cc)
	}
	dir := t.TempDir()
	src, lib := filepath.Join(dir, "fake.c"), filepath.Join(dir, "nvidia", "cuda_runtime", "lib", "libcudart.so.12")
	os.MkdirAll(filepath.Dir(lib), 0o755)
	os.WriteFile(src, []byte("int goaccel_cudalib_probe(void) { return 42; }\n"), 0o644)
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	if errs := Apply(Libraries{Root: filepath.Join(dir, "nvidia"), Libs: []string{lib}}); len(errs) > 0 {
		t.Fatal(errs)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("SKIPPING: cannot read /proc/self/maps to see the library mapped: %v", err)
	}
	if !strings.Contains(string(maps), lib) {
		t.Errorf("%s is not mapped into the process after Apply", lib)
	}
}
