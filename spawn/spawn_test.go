package spawn

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goaccel/goaccel/internal/testutil"
)

// asProgram, set in the test binary's environment, makes it a program whose main starts with
// spawn.Ranks(): each rank prints its place and does what $spawnTestRole says.
const asProgram = "GOACCEL_SPAWN_TEST_PROGRAM"

func TestMain(m *testing.M) {
	if os.Getenv(asProgram) == "1" {
		program()
	}
	os.Exit(m.Run())
}

// program is the test's user program: spawn.Ranks() first, then the rank's work: rank 1 of
// "fail" exits 3; every rank of "wait" prints "ready" and waits to be stopped.
func program() {
	Ranks()
	fmt.Printf("rank %s of %s pid %d args %q arg0 %s\n", os.Getenv("RANK"), os.Getenv("WORLD_SIZE"), os.Getpid(),
		os.Args[1:], filepath.Base(os.Args[0]))
	switch os.Getenv("GOACCEL_SPAWN_TEST_ROLE") {
	case "fail":
		if os.Getenv("RANK") == "1" {
			fmt.Fprintln(os.Stderr, "rank 1 fails on purpose")
			os.Exit(3)
		}
	case "wait":
		fmt.Println("ready")
		select {}
	}
	os.Exit(0)
}

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		args, env  []string
		cfg        Config
		nproc, max int
		rest       []string
		notice     string
		err        string
	}{
		{args: []string{"--epochs", "3"}, rest: []string{"--epochs", "3"}},
		{args: []string{"--nproc", "4", "--oversubscribe", "--epochs", "3"}, nproc: 4, rest: []string{"--epochs", "3"}}, // 4 ranks on CI's 2 cores
		{args: []string{"--epochs=3", "--nproc_per_node=2"}, nproc: 2, rest: []string{"--epochs=3"}},
		{args: []string{"-nprocs", "2", "--max-restarts", "1"}, nproc: 2, max: 1, rest: []string{}},
		{args: []string{"--nproc-per-node", "auto"}, env: []string{"CUDA_VISIBLE_DEVICES="}, nproc: runtime.NumCPU(), rest: []string{}},
		{args: []string{"--nproc", "cpu"}, env: []string{"CUDA_VISIBLE_DEVICES=0,1"}, nproc: runtime.NumCPU(), rest: []string{}},
		{args: []string{"x", "--", "--nproc", "4"}, rest: []string{"x", "--", "--nproc", "4"}},
		{args: []string{"nproc", "4"}, rest: []string{"nproc", "4"}},
		{cfg: Config{Nproc: 3, Oversubscribe: true}, args: []string{"--nproc", "4"}, nproc: 3, rest: []string{}},
		{args: []string{"--nproc", "4"}, env: []string{"RANK=0", "WORLD_SIZE=4"}, rest: []string{},
			notice: "--nproc 4 ignored: this process is already a rank (RANK=0 (set by torchrun, goaccel launch))"},
		{args: []string{"--nproc", "4"}, env: []string{"RANK=2", "WORLD_SIZE=4"}, rest: []string{}},
		{args: []string{"--nproc=2"}, env: []string{"OMPI_COMM_WORLD_RANK=0"}, rest: []string{}, notice: "--nproc 2 ignored"},
		{args: []string{"--nproc", "2"}, env: []string{"PMI_FD=7"}, rest: []string{}, notice: "PMI_FD=7"},
		{args: []string{"--nproc", "2"}, env: []string{"SLURM_STEP_ID=0", "SLURM_PROCID=0"}, rest: []string{}, notice: "SLURM_PROCID=0"},
		{args: []string{"--nproc", "2"}, env: []string{"SLURM_STEP_ID=0", "SLURM_PROCID=1"}, rest: []string{}},
		// An sbatch script has SLURM_PROCID=0 and SLURM_NTASKS but no step: it is no rank (Slurm 22.05).
		{args: []string{"--nproc", "2"}, env: []string{"SLURM_PROCID=0", "SLURM_NTASKS=2"}, nproc: 2, rest: []string{}},
		{cfg: Config{Nproc: 2}, env: []string{"RANK=1", "WORLD_SIZE=2"}},
		{args: []string{"--nproc", "zero"}, err: `--nproc "zero": want a positive number, gpu, cpu or auto`},
		{args: []string{"--nprocs=0"}, err: `--nprocs "0": want a positive number`},
		{args: []string{"--nproc"}, err: "--nproc needs a value"},
		{args: []string{"--max_restarts", "-1"}, err: `--max_restarts "-1": want 0 or more`},
	} {
		d, err := plan(tc.args, tc.env, tc.cfg)
		name := fmt.Sprintf("plan(%q, %q, %+v)", tc.args, tc.env, tc.cfg)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one with %q", name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if d.nproc != tc.nproc || d.maxRestarts != tc.max || len(d.args)+len(tc.rest) > 0 && !reflect.DeepEqual(d.args, tc.rest) {
			t.Errorf("%s = nproc %d, max_restarts %d, args %q; want %d, %d, %q", name, d.nproc, d.maxRestarts, d.args, tc.nproc, tc.max, tc.rest)
		}
		if (tc.notice == "") != (d.notice == "") || !strings.Contains(d.notice, tc.notice) {
			t.Errorf("%s: notice %q, want one with %q", name, d.notice, tc.notice)
		}
	}
}

