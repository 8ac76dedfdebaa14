package mpi

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// touch creates the files (and their directories) under root.
func touch(t *testing.T, root string, files ...string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFindSearchOrder(t *testing.T) {
	root := t.TempDir()
	touch(t, root,
		"home/mpich/lib/libmpi.so.12",
		"home/mpich/lib/libmpi_abi.so.1",
		"home/mpich/bin/mpiexec",
		"emptyhome/.keep",
		"ld1/.keep",
		"ld2/libmpi.so.40",
		"ld3/libmpi.so.12",
		"sys1/libmpi.so.12",
		"sysompi/libmpi.so.40",
		"opt/vendor/lib/libmpi.so.40",
		"ompi/bin/mpirun",
		"ompi/lib/libmpi.so.40",
		"custom/libmpi.so",
		"explicitdir/lib/libmpi.so.12",
		"explicitdir/bin/mpiexec",
		"nothing/.keep",
		"script/lib/libmpi.so.12",
	)
	if err := os.WriteFile(filepath.Join(root, "script/lib/libmpi.so"), []byte("INPUT(libmpi.so.12)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	at := func(p string) string { return filepath.Join(root, p) }
	sys := []string{at("nothing"), at("sys1"), at("opt/*/lib")}
	ompiSys := []string{at("nothing"), at("sysompi"), at("sys1")}
	cases := []struct {
		name    string
		env     map[string]string
		home    string
		sys     []string
		want    Library
		wantErr string
	}{
		{"GOACCEL_MPI_LIB file wins over everything", map[string]string{"GOACCEL_MPI_LIB": at("custom/libmpi.so"), "LD_LIBRARY_PATH": at("ld2")},
			at("home"), sys, Library{Path: at("custom/libmpi.so"), Source: "GOACCEL_MPI_LIB"}, ""},
		{"GOACCEL_MPI_LIB directory, with its mpiexec", map[string]string{"GOACCEL_MPI_LIB": at("explicitdir/lib")},
			at("home"), sys, Library{Path: at("explicitdir/lib/libmpi.so.12"), ABI: ABIMPICH, Mpiexec: at("explicitdir/bin/mpiexec"), Source: "GOACCEL_MPI_LIB"}, ""},
		{"GOACCEL_MPI_LIB naming a linker script: the library it names", map[string]string{"GOACCEL_MPI_LIB": at("script/lib/libmpi.so")},
			at("home"), sys, Library{Path: at("script/lib/libmpi.so.12"), ABI: ABIMPICH, Source: "GOACCEL_MPI_LIB"}, ""},
		{"GOACCEL_MPI_LIB missing is an error, not a fallback", map[string]string{"GOACCEL_MPI_LIB": at("gone/libmpi.so")},
			at("home"), sys, Library{}, "GOACCEL_MPI_LIB=" + at("gone/libmpi.so")},
		{"GOACCEL_MPI_LIB directory without a library", map[string]string{"GOACCEL_MPI_LIB": at("nothing")},
			at("home"), sys, Library{}, "holds none of libmpi_abi.so.1"},
		{"goaccel home, before LD_LIBRARY_PATH; the standard ABI first", map[string]string{"LD_LIBRARY_PATH": at("ld3")},
			at("home"), sys, Library{Path: at("home/mpich/lib/libmpi_abi.so.1"), ABI: ABIStandard, Mpiexec: at("home/mpich/bin/mpiexec"), Source: "goaccel home"}, ""},
		{"LD_LIBRARY_PATH in order, before the system", map[string]string{"LD_LIBRARY_PATH": at("ld1") + "::" + at("ld3")},
			at("emptyhome"), sys, Library{Path: at("ld3/libmpi.so.12"), ABI: ABIMPICH, Source: "LD_LIBRARY_PATH"}, ""},
		{"MPICH in any place before Open MPI", map[string]string{"LD_LIBRARY_PATH": at("ld2")},
			at("emptyhome"), sys, Library{Path: at("sys1/libmpi.so.12"), ABI: ABIMPICH, Source: "system"}, ""},
		{"system directories in order", nil,
			"", sys, Library{Path: at("sys1/libmpi.so.12"), ABI: ABIMPICH, Source: "system"}, ""},
		{"system globs; Open MPI when nothing else is there", nil,
			"", []string{at("opt/*/lib")}, Library{Path: at("opt/vendor/lib/libmpi.so.40"), ABI: ABIOpenMPI, Source: "system"}, ""},
		{"under Open MPI's mpirun, its library, not goaccel home's MPICH", map[string]string{"OMPI_COMM_WORLD_SIZE": "2", "LD_LIBRARY_PATH": at("ld3")},
			at("home"), ompiSys, Library{Path: at("sysompi/libmpi.so.40"), ABI: ABIOpenMPI, Source: "system"}, ""},
		{"under Open MPI's mpirun, the library beside the mpirun of PATH", map[string]string{"OMPI_COMM_WORLD_SIZE": "2", "PATH": at("nothing") + ":" + at("ompi/bin")},
			at("home"), ompiSys, Library{Path: at("ompi/lib/libmpi.so.40"), ABI: ABIOpenMPI, Source: "beside mpirun"}, ""},
		{"under Open MPI's mpirun, GOACCEL_MPI_LIB still wins", map[string]string{"OMPI_COMM_WORLD_SIZE": "2", "GOACCEL_MPI_LIB": at("explicitdir/lib")},
			at("home"), ompiSys, Library{Path: at("explicitdir/lib/libmpi.so.12"), ABI: ABIMPICH, Mpiexec: at("explicitdir/bin/mpiexec"), Source: "GOACCEL_MPI_LIB"}, ""},
		{"under Open MPI's mpirun without Open MPI's library: an error naming GOACCEL_MPI_LIB", map[string]string{"OMPI_COMM_WORLD_SIZE": "2", "LD_LIBRARY_PATH": at("ld3")},
			at("home"), []string{at("nothing"), at("sys1")}, Library{}, "started by Open MPI's mpirun (OMPI_COMM_WORLD_SIZE=2) but Open MPI's library (libmpi.so.40) is not in " +
				at("home/mpich/lib") + ", " + at("ld3")},
		{"GOACCEL_MPI_ABI overrides the name", map[string]string{"GOACCEL_MPI_ABI": "MPICH"},
			"", []string{at("opt/*/lib")}, Library{Path: at("opt/vendor/lib/libmpi.so.40"), ABI: ABIMPICH, Source: "system"}, ""},
		{"bad GOACCEL_MPI_ABI", map[string]string{"GOACCEL_MPI_ABI": "lam"},
			"", sys, Library{}, `GOACCEL_MPI_ABI="lam": want standard, mpich or openmpi`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := find(func(k string) string { return tc.env[k] }, tc.home, tc.sys)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestFindUnderOpenMPI: in a process that Open MPI's mpirun started, Find returns Open MPI's
// library even where an MPICH comes first; without one, the error wraps ErrNotFound and names
// GOACCEL_MPI_LIB. (MPICH under Open MPI's mpirun aborts inside MPI_Init with "unsupported PMI
// version PMIx".)
func TestFindUnderOpenMPI(t *testing.T) {
	root := t.TempDir()
	touch(t, root, "mpich/lib/libmpi_abi.so.1", "ompi/lib/libmpi.so.40")
	t.Setenv("GOACCEL_MPI_LIB", "")
	t.Setenv("GOACCEL_MPI_ABI", "")
	t.Setenv("GOACCEL_HOME", filepath.Join(root, "nohome"))
	t.Setenv("OMPI_COMM_WORLD_SIZE", "2")
	t.Setenv("LD_LIBRARY_PATH", filepath.Join(root, "mpich/lib")+":"+filepath.Join(root, "ompi/lib"))
	lib, err := Find()
	if err != nil || lib.Path != filepath.Join(root, "ompi/lib/libmpi.so.40") || lib.ABI != ABIOpenMPI {
		t.Errorf("under Open MPI: Find() = %+v, %v; want %s", lib, err, filepath.Join(root, "ompi/lib/libmpi.so.40"))
	}
	t.Setenv("LD_LIBRARY_PATH", filepath.Join(root, "mpich/lib"))
	if lib, err := Find(); err == nil {
		if lib.ABI != ABIOpenMPI {
			t.Errorf("under Open MPI without Open MPI's library (unless the system has one): Find() = %+v, want an error", lib)
		}
	} else if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "GOACCEL_MPI_LIB") || !strings.Contains(err.Error(), "Open MPI") {
		t.Errorf("error %v: want ErrNotFound, naming Open MPI and GOACCEL_MPI_LIB", err)
	}
}

// TestFindIgnoresTheCheckout: an MPICH in a .deps/mpich of the working directory (what `make
// deps` used to fill, found by climbing to go.mod) is not used: only GOACCEL_HOME is.
func TestFindIgnoresTheCheckout(t *testing.T) {
	root := t.TempDir()
	touch(t, root, "mod/go.mod", "mod/.deps/mpich/lib/libmpi_abi.so.1", "mod/sub/.keep", "home/mpich/lib/libmpi_abi.so.1")
	t.Setenv("GOACCEL_MPI_LIB", "")
	t.Setenv("GOACCEL_MPI_ABI", "")
	t.Setenv("OMPI_COMM_WORLD_SIZE", "")
	t.Setenv("LD_LIBRARY_PATH", "")
	t.Chdir(filepath.Join(root, "mod", "sub"))
	t.Setenv("GOACCEL_HOME", filepath.Join(root, "nohome"))
	if lib, err := Find(); err == nil && strings.HasPrefix(lib.Path, filepath.Join(root, "mod")) {
		t.Errorf("Find() = %+v: the checkout's .deps was used", lib)
	}
	t.Setenv("GOACCEL_HOME", filepath.Join(root, "home"))
	if lib, err := Find(); err != nil || lib.Path != filepath.Join(root, "home/mpich/lib/libmpi_abi.so.1") || lib.Source != "goaccel home" {
		t.Errorf("with GOACCEL_HOME: Find() = %+v, %v", lib, err)
	}
}

// TestFindNothingSaysHowToInstall: the error names every way to get MPI.
func TestFindNothingSaysHowToInstall(t *testing.T) {
	root := t.TempDir()
	_, err := find(func(string) string { return "" }, root, []string{filepath.Join(root, "usr/lib")})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	for _, want := range []string{"goaccel setup", "pip install mpich==5.0.2 into " + root + "/mpich", "go get -tool github.com/goaccel/goaccel/cmd/goaccel",
		"go tool goaccel setup", "GOACCEL_MPI_LIB", root + "/mpich/lib"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
