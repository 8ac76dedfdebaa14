package launch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// pythonWith returns a Python that imports module, or skips the test loudly; with failInCI
// the absence fails under CI=true instead (a package that `make deps` installs).
func pythonWith(t *testing.T, python, module string, failInCI bool) string {
	t.Helper()
	path, err := exec.LookPath(python)
	if err == nil {
		var out []byte
		out, err = exec.Command(path, "-c", "import "+module).CombinedOutput()
		if err != nil {
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			err = fmt.Errorf("%s -c 'import %s': %s", path, module, lines[len(lines)-1])
		}
	}
	if err != nil {
		if failInCI && os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s cannot import %s (make deps installs it into .deps/python): %v", python, module, err)
		}
		t.Skipf("SKIPPING: %s cannot import %s: %v", python, module, err)
	}
	return path
}

// runLauncher runs the test binary as `goaccel launch ARGS` and returns its exit code and output.
func runLauncher(t *testing.T, timeout time.Duration, args ...string) (int, string) {
	t.Helper()
	return runLauncherEnv(t, timeout, nil, args...)
}

// runLauncherEnv is runLauncher with the launcher's environment changed by edit (nil: none).
func runLauncherEnv(t *testing.T, timeout time.Duration, edit func([]string) []string, args ...string) (int, string) {
	t.Helper()
	cmd, _, out := launcherCmd(t, "none", args...)
	cmd.Env = removeKey(cmd.Env, workerSwitch)
	if edit != nil {
		cmd.Env = edit(cmd.Env)
	}
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("goaccel launch %s did not end within %s\n%s", strings.Join(args, " "), timeout, out)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// mpi4pyAllreduce all-reduces rank+1 with mpi4py and checks the sum on every rank.
const mpi4pyAllreduce = `
import os, sys
from mpi4py import MPI
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
total = comm.allreduce(rank + 1, op=MPI.SUM)
print("mpi4py rank %d of %d: allreduce %d" % (rank, size, total), flush=True)
sys.exit(0 if total == size * (size + 1) // 2 and str(rank) == os.environ["RANK"] else 1)
`

// An mpi4py program runs under goaccel launch -np 2 as it does under mpiexec: the launcher
// tells mpi4py which MPI library to load (MPI4PY_LIBMPI).
func TestMPI4PyAllreduce(t *testing.T) {
	needMPI(t)
	python := pythonWith(t, "python3", "mpi4py", true)
	code, out := runLauncher(t, time.Minute, "-np", "2", "--tee", "3", python, "-c", mpi4pyAllreduce)
	if code != 0 {
		t.Fatalf("exit code %d, want 0\n%s", code, out)
	}
	for _, want := range []string{"[rank 0] mpi4py rank 0 of 2: allreduce 3", "[rank 1] mpi4py rank 1 of 2: allreduce 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("output misses %q:\n%s", want, out)
		}
	}
}

// mpi4pyOneRank prints what an mpi4py rank of a one-rank job sees.
const mpi4pyOneRank = `
import os
from mpi4py import MPI
comm = MPI.COMM_WORLD
print("mpi4py rank %d of %d; MPI4PY_LIBMPI=%s" % (comm.Get_rank(), comm.Get_size(), os.environ.get("MPI4PY_LIBMPI", "")), flush=True)
`

// An mpi4py program that runs at -np 2 runs at -np 1 too: the launcher finds MPI for one rank
// as well, and gives it MPI4PY_LIBMPI and LD_LIBRARY_PATH (it gave none before, so mpi4py
// failed with "cannot load MPI library").
func TestMPI4PyOneRank(t *testing.T) {
	needMPI(t)
	python := pythonWith(t, "python3", "mpi4py", true)
	noLibmpi := func(env []string) []string { return removeKey(env, "MPI4PY_LIBMPI") }
	code, out := runLauncherEnv(t, time.Minute, noLibmpi, "-np", "1", python, "-c", mpi4pyOneRank)
	if code != 0 || !strings.Contains(out, "mpi4py rank 0 of 1; MPI4PY_LIBMPI=/") {
		t.Fatalf("exit code %d, want 0 and a rank with MPI4PY_LIBMPI set\n%s", code, out)
	}
}

