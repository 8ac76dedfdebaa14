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
		"proj/.deps/mpich/lib/libmpi.so.12",
		"proj/.deps/mpich/lib/libmpi_abi.so.1",
		"proj/.deps/mpich/bin/mpiexec",
		"proj/sub/dir/.keep",
		"exe/.deps/mpich/lib/libmpi.so.12",
		"exe/bin/.keep",
		"ld1/.keep",
		"ld2/libmpi.so.40",
		"sys1/libmpi.so.12",
		"opt/vendor/lib/libmpi.so.40",
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
	cases := []struct {
		name     string
		env      map[string]string
		cwd, exe string
		sys      []string
		want     Library
		wantErr  string
	}{
		{"GOACCEL_MPI_LIB file wins over everything", map[string]string{"GOACCEL_MPI_LIB": at("custom/libmpi.so"), "LD_LIBRARY_PATH": at("ld2")},
			at("proj"), at("exe/bin/prog"), sys, Library{Path: at("custom/libmpi.so"), Source: "GOACCEL_MPI_LIB"}, ""},
		{"GOACCEL_MPI_LIB directory, with its mpiexec", map[string]string{"GOACCEL_MPI_LIB": at("explicitdir/lib")},
			at("proj"), "", sys, Library{Path: at("explicitdir/lib/libmpi.so.12"), ABI: ABIMPICH, Mpiexec: at("explicitdir/bin/mpiexec"), Source: "GOACCEL_MPI_LIB"}, ""},
		{"GOACCEL_MPI_LIB naming a linker script: the library it names", map[string]string{"GOACCEL_MPI_LIB": at("script/lib/libmpi.so")},
			at("proj"), "", sys, Library{Path: at("script/lib/libmpi.so.12"), ABI: ABIMPICH, Source: "GOACCEL_MPI_LIB"}, ""},
		{"GOACCEL_MPI_LIB missing is an error, not a fallback", map[string]string{"GOACCEL_MPI_LIB": at("gone/libmpi.so")},
			at("proj"), "", sys, Library{}, "GOACCEL_MPI_LIB=" + at("gone/libmpi.so")},
		{"GOACCEL_MPI_LIB directory without a library", map[string]string{"GOACCEL_MPI_LIB": at("nothing")},
			at("proj"), "", sys, Library{}, "holds none of libmpi_abi.so.1"},
		{".deps/mpich above the working directory; the standard ABI first", nil,
			at("proj/sub/dir"), at("exe/bin/prog"), sys, Library{Path: at("proj/.deps/mpich/lib/libmpi_abi.so.1"), ABI: ABIStandard, Mpiexec: at("proj/.deps/mpich/bin/mpiexec"), Source: ".deps/mpich"}, ""},
		{".deps/mpich above the executable", map[string]string{"LD_LIBRARY_PATH": at("ld2")},
			at("nothing"), at("exe/bin/prog"), sys, Library{Path: at("exe/.deps/mpich/lib/libmpi.so.12"), ABI: ABIMPICH, Source: ".deps/mpich"}, ""},
		{"LD_LIBRARY_PATH in order, before the system", map[string]string{"LD_LIBRARY_PATH": at("ld1") + "::" + at("ld2")},
			at("nothing"), at("nothing/prog"), sys, Library{Path: at("ld2/libmpi.so.40"), ABI: ABIOpenMPI, Source: "LD_LIBRARY_PATH"}, ""},
		{"system directories in order", nil,
			at("nothing"), "", sys, Library{Path: at("sys1/libmpi.so.12"), ABI: ABIMPICH, Source: "system"}, ""},
		{"system globs", nil,
			at("nothing"), "", []string{at("opt/*/lib")}, Library{Path: at("opt/vendor/lib/libmpi.so.40"), ABI: ABIOpenMPI, Source: "system"}, ""},
		{"GOACCEL_MPI_ABI overrides the name", map[string]string{"GOACCEL_MPI_ABI": "MPICH"},
			at("nothing"), "", []string{at("opt/*/lib")}, Library{Path: at("opt/vendor/lib/libmpi.so.40"), ABI: ABIMPICH, Source: "system"}, ""},
		{"bad GOACCEL_MPI_ABI", map[string]string{"GOACCEL_MPI_ABI": "lam"},
			at("nothing"), "", sys, Library{}, `GOACCEL_MPI_ABI="lam": want standard, mpich or openmpi`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := find(func(k string) string { return tc.env[k] }, tc.cwd, tc.exe, tc.sys)
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

// TestFindNothingSaysHowToInstall: the error names every way to get MPI.
func TestFindNothingSaysHowToInstall(t *testing.T) {
	root := t.TempDir()
	_, err := find(func(string) string { return "" }, root, filepath.Join(root, "prog"), []string{filepath.Join(root, "usr/lib")})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	for _, want := range []string{"make deps", "pip install --ignore-installed --prefix .deps/mpich mpich==5.0.2", "GOACCEL_MPI_LIB", root + "/.deps/mpich/lib"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
