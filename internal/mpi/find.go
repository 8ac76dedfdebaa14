package mpi

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ABI is the binary interface of an MPI library: how its handles are represented.
type ABI int

const (
	// ABIUnknown is a library whose ABI Init detects after opening it.
	ABIUnknown ABI = iota
	// ABIStandard is the MPI-5 standard ABI (libmpi_abi.so.1): fixed handle constants.
	ABIStandard
	// ABIMPICH is MPICH's own ABI (libmpi.so.12; also Intel MPI, MVAPICH): int handles.
	ABIMPICH
	// ABIOpenMPI is Open MPI's ABI (libmpi.so.40): handles are addresses of exported globals.
	ABIOpenMPI
)

// String names the ABI as GOACCEL_MPI_ABI spells it.
func (a ABI) String() string {
	switch a {
	case ABIStandard:
		return "standard"
	case ABIMPICH:
		return "mpich"
	case ABIOpenMPI:
		return "openmpi"
	}
	return "unknown"
}

// libNames are the library files Find looks for in each directory, best first: the standard
// ABI when the library ships it, then MPICH's and Open MPI's own.
var libNames = []struct {
	name string
	abi  ABI
}{
	{"libmpi_abi.so.1", ABIStandard},
	{"libmpi.so.12", ABIMPICH},
	{"libmpi.so.40", ABIOpenMPI},
}

// systemDirs are searched after GOACCEL_MPI_LIB, the project's .deps/mpich and LD_LIBRARY_PATH.
// /opt/*/lib and /opt/*/*/lib are globbed (vendor MPIs install there).
var systemDirs = []string{
	"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib",
	"/usr/lib/x86_64-linux-gnu/openmpi/lib", "/usr/lib64/openmpi/lib",
	"/usr/lib/x86_64-linux-gnu/mpich/lib", "/usr/lib64/mpich/lib",
	"/opt/*/lib", "/opt/*/*/lib",
}

// Library is an MPI shared library found on this machine.
type Library struct {
	// Path is the file Init opens with dlopen.
	Path string
	// ABI is the interface guessed from the file name (ABIUnknown for other names); Init
	// confirms or detects it after opening the file. GOACCEL_MPI_ABI overrides it.
	ABI ABI
	// Mpiexec is the launcher installed with the library (bin/mpiexec beside its lib/
	// folder), or "" when there is none. Tests start their ranks with it.
	Mpiexec string
	// Source says where the library was found: "GOACCEL_MPI_LIB", ".deps/mpich",
	// "LD_LIBRARY_PATH" or "system".
	Source string
}

// ErrNotFound is wrapped by Find's error when no MPI library is installed.
var ErrNotFound = errors.New("no MPI library found")

// installHint says how to get an MPI library; every "not found" error carries it.
const installHint = "install one with `make deps` (MPICH into .deps/mpich), or " +
	"`pip install --ignore-installed --prefix .deps/mpich mpich==5.0.2`, " +
	"or set GOACCEL_MPI_LIB to your cluster's libmpi.so"

// Find locates an MPI library. The search order is:
//  1. $GOACCEL_MPI_LIB: a library file, or a directory searched as below (an error if it
//     holds none: an explicit choice is never silently replaced);
//  2. the project-local .deps/mpich/lib (what `make deps` installs), looked for in the
//     working directory and its parents, then in the executable's directory and its parents;
//  3. the directories of $LD_LIBRARY_PATH;
//  4. the system directories (/usr/lib/x86_64-linux-gnu, /usr/lib64, /usr/local/lib, /opt/...).
//
// In each directory libmpi_abi.so.1 (the MPI-5 standard ABI) is preferred, then libmpi.so.12
// (MPICH), then libmpi.so.40 (Open MPI). The error, when none is found, wraps ErrNotFound and
// says how to install one.
func Find() (Library, error) {
	cwd, _ := os.Getwd()
	exe, _ := os.Executable()
	return find(os.Getenv, cwd, exe, systemDirs)
}

