package accelerator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProjectDepsFoundFromSubfolder: the plugin `make deps` puts in <module>/.deps/pjrt-cpu/
// is found from the module root and from any folder below it, without PJRT_PLUGIN_LIBRARY_PATH
// (the way `go run ./cmd/goaccel env` and `go run ./examples/bert_classify` are started), and
// the search stops at the module root.
func TestProjectDepsFoundFromSubfolder(t *testing.T) {
	root := t.TempDir()
	pkg := filepath.Join(root, "mod", ".deps", "pjrt-cpu", "lammps_jax_pjrt_cpu")
	sub := filepath.Join(root, "mod", "examples", "deep")
	for _, d := range []string{pkg, sub} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	so := filepath.Join(pkg, "pjrt_c_api_cpu_plugin.so")
	if err := os.WriteFile(so, []byte("not really a plugin"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "mod", "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A .deps above the module root must not be used.
	above := filepath.Join(root, ".deps", "pjrt-cpu", "other")
	if err := os.MkdirAll(above, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(above, "pjrt_c_api_cpu_plugin.so"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PJRT_PLUGIN_LIBRARY_PATH", "")
	for _, wd := range []string{filepath.Join(root, "mod"), sub} {
		t.Chdir(wd)
		var got *Plugin
		for _, p := range FindPlugins() {
			if p.From == "project .deps folder" {
				if got != nil {
					t.Errorf("from %s: a second project plugin %s (the search went above go.mod?)", wd, p.Path)
				}
				got = &p
			}
		}
		want, _ := filepath.EvalSymlinks(so)
		if got == nil || got.Path != want || got.Kind != PluginCPU {
			t.Errorf("from %s: project plugin = %+v, want cpu %s", wd, got, want)
		}
	}
}

// TestSlowBackendWarning: on the pure-Go backend, a model bigger than a tiny one gets a loud
// warning naming the plugin, how to install it and the slowdown; a tiny one gets none.
func TestSlowBackendWarning(t *testing.T) {
	acc, err := New(Config{Backend: "go", Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	if w := acc.SlowBackendWarning(100_000); w != "" {
		t.Errorf("a tiny model got a warning: %s", w)
	}
	w := acc.SlowBackendWarning(22_700_000)
	for _, want := range []string{"WARNING", "22.7M-parameter", "pure-Go", "pjrt_c_api_cpu_plugin.so",
		"lammps-jax-pjrt-cpu", "make deps", "7 times"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning misses %q:\n%s", want, w)
		}
	}
}
