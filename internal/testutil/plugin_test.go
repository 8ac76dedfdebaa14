package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCPUPluginPrefersFound(t *testing.T) {
	p := filepath.Join(t.TempDir(), "plugin.so")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := CPUPlugin(t, "", filepath.Join(t.TempDir(), "absent.so"), p); got != p {
		t.Errorf("CPUPlugin = %q, want %q (the first existing file)", got, p)
	}
}

// TestCPUPluginFromGoaccelHome: the plugin `goaccel setup` puts in $GOACCEL_HOME is found
// without PJRT_PLUGIN_LIBRARY_PATH; the checkout's own folders play no part.
func TestCPUPluginFromGoaccelHome(t *testing.T) {
	dir := t.TempDir()
	pkg := filepath.Join(dir, "pjrt-cpu", "lammps_jax_pjrt_cpu")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(pkg, "pjrt_c_api_cpu_plugin.so")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PJRT_PLUGIN_LIBRARY_PATH", "")
	t.Setenv("GOACCEL_HOME", dir)
	if got := CPUPlugin(t); got != p {
		t.Errorf("CPUPlugin = %q, want %q (from GOACCEL_HOME)", got, p)
	}
	t.Setenv("GOACCEL_HOME", t.TempDir())
	if got := FindCPUPlugin(); got != "" {
		t.Errorf("with an empty GOACCEL_HOME: FindCPUPlugin = %q, want none", got)
	}
}
