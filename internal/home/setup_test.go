package home

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakePip writes a shell script that acts as pip: it appends its arguments to calls.log, then,
// as body says, creates files below the --target/--prefix folder ($dest) and exits.
func fakePip(t *testing.T, body string) (pip []string, calls string) {
	t.Helper()
	dir := t.TempDir()
	calls = filepath.Join(dir, "calls.log")
	script := filepath.Join(dir, "pip")
	src := "#!/bin/sh\necho \"$@\" >> " + calls + "\ndest=\nprev=\nfor a in \"$@\"; do\n" +
		"  if [ \"$prev\" = --target ] || [ \"$prev\" = --prefix ]; then dest=$a; fi\n  prev=$a\ndone\n" + body + "\n"
	if err := os.WriteFile(script, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{script}, calls
}

// installsBoth creates the Key file of the package asked for, as pip would.
const installsBoth = `case "$*" in
  *mpich==*) mkdir -p "$dest/lib" && touch "$dest/lib/libmpi_abi.so.1" ;;
  *) mkdir -p "$dest/lammps_jax_pjrt_cpu" && touch "$dest/lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so" ;;
esac`

func numCalls(t *testing.T, calls string) int {
	b, err := os.ReadFile(calls)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// leftovers lists what setup left in dir besides the packages' folders.
func leftovers(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() != PluginSubdir && e.Name() != MPICHSubdir {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestSetupInstallsOnceIntoPlace: both packages land in their folders with pip's --target
// (plugin) and --prefix (MPICH); a second setup runs no pip; a package of another version is
// replaced.
func TestSetupInstallsOnceIntoPlace(t *testing.T) {
	pip, calls := fakePip(t, installsBoth)
	dir := filepath.Join(t.TempDir(), "new", "home")
	res, err := Setup(dir, pip, io.Discard)
	if err != nil || len(res) != 2 || !res[0].Fresh || !res[1].Fresh {
		t.Fatalf("Setup = %+v, %v", res, err)
	}
	for _, p := range Packages {
		if !p.Installed(dir) {
			t.Errorf("%s not installed in %s", p.Name, dir)
		}
	}
	log, _ := os.ReadFile(calls)
	if !strings.Contains(string(log), "--target") || !strings.Contains(string(log), "lammps-jax-pjrt-cpu==0.11.2") ||
		!strings.Contains(string(log), "--prefix") || !strings.Contains(string(log), "mpich==5.0.2") {
		t.Errorf("pip calls:\n%s", log)
	}
	if got := PluginDirs(dir); len(got) != 1 || got[0] != filepath.Join(dir, PluginSubdir, "lammps_jax_pjrt_cpu") {
		t.Errorf("PluginDirs = %v", got)
	}
	res, err = Setup(dir, pip, io.Discard)
	if err != nil || res[0].Fresh || res[1].Fresh || numCalls(t, calls) != 2 {
		t.Errorf("second Setup = %+v, %v; pip ran %d times in all, want 2", res, err, numCalls(t, calls))
	}
	// An install of another version is replaced as a whole.
	stale := filepath.Join(dir, MPICHSubdir, "lib", "stale.so")
	if err := os.WriteFile(stale, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, MPICHSubdir, markerFile), []byte("mpich==4.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = Setup(dir, pip, io.Discard)
	if err != nil || res[0].Fresh || !res[1].Fresh || !Packages[1].Installed(dir) {
		t.Errorf("Setup over mpich==4.0 = %+v, %v", res, err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("%s of the old install is still there", stale)
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("setup left %v in %s", l, dir)
	}
}

// TestSetupFailuresLeaveNothingHalfInstalled: pip failing after writing files, pip succeeding
// without the library, and a folder that cannot be created are clear errors, and nothing that
// discovery would pick is left; an earlier good install stays as it was.
func TestSetupFailuresLeaveNothingHalfInstalled(t *testing.T) {
	dir := t.TempDir()
	failing, _ := fakePip(t, installsBoth+"\necho 'ERROR: No matching distribution found' >&2\nexit 1")
	_, err := Setup(dir, failing, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "failed (exit status 1)") ||
		!strings.Contains(err.Error(), "No matching distribution found") || !strings.Contains(err.Error(), "nothing was installed in "+filepath.Join(dir, PluginSubdir)) {
		t.Errorf("failing pip: %v", err)
	}
	if got := PluginDirs(dir); len(got) != 0 {
		t.Errorf("after a failing pip, discovery sees %v", got)
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("a failing pip left %v", l)
	}

	empty, _ := fakePip(t, "exit 0")
	_, err = Setup(dir, empty, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "pip installed lammps-jax-pjrt-cpu==0.11.2 but not lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so") {
		t.Errorf("pip installing nothing: %v", err)
	}
	if got := PluginDirs(dir); len(got) != 0 {
		t.Errorf("after pip installed nothing, discovery sees %v", got)
	}

	good, _ := fakePip(t, installsBoth)
	if _, err := Setup(dir, good, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, PluginSubdir, markerFile), []byte("lammps-jax-pjrt-cpu==0.10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Setup(dir, failing, io.Discard); err == nil {
		t.Fatal("failing pip over an older install: no error")
	}
	if _, err := os.Stat(Packages[0].Path(dir)); err != nil {
		t.Errorf("the older install is gone after a failed update: %v", err)
	}

	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Setup(filepath.Join(file, "sub"), good, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "cannot create the folder "+filepath.Join(file, "sub")) || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("folder under a regular file: %v", err)
	}
}

func TestFindPipMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := FindPip()
	if err == nil || !strings.Contains(err.Error(), "pip not found") || !strings.Contains(err.Error(), "--pip") {
		t.Errorf("FindPip without pip: %v", err)
	}
}

func TestDir(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	t.Setenv("GOACCEL_HOME", "rel")
	t.Setenv("XDG_DATA_HOME", "/xdg")
	t.Setenv("HOME", "/h")
	check := func(wantDir, wantFrom string) {
		t.Helper()
		dir, from, err := Dir()
		if err != nil || dir != wantDir || from != wantFrom {
			t.Errorf("Dir() = %q, %q, %v; want %q, %q", dir, from, err, wantDir, wantFrom)
		}
	}
	real, _ := filepath.EvalSymlinks(wd)
	if dir, _, _ := Dir(); dir != filepath.Join(wd, "rel") && dir != filepath.Join(real, "rel") {
		t.Errorf("relative GOACCEL_HOME: %s", dir)
	}
	t.Setenv("GOACCEL_HOME", "")
	check("/xdg/goaccel", "$XDG_DATA_HOME/goaccel")
	t.Setenv("XDG_DATA_HOME", "relative/ignored")
	check("/h/.local/share/goaccel", "~/.local/share/goaccel")
}
