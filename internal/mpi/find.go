package mpi

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/home"
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

// libName is a library file name and the ABI it implies.
type libName struct {
	name string
	abi  ABI
}

// libNames are the library files Find looks for, best first: the standard ABI when the
// library ships it, then MPICH's and Open MPI's own (the last one, which Find looks for alone
// under Open MPI's mpirun).
var libNames = []libName{
	{"libmpi_abi.so.1", ABIStandard},
	{"libmpi.so.12", ABIMPICH},
	{"libmpi.so.40", ABIOpenMPI},
}

// systemDirs are searched after GOACCEL_MPI_LIB, goaccel's home folder and LD_LIBRARY_PATH.
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
	// Source says where the library was found: "GOACCEL_MPI_LIB", "goaccel home",
	// "LD_LIBRARY_PATH", "beside mpirun" or "system".
	Source string
}

// ErrNotFound is wrapped by Find's error when no MPI library is installed, or none that
// matches the launcher that started the process.
var ErrNotFound = errors.New("no MPI library found")

// installHint says how to get an MPI library; every "not found" error carries it. mpichDir
// is where `goaccel setup` installs MPICH.
func installHint(mpichDir string) string {
	return "run `goaccel setup` (it runs pip install mpich==5.0.2 into " + mpichDir + "; in your own module: " +
		"`go get -tool github.com/goaccel/goaccel/cmd/goaccel`, then `go tool goaccel setup`), " +
		"or set GOACCEL_MPI_LIB to your cluster's libmpi.so"
}

// Find locates an MPI library. The search order is:
//  1. $GOACCEL_MPI_LIB: a library file, or a directory searched as below (an error if it
//     holds none: an explicit choice is never silently replaced);
//  2. goaccel's home folder, $GOACCEL_HOME/mpich/lib (default ~/.local/share/goaccel), where
//     `goaccel setup` installs MPICH;
//  3. the directories of $LD_LIBRARY_PATH;
//  4. the system directories (/usr/lib/x86_64-linux-gnu, /usr/lib64, /usr/local/lib, /opt/...).
//
// In a process started by Open MPI's mpirun (OMPI_COMM_WORLD_SIZE is set) only Open MPI's
// library (libmpi.so.40) is looked for, in those places and in the lib folder beside the
// mpirun of $PATH: any other MPI would abort inside MPI_Init (MPICH: "unsupported PMI version
// PMIx"). Otherwise the MPI-5 standard ABI (libmpi_abi.so.1) and MPICH's (libmpi.so.12) are
// looked for in every place first, and Open MPI's only after them. The error, when none is
// found, wraps ErrNotFound and says how to install one.
func Find() (Library, error) {
	dir, _, err := home.Dir()
	if err != nil {
		dir = ""
	}
	return find(envvar.Getenv, dir, systemDirs)
}

// find is Find with its inputs explicit, for tests: homeDir is goaccel's home folder ("" for
// none).
func find(getenv func(string) string, homeDir string, sysDirs []string) (Library, error) {
	if _, err := withABIOverride(Library{}, getenv); err != nil { // a bad value is refused even with no library
		return Library{}, err
	}
	if p := getenv(envvar.MPILib.Name); p != "" {
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
		if lib, ok := inDir(p, "GOACCEL_MPI_LIB", libNames); ok {
			return withABIOverride(lib, getenv)
		}
		return Library{}, fmt.Errorf("mpi: find: GOACCEL_MPI_LIB=%s holds none of %s: %w", p, names(libNames), ErrNotFound)
	}
	type place struct{ dir, source string }
	var places []place
	mpichDir := "$GOACCEL_HOME/mpich"
	if homeDir != "" {
		places = append(places, place{home.MPILibDir(homeDir), "goaccel home"})
		mpichDir = filepath.Join(homeDir, home.MPICHSubdir)
	}
	for _, dir := range filepath.SplitList(getenv(envvar.LDLibraryPath.Name)) {
		if dir != "" {
			places = append(places, place{dir, "LD_LIBRARY_PATH"})
		}
	}
	ompi := getenv(envvar.OMPISize.Name)
	if ompi != "" {
		if bin := inPath(getenv(envvar.Path.Name), "mpirun"); bin != "" {
			places = append(places, place{filepath.Join(filepath.Dir(filepath.Dir(bin)), "lib"), "beside mpirun"})
		}
	}
	for _, pattern := range sysDirs {
		dirs, _ := filepath.Glob(pattern)
		if len(dirs) == 0 {
			places = append(places, place{pattern, "system"}) // named in the error
		}
		for _, dir := range dirs {
			places = append(places, place{dir, "system"})
		}
	}
	var looked []string
	for _, pl := range places {
		if !slices.Contains(looked, pl.dir) {
			looked = append(looked, pl.dir)
		}
	}
	search := func(ns []libName) (Library, bool) {
		for _, pl := range places {
			if lib, ok := inDir(pl.dir, pl.source, ns); ok {
				return lib, true
			}
		}
		return Library{}, false
	}
	if ompi != "" {
		if lib, ok := search(libNames[2:]); ok {
			return withABIOverride(lib, getenv)
		}
		return Library{}, fmt.Errorf("mpi: find: the process was started by Open MPI's mpirun (OMPI_COMM_WORLD_SIZE=%s) "+
			"but Open MPI's library (libmpi.so.40) is not in %s: %w that matches this launcher (another MPI would abort "+
			"inside MPI_Init); set GOACCEL_MPI_LIB to the libmpi.so.40 of that mpirun, or install Open MPI's library "+
			"(Debian/Ubuntu: apt-get install openmpi-bin)", ompi, strings.Join(looked, ", "), ErrNotFound)
	}
	for _, ns := range [][]libName{libNames[:2], libNames[2:]} {
		if lib, ok := search(ns); ok {
			return withABIOverride(lib, getenv)
		}
	}
	return Library{}, fmt.Errorf("mpi: find: %w (looked for %s in %s): %s",
		ErrNotFound, names(libNames), strings.Join(looked, ", "), installHint(mpichDir))
}

// inPath returns the first executable file named name in the directories of path ("" if none).
func inPath(path, name string) string {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				return real
			}
			return p
		}
	}
	return ""
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

// inDir returns the best library of dir among names.
func inDir(dir, source string, names []libName) (Library, bool) {
	for _, n := range names {
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
	v := getenv(envvar.MPIABI.Name)
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

func names(ns []libName) string {
	var s []string
	for _, n := range ns {
		s = append(s, n.name)
	}
	return strings.Join(s, ", ")
}