// find is Find with its inputs explicit, for tests.
func find(getenv func(string) string, cwd, exe string, sysDirs []string) (Library, error) {
	if p := getenv("GOACCEL_MPI_LIB"); p != "" {
		st, err := os.Stat(p)
		if err != nil {
			return Library{}, fmt.Errorf("mpi: find: GOACCEL_MPI_LIB=%s: %w", p, err)
		}
		if !st.IsDir() {
			if p, err = followLinkerScript(p); err != nil {
				return Library{}, fmt.Errorf("mpi: find: GOACCEL_MPI_LIB: %w", err)
			}
			lib := Library{Path: p, ABI: abiOfName(filepath.Base(p)), Source: "GOACCEL_MPI_LIB"}
			lib.Mpiexec = mpiexecBeside(filepath.Dir(p))
			return withABIOverride(lib, getenv)
		}
		if lib, ok := inDir(p, "GOACCEL_MPI_LIB"); ok {
			return withABIOverride(lib, getenv)
		}
		return Library{}, fmt.Errorf("mpi: find: GOACCEL_MPI_LIB=%s holds none of %s: %w", p, names(), ErrNotFound)
	}
	var looked []string
	var starts []string
	for _, d := range []string{cwd, filepath.Dir(exe)} {
		if d != "" && d != "." && !slices.Contains(starts, d) {
			starts = append(starts, d)
		}
	}
	for _, start := range starts {
		for d := start; ; d = filepath.Dir(d) {
			dir := filepath.Join(d, ".deps", "mpich", "lib")
			if lib, ok := inDir(dir, ".deps/mpich"); ok {
				return withABIOverride(lib, getenv)
			}
			if filepath.Dir(d) == d {
				break
			}
		}
		looked = append(looked, filepath.Join(start, ".deps/mpich/lib")+" and above")
	}
	for _, dir := range filepath.SplitList(getenv("LD_LIBRARY_PATH")) {
		if dir == "" {
			continue
		}
		looked = append(looked, dir)
		if lib, ok := inDir(dir, "LD_LIBRARY_PATH"); ok {
			return withABIOverride(lib, getenv)
		}
	}
	for _, pattern := range sysDirs {
		dirs, _ := filepath.Glob(pattern)
		for _, dir := range dirs {
			if lib, ok := inDir(dir, "system"); ok {
				return withABIOverride(lib, getenv)
			}
		}
		looked = append(looked, pattern)
	}
	return Library{}, fmt.Errorf("mpi: find: %w (looked for %s in %s): %s",
		ErrNotFound, names(), strings.Join(looked, ", "), installHint)
}

// followLinkerScript returns the library that p names when p is a linker script rather than a
// shared object, as the mpich wheel's lib/libmpi.so is ("INPUT(libmpi.so.12)"): dlopen cannot
// open a script. Other files are returned as they are; only a read error is an error.
func followLinkerScript(p string) (string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	if len(b) > 4096 || bytes.HasPrefix(b, []byte("\x7fELF")) {
		return p, nil
	}
	s := string(b)
	for _, kw := range []string{"INPUT(", "GROUP("} {
		i := strings.Index(s, kw)
		if i < 0 {
			continue
		}
		for _, f := range strings.FieldsFunc(s[i+len(kw):], func(r rune) bool { return r == ' ' || r == ')' || r == '\n' || r == '\t' }) {
			if strings.Contains(f, ".so") {
				if !filepath.IsAbs(f) {
					f = filepath.Join(filepath.Dir(p), f)
				}
				return f, nil
			}
		}
	}
	return p, nil // not a script: dlopen will say what it is
}

// inDir returns the best library of dir.
func inDir(dir, source string) (Library, bool) {
	for _, n := range libNames {
		p := filepath.Join(dir, n.name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return Library{Path: p, ABI: n.abi, Mpiexec: mpiexecBeside(dir), Source: source}, true
		}
	}
	return Library{}, false
}

// mpiexecBeside returns libDir/../bin/mpiexec when it exists.
func mpiexecBeside(libDir string) string {
	p := filepath.Join(filepath.Dir(libDir), "bin", "mpiexec")
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		return p
	}
	return ""
}

// abiOfName guesses the ABI of a library from its file name.
func abiOfName(base string) ABI {
	switch {
	case strings.HasPrefix(base, "libmpi_abi.so"):
		return ABIStandard
	case base == "libmpi.so.12" || strings.HasPrefix(base, "libmpi.so.12."):
		return ABIMPICH
	case base == "libmpi.so.40" || strings.HasPrefix(base, "libmpi.so.40."):
		return ABIOpenMPI
	}
	return ABIUnknown
}

// withABIOverride applies GOACCEL_MPI_ABI (standard, mpich or openmpi).
func withABIOverride(lib Library, getenv func(string) string) (Library, error) {
	v := getenv("GOACCEL_MPI_ABI")
	if v == "" {
		return lib, nil
	}
	for _, a := range []ABI{ABIStandard, ABIMPICH, ABIOpenMPI} {
		if strings.EqualFold(v, a.String()) {
			lib.ABI = a
			return lib, nil
		}
	}
	return Library{}, fmt.Errorf("mpi: find: GOACCEL_MPI_ABI=%q: want standard, mpich or openmpi", v)
}

func names() string {
	var s []string
	for _, n := range libNames {
		s = append(s, n.name)
	}
	return strings.Join(s, ", ")
}
