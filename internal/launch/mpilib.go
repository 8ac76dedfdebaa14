package launch

import (
	"fmt"
	"os"
	"path/filepath"
)

// MPIInstallHint says how to get an MPI library; it ends the error of FindMPI.
const MPIInstallHint = "several processes talk through MPI, and no MPI library was found. Install MPICH " +
	"project-locally with `make deps` (or: pip install --ignore-installed --no-warn-script-location " +
	"--prefix .deps/mpich mpich==5.0.2), or point GOACCEL_MPI_LIB at a libmpi.so (MPICH's libmpi.so.12 " +
	"or libmpi_abi.so.1). Under Open MPI or Slurm, start the program with mpirun or srun instead of goaccel launch"

// mpiNames are the MPICH libraries the launcher's PMI server can start, best first.
var mpiNames = []string{"libmpi.so.12", "libmpi_abi.so.1"}

// FindMPI returns the MPICH library the ranks will load: $GOACCEL_MPI_LIB when set (it must
// exist), else .deps/mpich/lib/ in the working directory, the program's directory or the
// launcher's, or one of their parents (a goaccel checkout after `make deps`), else the usual
// system folders. The error says how to install it.
func FindMPI(env []string, program string) (string, error) {
	if p, ok := lookup(env, "GOACCEL_MPI_LIB"); ok && p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("GOACCEL_MPI_LIB=%s: %w; %s", p, err, MPIInstallHint)
		}
		return p, nil
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if p, err := filepath.Abs(program); err == nil {
		starts = append(starts, filepath.Dir(p))
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	var dirs []string
	for _, s := range starts {
		for d := s; ; d = filepath.Dir(d) {
			dirs = append(dirs, filepath.Join(d, ".deps", "mpich", "lib"))
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	dirs = append(dirs, "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64/mpich/lib",
		"/usr/lib/mpich/lib", "/usr/local/lib", "/opt/mpich/lib")
	for _, d := range dirs {
		for _, name := range mpiNames {
			p := filepath.Join(d, name)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%s", MPIInstallHint)
}
