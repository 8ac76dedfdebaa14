package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/envvar"
)

// TestEnvPrintsTheTable: `goaccel env` prints every variable of goaccel's table
// (internal/envvar) with its value when set, its meaning and who sets it, planned ones marked,
// as text and as JSON.
func TestEnvPrintsTheTable(t *testing.T) {
	t.Setenv("GROUP_RANK", "1")
	t.Setenv("SLURM_PROCID", "")
	code, out, errOut := runCmd("env")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, v := range envvar.All() {
		val := "(unset)"
		if s, ok := v.Lookup(); ok && v.Secret {
			val = "(set, not shown)"
		} else if ok {
			val = fmt.Sprintf("%q", s)
		}
		meaning := v.Meaning
		if v.Planned {
			meaning = "planned, not read yet: " + meaning
		}
		if v.Secret {
			meaning = "secret, its value never shown: " + meaning
		}
		want := fmt.Sprintf("    %s=%s  %s (set by %s)\n", v.Name, val, meaning, v.Setters())
		if !strings.Contains(out, want) {
			t.Errorf("env output misses %q", want)
		}
	}
	for _, want := range []string{`GROUP_RANK="1"  `, `SLURM_PROCID=""  `, "GOACCEL_TIMELINE=(unset)  "} {
		if !strings.Contains(out, want) {
			t.Errorf("env output misses %q:\n%s", want, out)
		}
	}
	code, out, _ = runCmd("env", "--json")
	var rep envReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("env --json: exit %d\n%s", code, out)
	}
	all := envvar.All()
	if len(rep.Env) != len(all) {
		t.Fatalf("env --json lists %d variables, the table %d", len(rep.Env), len(all))
	}
	for i, e := range rep.Env {
		v := all[i]
		if e.Name != v.Name || e.Meaning != v.Meaning || e.Kind != string(v.Kind) || len(e.SetBy) != len(v.SetBy) || e.Planned != v.Planned || e.Secret != v.Secret {
			t.Errorf("env --json entry %d = %+v, want the table's %+v", i, e, *v)
		}
		if v.Name == "GROUP_RANK" && (e.Value == nil || *e.Value != "1") {
			t.Errorf("env --json: GROUP_RANK's value %v, want 1", e.Value)
		}
	}
}

// TestEnvNamesTheNVIDIALibraries: for a CUDA plugin of a pip install (a fake site-packages:
// jax_plugins/xla_cuda12 and nvidia/, no jax_plugins/nvidia), goaccel env names the nvidia/
// folder it would use, why, and the CUDA data dir it would give XLA.
func TestEnvNamesTheNVIDIALibraries(t *testing.T) {
	sp := filepath.Join(t.TempDir(), "site-packages")
	for _, f := range []string{"jax_plugins/xla_cuda12/xla_cuda_plugin.so", "nvidia/cuda_runtime/lib/libcudart.so.12",
		"nvidia/cublas/lib/libcublas.so.12", "nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc"} {
		os.MkdirAll(filepath.Dir(filepath.Join(sp, f)), 0o755)
		os.WriteFile(filepath.Join(sp, f), nil, 0o644)
	}
	plugin := filepath.Join(sp, "jax_plugins/xla_cuda12/xla_cuda_plugin.so")
	t.Setenv(envvar.PluginPath.Name, plugin)
	t.Setenv(envvar.XLAFlags.Name, "")
	t.Setenv(envvar.GoPJRTCUDAChecks.Name, "")
	code, out, errOut := runCmd("env")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := fmt.Sprintf("    cuda  %s (from PJRT_PLUGIN_LIBRARY_PATH)\n          NVIDIA libraries: %s (in the plugin's site-packages (pip's layout)), 2 to load",
		plugin, filepath.Join(sp, "nvidia"))
	if !strings.Contains(out, want) || !strings.Contains(out, "CUDA data dir "+filepath.Join(sp, "nvidia", "cuda_nvcc")+" (set as --xla_gpu_cuda_data_dir in XLA_FLAGS)") {
		t.Errorf("env output misses\n%s\nand the data dir:\n%s", want, out)
	}
}