// programCmd is the test binary run as the program with args and role.
func programCmd(t *testing.T, role string, args ...string) (*exec.Cmd, *testutil.SyncBuffer, *testutil.SyncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	// TMPDIR: a failed job's default log folder stays in the test's own folder.
	cmd.Env = append(os.Environ(), asProgram+"=1", "GOACCEL_SPAWN_TEST_ROLE="+role, "TMPDIR="+t.TempDir())
	out, errOut := &testutil.SyncBuffer{}, &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, errOut
	return cmd, out, errOut
}

// TestRanksRunAndFailNamed: `program --nproc 2 --flag x` runs two ranks of the program with
// RANK and WORLD_SIZE and the arguments less --nproc; when rank 1 exits 3, the process exits
// 1 naming rank 1, its exit code and its log, as goaccel launch does.
func TestRanksRunAndFailNamed(t *testing.T) {
	testutil.NeedMPI(t)
	cmd, out, errOut := programCmd(t, "ok", "--flag", "x", "--nproc", "2")
	cmd.Env = append(cmd.Env, "GOACCEL_DEVICES=2")
	if err := cmd.Run(); err != nil {
		t.Fatalf("program --nproc 2: %v\n%s%s", err, out, errOut)
	}
	if want := `[rank 0] rank 0 of 2 pid`; !strings.Contains(out.String(), want) || !strings.Contains(out.String(), `args ["--flag" "x"] arg0 spawn.test`) {
		t.Errorf("rank 0's line: want %q with the arguments less --nproc and its own os.Args[0]:\n%s", want, out)
	}
	t.Logf("ok run:\n%s%s", out, errOut)

	cmd, out, errOut = programCmd(t, "fail", "--nproc=2", "--max_restarts", "1")
	cmd.Env = append(cmd.Env, "GOACCEL_DEVICES=2")
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("a failing rank: %v, want exit status 1\n%s%s", err, out, errOut)
	}
	for _, want := range []string{"rank 1 (node_rank 0", "failed first: exit code 3", "rank 1 fails on purpose",
		"restarting the group (restart 1 of 1)", "(after 1 restart(s))"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	t.Logf("failing run:\n%s", errOut)
}

// TestRanksCtrlC: SIGINT to the program that spawned its ranks stops every rank and ends it
// with status 130.
func TestRanksCtrlC(t *testing.T) {
	testutil.NeedMPI(t)
	cmd, out, errOut := programCmd(t, "wait", "--nproc", "2")
	cmd.Env = append(cmd.Env, "GOACCEL_DEVICES=2")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Rank 0's "ready" reaches the terminal; rank 1's log folder is named on stderr.
	deadline := time.Now().Add(2 * time.Minute)
	var pids []int
	for len(pids) < 2 {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the ranks did not start:\n%s%s", out, errOut)
		}
		time.Sleep(50 * time.Millisecond)
		pids = rankPIDs(t, errOut.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("after SIGINT: %v, want exit status 130\n%s%s", err, out, errOut)
	}
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("rank pid %d still runs after the program ended", pid)
		}
	}
}

// rankPIDs reads the pids of the ranks that said "ready" in their logs, whose folder the
// launcher's stderr names ("every rank's output is in DIR/attempt_0/rank_N/").
func rankPIDs(t *testing.T, stderr string) []int {
	_, after, ok := strings.Cut(stderr, "every rank's output is in ")
	if !ok {
		return nil
	}
	dir, _, _ := strings.Cut(after, "/rank_N/")
	var pids []int
	for r := range 2 {
		b, _ := os.ReadFile(filepath.Join(dir, "rank_"+strconv.Itoa(r), "stdout.log"))
		var pid int
		for _, line := range strings.Split(string(b), "\n") {
			if _, p, ok := strings.Cut(line, " pid "); ok {
				pid, _ = strconv.Atoi(strings.Fields(p)[0])
			}
		}
		if pid == 0 || !strings.Contains(string(b), "ready") {
			return nil
		}
		pids = append(pids, pid)
	}
	return pids
}
