package home

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
)

// Package is one thing Setup installs from PyPI.
type Package struct {
	// Name says what it is, for messages: "XLA's CPU plugin", "MPICH".
	Name string
	// Spec is the pinned pip requirement.
	Spec string
	// Subdir is the folder of the home folder it goes to (PluginSubdir, MPICHSubdir).
	Subdir string
	// Key is the file, relative to Subdir, that the discovery loads.
	Key string
	// prefix installs with pip --prefix (the wheel keeps lib/ and bin/ under *.data/data/,
	// which --target drops) instead of --target.
	prefix bool
}

// Packages are what Setup installs, in order.
var Packages = []Package{
	{Name: "XLA's CPU plugin", Spec: "lammps-jax-pjrt-cpu==0.11.2", Subdir: PluginSubdir,
		Key: "lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so"},
	{Name: "MPICH", Spec: "mpich==5.0.2", Subdir: MPICHSubdir, Key: "lib/libmpi_abi.so.1", prefix: true},
}

// markerFile, in a package's Subdir, holds the Spec that Setup installed there.
const markerFile = ".goaccel-setup"

// Path returns the package's Key file in the home folder dir.
func (p Package) Path(dir string) string { return filepath.Join(dir, p.Subdir, p.Key) }

// Installed reports whether Setup installed this package, at this Spec, in dir.
func (p Package) Installed(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, p.Subdir, markerFile))
	if err != nil || strings.TrimSpace(string(b)) != p.Spec {
		return false
	}
	st, err := os.Stat(p.Path(dir))
	return err == nil && !st.IsDir()
}

// Result is what Setup did for one package.
type Result struct {
	Package
	// Path is the installed Key file.
	Path string
	// Fresh is false when the package was already installed and Setup left it alone.
	Fresh bool
}

// FindPip returns the command that runs pip: pip3 or pip from $PATH, else `python3 -m pip`.
func FindPip() ([]string, error) {
	for _, name := range []string{"pip3", "pip"} {
		if p, err := exec.LookPath(name); err == nil {
			return []string{p}, nil
		}
	}
	if py, err := exec.LookPath("python3"); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if exec.CommandContext(ctx, py, "-m", "pip", "--version").Run() == nil {
			return []string{py, "-m", "pip"}, nil
		}
	}
	return nil, errors.New("home: setup: pip not found (looked for pip3 and pip in $PATH, and for python3 -m pip): " +
		"install pip (Debian/Ubuntu: apt-get install python3-pip) or name one with --pip")
}

// Setup installs Packages into the home folder dir with the pip command pip (see FindPip),
// writing a line to log before each download. It is idempotent: a package already installed
// at its Spec is left alone. Each package is installed into a temporary folder beside its
// Subdir and renamed into place only when pip succeeded and the Key file is there, so a failed
// or interrupted setup leaves nothing the discovery would pick up (and an older install stays
// as it was). One setup at a time per folder: a setup removes the temporary folders it finds.
func Setup(dir string, pip []string, log io.Writer) ([]Result, error) {
	if len(pip) == 0 {
		return nil, errors.New("home: setup: no pip command")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("home: setup: folder %q: %w", dir, err)
	}
	dir = abs
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("home: setup: cannot create the folder %s: %w", dir, err)
	}
	var results []Result
	for _, p := range Packages {
		r := Result{Package: p, Path: p.Path(dir)}
		if !p.Installed(dir) {
			fmt.Fprintf(log, "goaccel setup: installing %s (pip install %s) into %s ...\n", p.Name, p.Spec, filepath.Join(dir, p.Subdir))
			if err := install(dir, p, pip); err != nil {
				return results, err
			}
			r.Fresh = true
		}
		results = append(results, r)
	}
	return results, nil
}

// install runs pip for p into a temporary folder of dir and renames it to dir/p.Subdir.
func install(dir string, p Package, pip []string) error {
	final := filepath.Join(dir, p.Subdir)
	leftovers, _ := filepath.Glob(filepath.Join(dir, "."+p.Subdir+".partial-*"))
	old, _ := filepath.Glob(filepath.Join(dir, "."+p.Subdir+".old-*"))
	for _, l := range append(leftovers, old...) {
		_ = os.RemoveAll(l)
	}
	tmp, err := os.MkdirTemp(dir, "."+p.Subdir+".partial-")
	if err != nil {
		return fmt.Errorf("home: setup: %s: %w", p.Name, err)
	}
	defer os.RemoveAll(tmp) // after the rename there is nothing left to remove
	// MkdirTemp makes the folder 0700; other users may run the programs that load the files.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("home: setup: %s: %w", p.Name, err)
	}
	args := append(pip[1:len(pip):len(pip)], "install", "--quiet", "--disable-pip-version-check", "--no-deps", "--no-input")
	if p.prefix {
		args = append(args, "--ignore-installed", "--no-warn-script-location", "--prefix", tmp, p.Spec)
	} else {
		args = append(args, "--target", tmp, p.Spec)
	}
	cmd := exec.Command(pip[0], args...)
	cmd.Env = append(envvar.Environ(), envvar.PipRootUserAction.KV("ignore"), envvar.PipUser.KV("0"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("home: setup: `%s` failed (%v); nothing was installed in %s; pip said:\n%s",
			strings.Join(append(pip[:1:1], args...), " "), err, final, tail(out.String(), 20))
	}
	if st, err := os.Stat(filepath.Join(tmp, p.Key)); err != nil || st.IsDir() {
		return fmt.Errorf("home: setup: pip installed %s but not %s: nothing was installed in %s", p.Spec, p.Key, final)
	}
	if err := os.WriteFile(filepath.Join(tmp, markerFile), []byte(p.Spec+"\n"), 0o644); err != nil {
		return fmt.Errorf("home: setup: %s: %w", p.Name, err)
	}
	if _, err := os.Lstat(final); err == nil {
		// Replace an older install: move it aside, move the new one in, then delete the old.
		aside := filepath.Join(dir, strings.Replace(filepath.Base(tmp), ".partial-", ".old-", 1))
		if err := os.Rename(final, aside); err != nil {
			return fmt.Errorf("home: setup: replacing %s: %w", final, err)
		}
		if err := os.Rename(tmp, final); err != nil {
			_ = os.Rename(aside, final)
			return fmt.Errorf("home: setup: replacing %s: %w", final, err)
		}
		return os.RemoveAll(aside)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("home: setup: %s: %w", p.Name, err)
	}
	return nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