// Without any MPI library, a one-rank job still starts, with no word about MPI.
func TestOneRankWithoutMPI(t *testing.T) {
	empty := t.TempDir()
	noMPI := func(env []string) []string {
		for _, k := range []string{"GOACCEL_MPI_LIB", "LD_LIBRARY_PATH", "GOACCEL_HOME", "MPI4PY_LIBMPI"} {
			env = removeKey(env, k)
		}
		return append(env, "GOACCEL_HOME="+empty)
	}
	code, out := runLauncherEnv(t, time.Minute, noMPI, "-np", "1", "sh", "-c", "echo MPI4PY_LIBMPI=$MPI4PY_LIBMPI")
	if code != 0 || strings.Contains(out, "MPI library") || !strings.Contains(out, "MPI4PY_LIBMPI=") {
		t.Fatalf("exit code %d, want 0 with no word about MPI\n%s", code, out)
	}
}

// mpi4pySpawn calls MPI_Comm_spawn (MPICH sends PMI's multi-line "mcmd=spawn ... endcmd"),
// which goaccel launch refuses; the program catches the error and exits 4, after MPI_Finalize
// (at exit), which needs a PMI connection still in step.
const mpi4pySpawn = `
import sys
from mpi4py import MPI
try:
    MPI.COMM_SELF.Spawn(sys.executable, args=["-c", "pass"], maxprocs=1)
    print("spawn succeeded", flush=True)
except MPI.Exception as e:
    print("spawn refused: %s" % e.Get_error_string().splitlines()[0], flush=True)
MPI.COMM_WORLD.Barrier()
sys.exit(4)
`

func TestMPISpawnRefused(t *testing.T) {
	needMPI(t)
	python := pythonWith(t, "python3", "mpi4py", true)
	code, out := runLauncher(t, time.Minute, "-np", "2", "--tee", "3", python, "-c", mpi4pySpawn)
	if code != 1 || !strings.Contains(out, "failed first: exit code 4") {
		t.Errorf("exit code %d, want 1 with the rank's exit code 4 named\n%s", code, out)
	}
	if !strings.Contains(out, "called MPI_Comm_spawn (of ") || !strings.Contains(out, "): goaccel launch does not support it") {
		t.Errorf("the launcher does not say that spawn is not supported:\n%s", out)
	}
	if !strings.Contains(out, "spawn refused") {
		t.Errorf("the program did not see spawn fail:\n%s", out)
	}
}

// The real thing: a PyTorch DDP script (init_process_group("gloo")) under goaccel launch prints
// the same losses as under torchrun. torch is not a test dependency (6 GB):
// GOACCEL_TEST_TORCH_PYTHON names a Python with torch (default python3), and without one the
// test is skipped, loudly, also under CI.
func TestTorchDDPMatchesTorchrun(t *testing.T) {
	python := os.Getenv("GOACCEL_TEST_TORCH_PYTHON")
	if python == "" {
		python = "python3"
	}
	python = pythonWith(t, python, "torch", false)
	script, err := filepath.Abs(filepath.Join("testdata", "ddp.py"))
	if err != nil {
		t.Fatal(err)
	}
	losses := regexp.MustCompile(`step \d+ loss [0-9.]+`)
	torchrun := exec.Command(python, "-m", "torch.distributed.run", "--nproc_per_node", "2", script)
	torchrun.Dir = t.TempDir()
	raw, err := torchrun.CombinedOutput()
	if err != nil {
		t.Fatalf("torchrun: %v\n%s", err, raw)
	}
	want := losses.FindAllString(string(raw), -1)
	code, out := runLauncher(t, 5*time.Minute, "--nproc_per_node", "2", "--no_mpi_check", python, script)
	if code != 0 {
		t.Fatalf("goaccel launch: exit code %d\n%s", code, out)
	}
	got := losses.FindAllString(out, -1)
	t.Logf("torchrun:       %s", strings.Join(want, "; "))
	t.Logf("goaccel launch: %s", strings.Join(got, "; "))
	if len(want) != 5 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("goaccel launch's losses differ from torchrun's:\n%s\ntorchrun's output:\n%s", out, raw)
	}
}
