package launch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/mpi"
)

// findMPI returns the MPI library the ranks will load (internal/mpi's Find: $GOACCEL_MPI_LIB,
// $GOACCEL_HOME/mpich, $LD_LIBRARY_PATH, the system folders), refusing Open MPI, whose
// ranks need its own launcher (PMIx) rather than this one's PMI-1 server. The errors say how
// to install MPICH or what to run instead.
func findMPI() (mpi.Library, error) {
	lib, err := mpi.Find()
	if errors.Is(err, mpi.ErrNotFound) {
		return lib, fmt.Errorf("several processes talk through MPI: %w", err) // says how to install it
	}
	if err != nil {
		return lib, fmt.Errorf("several processes talk through MPI: %w; install MPICH with `goaccel setup` (it runs pip install "+
			"mpich==5.0.2 into $GOACCEL_HOME/mpich), or set GOACCEL_MPI_LIB to an MPICH libmpi.so", err)
	}
	if lib.ABI == mpi.ABIOpenMPI {
		return lib, fmt.Errorf("the MPI library found is Open MPI's (%s, from %s): its ranks need Open MPI's own "+
			"launcher, so run `mpirun -n N PROGRAM` instead of goaccel launch (goaccel reads OMPI_COMM_WORLD_*), or set "+
			"GOACCEL_MPI_LIB to an MPICH library (`goaccel setup` installs one into $GOACCEL_HOME/mpich)", lib.Path, lib.Source)
	}
	return lib, nil
}

// mpiLibVars are the variables that let other MPI programs of the ranks load the library the
// launcher found (lib; "" for none), each set only where the rank's environment lacks it:
//   - MPI4PY_LIBMPI, for mpi4py 4: the MPICH-ABI libmpi.so.12 beside lib (mpi4py's wheels speak
//     MPICH's and Open MPI's ABIs, not the standard one that goaccel prefers), else lib itself;
//   - LD_LIBRARY_PATH gets lib's folder in front, for C and Fortran programs linked with
//     -lmpi, unless it lists that folder already.
func mpiLibVars(env []string, lib string) []string {
	if lib == "" {
		return env
	}
	if _, ok := lookup(env, envvar.MPI4PyLibMPI.Name); !ok {
		m := filepath.Join(filepath.Dir(lib), "libmpi.so.12")
		if _, err := os.Stat(m); err != nil {
			m = lib
		}
		env = setEnv(env, envvar.MPI4PyLibMPI.Name, m)
	}
	dir := filepath.Dir(lib)
	old, _ := lookup(env, envvar.LDLibraryPath.Name)
	if !slices.Contains(filepath.SplitList(old), dir) {
		if old != "" {
			dir += string(filepath.ListSeparator) + old
		}
		env = setEnv(env, envvar.LDLibraryPath.Name, dir)
	}
	return env
}
