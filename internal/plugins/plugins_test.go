package plugins

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPluginFromGoaccelHome: the plugin `goaccel setup` puts in $GOACCEL_HOME/pjrt-cpu/ (default
// $XDG_DATA_HOME/goaccel) is found from any working directory, without
// PJRT_PLUGIN_LIBRARY_PATH; a .deps of the module around the working directory (what the search
// used to climb to go.mod for) is not: the library does not know about any repository.
func TestPluginFromGoaccelHome(t *testing.T) {
	root := t.TempDir()
	writePlugin := func(dir string) string {
		t.Helper()
		pkg := filepath.Join(dir, "pjrt-cpu", "lammps_jax_pjrt_cpu")
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		so := filepath.Join(pkg, "pjrt_c_api_cpu_plugin.so")
		if err := os.WriteFile(so, []byte("not really a plugin"), 0o644); err != nil {
			t.Fatal(err)
		}
		real, _ := filepath.EvalSymlinks(so)
		return real
	}
	inHome := writePlugin(filepath.Join(root, "home"))
	inXDG := writePlugin(filepath.Join(root, "xdg", "goaccel"))
	inCheckout := writePlugin(filepath.Join(root, "mod", ".deps"))
	if err := os.WriteFile(filepath.Join(root, "mod", "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "mod", "examples", "deep")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PJRT_PLUGIN_LIBRARY_PATH", "")
	fromHome := func() []string {
		var paths []string
		for _, p := range Find() {
			if p.Path == inCheckout {
				t.Errorf("the checkout's .deps plugin was found (from %s)", p.From)
			}
			if p.From == "goaccel home" {
				paths = append(paths, p.Path)
			}
		}
		return paths
	}
	for _, wd := range []string{filepath.Join(root, "mod"), sub, root} {
		t.Chdir(wd)
		t.Setenv("GOACCEL_HOME", filepath.Join(root, "home"))
		t.Setenv("XDG_DATA_HOME", filepath.Join(root, "xdg"))
		if got := fromHome(); len(got) != 1 || got[0] != inHome {
			t.Errorf("from %s with GOACCEL_HOME: %v, want [%s]", wd, got, inHome)
		}
		t.Setenv("GOACCEL_HOME", "")
		if got := fromHome(); len(got) != 1 || got[0] != inXDG {
			t.Errorf("from %s with XDG_DATA_HOME: %v, want [%s]", wd, got, inXDG)
		}
	}
}
