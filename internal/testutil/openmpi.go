package testutil

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
)

// NeedOpenMPI is for a test that starts a program with Open MPI's own launcher: it returns the
// path of Open MPI's mpirun from $PATH, or skips the test with a line that starts with SKIPPING
// and says how to install it (Debian/Ubuntu: apt-get install openmpi-bin, which .ci/run does
// when it runs as root with apt-get) — except when the CI environment variable is set, where
// its absence fails the test.
func NeedOpenMPI(t testing.TB) string {
	t.Helper()
	msg := ""
	path, err := exec.LookPath("mpirun")
	if err != nil {
		msg = "no mpirun in $PATH"
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
		if v := string(out); err != nil || !strings.Contains(v, "Open MPI") {
			msg = path + " is not Open MPI's (" + strings.TrimSpace(strings.SplitN(v, "\n", 2)[0]) + ")"
		}
	}
	if msg == "" {
		return path
	}
	msg = "SKIPPING Open MPI test: " + msg + " (Debian/Ubuntu: apt-get install openmpi-bin; .ci/run installs it as root)"
	if envvar.CI.Value() != "" {
		t.Fatal("CI is set but " + msg)
	}
	t.Skip(msg)
	return ""
}
