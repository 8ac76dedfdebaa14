// Package home is goaccel's install folder: where `goaccel setup` puts XLA's CPU plugin and
// MPICH, and where the plugin and MPI discovery look for them after the explicit variables
// (PJRT_PLUGIN_LIBRARY_PATH, GOACCEL_MPI_LIB) and before the system's usual places.
//
// The folder is $GOACCEL_HOME, else $XDG_DATA_HOME/goaccel, else ~/.local/share/goaccel. It
// holds:
//
//	pjrt-cpu/lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so   XLA's CPU PJRT plugin (pip --target)
//	mpich/lib/libmpi_abi.so.1, mpich/bin/mpiexec            MPICH (pip --prefix)
//
// Nothing here knows about goaccel's own repository: a user's module and this repository
// find the same folder the same way.
package home

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/goaccel/goaccel/internal/envvar"
)

// EnvVar names the variable that chooses the folder.
const EnvVar = "GOACCEL_HOME" // envvar.Home

// The sub-folders of the home folder that discovery reads.
const (
	// PluginSubdir holds one folder per pip package of PJRT plugins (pip --target).
	PluginSubdir = "pjrt-cpu"
	// MPICHSubdir is the pip --prefix of MPICH: lib/ and bin/ below it.
	MPICHSubdir = "mpich"
)

// Dir returns the home folder, absolute, and where it comes from ("$GOACCEL_HOME",
// "$XDG_DATA_HOME/goaccel" or "~/.local/share/goaccel"). The folder need not exist. A relative
// $GOACCEL_HOME is taken from the working directory; a relative $XDG_DATA_HOME is ignored, as
// the XDG specification says.
func Dir() (dir, from string, err error) {
	if d := envvar.Home.Value(); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			return "", "", fmt.Errorf("home: dir: $%s=%s: %w", EnvVar, d, err)
		}
		return abs, "$" + EnvVar, nil
	}
	if x := envvar.XDGDataHome.Value(); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "goaccel"), "$XDG_DATA_HOME/goaccel", nil
	}
	h, err := os.UserHomeDir()
	if err != nil || h == "" {
		return "", "", errors.New("home: dir: neither $GOACCEL_HOME, $XDG_DATA_HOME nor $HOME is set")
	}
	return filepath.Join(h, ".local", "share", "goaccel"), "~/.local/share/goaccel", nil
}

// PluginDirs returns the package folders dir/pjrt-cpu/*/ that exist, sorted.
func PluginDirs(dir string) []string {
	matches, _ := filepath.Glob(filepath.Join(dir, PluginSubdir, "*"))
	slices.Sort(matches)
	var dirs []string
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && st.IsDir() {
			dirs = append(dirs, m)
		}
	}
	return dirs
}

// MPILibDir returns dir/mpich/lib, where `goaccel setup` puts MPICH's libraries.
func MPILibDir(dir string) string { return filepath.Join(dir, MPICHSubdir, "lib") }
