package launch

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the launcher's writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testJob is a Config running the test binary as worker mode, with its output captured.
func testJob(t *testing.T, mode string, nproc int, extraEnv ...string) (Config, string, *syncBuffer) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	env := removeKey(os.Environ(), launcherSwitch)
	env = append(env, workerSwitch+"="+mode, dirVar+"="+dir)
	env = append(env, extraEnv...)
	out := &syncBuffer{}
	return Config{Program: self, NprocPerNode: nproc, Env: env, LogDir: filepath.Join(dir, "logs"),
		Stdout: out, Stderr: out, StopGrace: time.Second, JoinTimeout: 20 * time.Second, Secret: testSecret}, dir, out
}

func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		m[k] = v
	}
	return m
}

func TestAllRanksExitZero(t *testing.T) {
	cfg, dir, out := testJob(t, "env", 2, "GOACCEL_DEVICES=4")
	cfg.Env = removeKey(removeKey(removeKey(cfg.Env, "GOMAXPROCS"), "OMP_NUM_THREADS"), "CUDA_VISIBLE_DEVICES")
	cfg.Env = append(cfg.Env, "CUDA_VISIBLE_DEVICES=")
	if err := Run(context.Background(), cfg); err != nil {
		t.Fatalf("Run: %v\n%s", err, out)
	}
	threads := strconv.Itoa(max(1, runtime.NumCPU()/2))
	for rank := 0; rank < 2; rank++ {
		env := readEnvFile(t, filepath.Join(dir, "env_"+strconv.Itoa(rank)))
		want := map[string]string{"RANK": strconv.Itoa(rank), "LOCAL_RANK": strconv.Itoa(rank), "WORLD_SIZE": "2",
			"LOCAL_WORLD_SIZE": "2", "NODE_RANK": "0", "GROUP_RANK": "0", "MASTER_ADDR": "127.0.0.1",
			"GOACCEL_DEVICES": "2", "GOMAXPROCS": threads, "OMP_NUM_THREADS": threads, "PMI_FD": "3", "PMI_RANK": strconv.Itoa(rank),
			"PMI_SIZE": "2", "MPI_LOCALRANKID": strconv.Itoa(rank), "MPIR_CVAR_BCAST_POSIX_INTRA_ALGORITHM": "mpir",
			"GOACCEL_RESTART_COUNT": "0"}
		for k, v := range want {
			if env[k] != v {
				t.Errorf("rank %d: %s=%q, want %q", rank, k, env[k], v)
			}
		}
		if cpus := cpuShares(2); cpus != nil && (env["GOACCEL_CPUS"] != cpuList(cpus[rank]) || env["allowed_cpus"] != cpuList(cpus[rank])) {
			t.Errorf("rank %d: bound to %q (GOACCEL_CPUS=%q), want %q", rank, env["allowed_cpus"], env["GOACCEL_CPUS"], cpuList(cpus[rank]))
		}
		// PMI on the inherited socket only: the master's port is for launchers.
		if env["PMI_PORT"] != "<unset>" || env["PMI_ID"] != "<unset>" || env["GOACCEL_JOB_SECRET"] != "<unset>" || env["MASTER_PORT"] == "" {
			t.Errorf("rank %d: PMI_PORT=%q PMI_ID=%q GOACCEL_JOB_SECRET=%q MASTER_PORT=%q", rank, env["PMI_PORT"], env["PMI_ID"],
				env["GOACCEL_JOB_SECRET"], env["MASTER_PORT"])
		}
		if _, err := os.Stat(filepath.Join(cfg.LogDir, "attempt_0", "rank_"+strconv.Itoa(rank), "stdout.log")); err != nil {
			t.Errorf("rank %d log: %v", rank, err)
		}
	}
	// Default output: rank 0 only, prefixed.
	if s := out.String(); !strings.Contains(s, "[rank 0] worker 0 of 2 starting") || strings.Contains(s, "worker 1 of") {
		t.Errorf("terminal output should show rank 0 only, prefixed:\n%s", s)
	}
}

func TestTeeShowsEveryRank(t *testing.T) {
	cfg, _, out := testJob(t, "env", 3, "GOACCEL_DEVICES=3")
	cfg.Tee = 1
	if err := Run(context.Background(), cfg); err != nil {
		t.Fatalf("Run: %v\n%s", err, out)
	}
	s := out.String()
	for r := 0; r < 3; r++ {
		if !strings.Contains(s, "[rank "+strconv.Itoa(r)+"] worker "+strconv.Itoa(r)+" of 3 starting") {
			t.Errorf("--tee 1 misses rank %d's stdout:\n%s", r, s)
		}
	}
	if strings.Contains(s, "stderr line") {
		t.Errorf("--tee 1 showed stderr:\n%s", s)
	}
}

func TestWorkerExitCodeNamed(t *testing.T) {
	cfg, _, out := testJob(t, "exit3", 3, "FAIL_RANK=2", "GOACCEL_DEVICES=3")
	start := time.Now()
	err := Run(context.Background(), cfg)
	var f *Failure
	if !errors.As(err, &f) {
		t.Fatalf("Run: %v, want a *Failure\n%s", err, out)
	}
	if f.Rank != 2 || f.What != "exit code 3" || f.Kind != "worker" {
		t.Errorf("failure %+v, want rank 2, exit code 3", f)
	}
	log := filepath.Join(cfg.LogDir, "attempt_0", "rank_2")
	msg := err.Error()
	for _, want := range []string{"rank 2", "failed first: exit code 3", log} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q misses %q", msg, want)
		}
	}
	if !strings.Contains(out.String(), "worker failing on purpose with exit code 3") {
		t.Errorf("the failing rank's stderr tail is not shown:\n%s", out)
	}
	if d := time.Since(start); d > workerSleep/2 {
		t.Errorf("took %s: the survivors were not stopped (they sleep %s)", d, workerSleep)
	}
}

// waitPIDs waits until the sleep workers of dir have written their pids.
func waitPIDs(t *testing.T, dir string, n int) []int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var pids []int
		for r := 0; r < n; r++ {
			raw, err := os.ReadFile(filepath.Join(dir, "pid_"+strconv.Itoa(r)))
			pid, perr := strconv.Atoi(string(raw))
			if err != nil || perr != nil || pid <= 0 { // not there yet, or read while being written
				break
			}
			pids = append(pids, pid)
		}
		if len(pids) == n {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("workers did not start: %d of %d pids", len(pids), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestSigkilledWorkerStopsAll(t *testing.T) {
	// Rank 2 ignores SIGTERM: the launcher must escalate to SIGKILL.
	cfg, dir, out := testJob(t, "sleep", 3, "STUBBORN_RANK=2", "GOACCEL_DEVICES=3")
	errc := make(chan error, 1)
	go func() { errc <- Run(context.Background(), cfg) }()
	pids := waitPIDs(t, dir, 3)
	killed := time.Now()
	if err := syscall.Kill(pids[1], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-errc:
	case <-time.After(workerSleep / 2):
		t.Fatalf("the launcher did not stop the job within %s of the kill (the ranks sleep %s)\n%s", workerSleep/2, workerSleep, out)
	}
	stopped := time.Since(killed)
	var f *Failure
	if !errors.As(err, &f) || f.Rank != 1 || f.What != "signal: killed" || f.PID != pids[1] {
		t.Fatalf("Run: %v (%+v), want rank 1 killed", err, f)
	}
	for _, want := range []string{"rank 1", "signal: killed", filepath.Join(cfg.LogDir, "attempt_0", "rank_1")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q misses %q", err, want)
		}
	}
	for r, pid := range pids {
		if alive(pid) {
			t.Errorf("rank %d (pid %d) still alive", r, pid)
		}
	}
	t.Logf("all ranks stopped %s after the SIGKILL of rank 1", stopped.Round(time.Millisecond))
}

func TestMaxRestarts(t *testing.T) {
	cfg, dir, out := testJob(t, "failonce", 2)
	cfg.MaxRestarts = 1
	if err := Run(context.Background(), cfg); err != nil {
		t.Fatalf("Run with --max_restarts 1: %v\n%s", err, out)
	}
	for _, name := range []string{"ok_0_1", "ok_1_1"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("the restarted attempt did not run to the end: %v", err)
		}
	}
	if !strings.Contains(out.String(), "restarting the group (restart 1 of 1)") {
		t.Errorf("no restart notice:\n%s", out)
	}
	// Without restarts the same job fails, naming rank 1.
	cfg, _, out = testJob(t, "failonce", 2)
	var f *Failure
	if err := Run(context.Background(), cfg); !errors.As(err, &f) || f.Rank != 1 || f.What != "exit code 7" {
		t.Fatalf("Run without restarts: %v\n%s", err, out)
	}
}

// freePort returns a --master_port for a test's job: a port p of 127.0.0.1 that is free, and
// p+1 with it, which the launcher gives the ranks as MASTER_PORT (a rank 0 binds a store
// there). Taking any free port and hoping p+1 is free too made TestMasterPortPlusOne fail
// once in CI when another process held p+1.
func freePort(t *testing.T) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		next, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+1)))
		l.Close()
		if err == nil {
			next.Close()
			return p
		}
	}
	t.Fatal("no free pair of ports p, p+1 on 127.0.0.1 in 100 tries")
	return 0
}

// testSecret is the job secret of the tests' jobs of several nodes.
const testSecret = "the tests' job secret, 16 bytes or more"

// runNodes runs one launcher per config, as --nnodes len(cfgs) on 127.0.0.1, and returns their errors.
func runNodes(t *testing.T, cfgs []Config) []error {
	t.Helper()
	port := freePort(t)
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i := range cfgs {
		cfgs[i].NNodes, cfgs[i].NodeRank = len(cfgs), i
		cfgs[i].MasterAddr, cfgs[i].MasterPort = "127.0.0.1", port
		if cfgs[i].Secret == "" {
			cfgs[i].Secret = testSecret
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = Run(context.Background(), cfgs[i])
		}()
	}
	wg.Wait()
	return errs
}

func TestTwoNodesFormOneJob(t *testing.T) {
	c0, dir, out := testJob(t, "env", 2, "GOACCEL_DEVICES=2")
	c1 := c0
	c1.LogDir = filepath.Join(dir, "logs1")
	for i, err := range runNodes(t, []Config{c0, c1}) {
		if err != nil {
			t.Fatalf("node %d: %v\n%s", i, err, out)
		}
	}
	for rank := 0; rank < 4; rank++ {
		env := readEnvFile(t, filepath.Join(dir, "env_"+strconv.Itoa(rank)))
		node, local := strconv.Itoa(rank/2), strconv.Itoa(rank%2)
		if env["WORLD_SIZE"] != "4" || env["NODE_RANK"] != node || env["LOCAL_RANK"] != local ||
			env["LOCAL_WORLD_SIZE"] != "2" || env["GOACCEL_DEVICES"] != "1" || env["PMI_SIZE"] != "4" {
			t.Errorf("rank %d: %v", rank, env)
		}
	}
}

func TestTwoNodesFailureNamesTheRank(t *testing.T) {
	c0, dir, out := testJob(t, "exit3", 2, "FAIL_RANK=3", "GOACCEL_DEVICES=2")
	c1 := c0
	c1.LogDir = filepath.Join(dir, "logs1")
	start := time.Now()
	for i, err := range runNodes(t, []Config{c0, c1}) {
		var f *Failure
		if !errors.As(err, &f) || f.Rank != 3 || f.Node != 1 || f.What != "exit code 3" {
			t.Errorf("node %d: %v, want rank 3 on node_rank 1 with exit code 3\n%s", i, err, out)
		}
	}
	if d := time.Since(start); d > workerSleep/2 {
		t.Errorf("took %s: the survivors were not stopped (they sleep %s)", d, workerSleep)
	}
}

// launcherCmd runs the test binary as `goaccel launch ARGS`.
func launcherCmd(t *testing.T, mode string, args ...string) (*exec.Cmd, string, *syncBuffer) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(self, append([]string{"launch"}, args...)...)
	// TMPDIR: a failed job's default log folder stays in the test's own folder.
	cmd.Env = append(os.Environ(), launcherSwitch+"=1", workerSwitch+"="+mode, dirVar+"="+dir, "GOACCEL_DEVICES=4", "TMPDIR="+dir,
		"GOACCEL_JOB_SECRET="+testSecret)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	return cmd, dir, out
}

func TestCtrlCStopsAll(t *testing.T) {
	self, _ := os.Executable()
	cmd, dir, out := launcherCmd(t, "sleep", "--nproc_per_node", "2", "--no_mpi_check", self)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pids := waitPIDs(t, dir, 2)
	_ = cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(workerSleep / 2):
		_ = cmd.Process.Kill()
		t.Fatalf("the launcher did not stop within %s of SIGINT (the ranks sleep %s)\n%s", workerSleep/2, workerSleep, out)
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit status %d, want 130\n%s", code, out)
	}
	for r, pid := range pids {
		if alive(pid) {
			t.Errorf("rank %d (pid %d) survived Ctrl-C", r, pid)
		}
	}
	if !strings.Contains(out.String(), "interrupted") {
		t.Errorf("no word of the interrupt:\n%s", out)
	}
}

func TestHorovodHostsOnThisMachine(t *testing.T) {
	self, _ := os.Executable()
	cmd, dir, out := launcherCmd(t, "env", "-np", "3", "-H", "localhost:2,127.0.0.1:2", "--no_mpi_check", self)
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for rank, node := range []string{"0", "0", "1"} {
		env := readEnvFile(t, filepath.Join(dir, "env_"+strconv.Itoa(rank)))
		if env["WORLD_SIZE"] != "3" || env["NODE_RANK"] != node {
			t.Errorf("rank %d: %v", rank, env)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "env_3")); err == nil {
		t.Errorf("-np 3 started a fourth rank")
	}
}

// With no MPICH anywhere (an empty GOACCEL_HOME, no GOACCEL_MPI_LIB), asking for several ranks
// is refused with the way to install MPICH; where the system has Open MPI's library only (as
// .ci/run installs it), the refusal names Open MPI's own launcher and the same ways.
func TestMPINotInstalled(t *testing.T) {
	cmd, _, out := launcherCmd(t, "env", "--nproc_per_node", "2", "true")
	cmd.Dir = t.TempDir()
	cmd.Env = append(removeKey(removeKey(removeKey(cmd.Env, "GOACCEL_MPI_LIB"), "LD_LIBRARY_PATH"), "GOACCEL_HOME"),
		"GOACCEL_MPI_LIB=", "GOACCEL_HOME="+cmd.Dir)
	err := cmd.Run()
	if err == nil {
		t.Skipf("SKIPPING: an MPICH library is installed system-wide here: %s", out)
	}
	if cmd.ProcessState.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2\n%s", err, out)
	}
	wants := []string{"no MPI library found", "goaccel setup", "mpich==5.0.2", "GOACCEL_MPI_LIB", "--no_mpi_check"}
	if strings.Contains(out.String(), "the MPI library found is Open MPI's") {
		wants = []string{"libmpi.so.40", "mpirun -n N PROGRAM", "goaccel setup", "GOACCEL_MPI_LIB", "--no_mpi_check"}
	}
	for _, want := range wants {
		if !strings.Contains(out.String(), want) {
			t.Errorf("message misses %q:\n%s", want, out)
		}
	}
}

func TestJobTimeout(t *testing.T) {
	cfg, dir, out := testJob(t, "sleep", 2, "GOACCEL_DEVICES=2")
	cfg.Timeout = 3 * time.Second
	start := time.Now()
	err := Run(context.Background(), cfg)
	var f *Failure
	if !errors.As(err, &f) || f.Kind != "timeout" || !strings.Contains(err.Error(), "--timeout 3s") {
		t.Fatalf("Run: %v, want the job's timeout\n%s", err, out)
	}
	if d := time.Since(start); d < cfg.Timeout || d > workerSleep/2 {
		t.Errorf("took %s, want the timeout %s and the stop (the ranks sleep %s)", d, cfg.Timeout, workerSleep)
	}
	for r, pid := range waitPIDs(t, dir, 2) {
		if alive(pid) {
			t.Errorf("rank %d alive after the timeout", r)
		}
	}
}

func TestSecondCtrlCKills(t *testing.T) {
	self, _ := os.Executable()
	cmd, dir, out := launcherCmd(t, "sleep", "--nproc_per_node", "2", "--no_mpi_check", self)
	// Rank 1 ignores SIGTERM: only SIGKILL ends it, the second Ctrl-C's or the grace's (10 minutes here).
	cmd.Env = append(cmd.Env, "STUBBORN_RANK=1", graceSwitch+"=10m")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pids := waitPIDs(t, dir, 2)
	_ = cmd.Process.Signal(syscall.SIGINT)
	for alive(pids[0]) { // the first Ctrl-C's SIGTERM ends rank 0 (reaped by the launcher)
		time.Sleep(20 * time.Millisecond)
	}
	if !alive(pids[1]) {
		t.Fatalf("rank 1 should still ignore SIGTERM\n%s", out)
	}
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGINT)
	_ = cmd.Wait()
	if d := time.Since(start); d > workerSleep/2 {
		t.Errorf("the second Ctrl-C took %s: it should kill at once, not wait for the grace or rank 1's own end (%s)", d, workerSleep)
	}
	if alive(pids[1]) {
		t.Errorf("rank 1 survived the second Ctrl-C")
	}
}

func TestInterruptOnOtherNodeStopsAll(t *testing.T) {
	c0, dir, out := testJob(t, "sleep", 1, "GOACCEL_DEVICES=1")
	c1 := c0
	c1.LogDir = filepath.Join(dir, "logs1")
	ctx1, cancel1 := context.WithCancel(context.Background())
	port := freePort(t)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, c := range []Config{c0, c1} {
		c.NNodes, c.NodeRank, c.MasterPort = 2, i, port
		ctx := context.Background()
		if i == 1 {
			ctx = ctx1
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = Run(ctx, c) }()
	}
	pids := waitPIDs(t, dir, 2)
	cancel1() // Ctrl-C on node 1's launcher
	wg.Wait()
	for i, err := range errs {
		var f *Failure
		if !errors.As(err, &f) || f.Kind != "interrupt" || !strings.Contains(err.Error(), "node_rank 1") {
			t.Errorf("node %d: %v, want the interrupt on node_rank 1\n%s", i, err, out)
		}
	}
	for r, pid := range pids {
		if alive(pid) {
			t.Errorf("rank %d alive", r)
		}
	}
}

func TestMissingNodeTimesOut(t *testing.T) {
	cfg, _, out := testJob(t, "env", 1)
	cfg.NNodes, cfg.MasterPort, cfg.JoinTimeout = 3, freePort(t), time.Second
	err := Run(context.Background(), cfg)
	var f *Failure
	if !errors.As(err, &f) || f.Kind != "join" || !strings.Contains(err.Error(), "node_rank 1, 2 did not join within 1s") {
		t.Fatalf("Run: %v, want node_rank 1 and 2 named\n%s", err, out)
	}
}

func TestTwoNodesRestart(t *testing.T) {
	c0, dir, out := testJob(t, "failonce", 1)
	c0.MaxRestarts = 1 // the master decides
	c1 := c0
	c1.LogDir = filepath.Join(dir, "logs1")
	for i, err := range runNodes(t, []Config{c0, c1}) {
		if err != nil {
			t.Fatalf("node %d: %v\n%s", i, err, out)
		}
	}
	for _, name := range []string{"ok_0_1", "ok_1_1"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("both nodes should have rerun: %v\n%s", err, out)
		}
	}
}

// Without a LogDir (--log_dir), the launcher makes a goaccel-launch-* folder in the temporary
// directory: it removes it when the job succeeds, and keeps it, named in the error, when the
// job fails.
func TestDefaultLogDirRemovedOnSuccess(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	folders := func() []string {
		m, _ := filepath.Glob(filepath.Join(tmp, "goaccel-launch-*"))
		return m
	}
	cfg, _, out := testJob(t, "env", 2, "GOACCEL_DEVICES=2")
	cfg.LogDir = ""
	if err := Run(context.Background(), cfg); err != nil {
		t.Fatalf("Run: %v\n%s", err, out)
	}
	if left := folders(); len(left) != 0 {
		t.Errorf("a job that succeeded left %v\n%s", left, out)
	}
	cfg, _, out = testJob(t, "exit3", 2, "FAIL_RANK=1", "GOACCEL_DEVICES=2")
	cfg.LogDir = ""
	err := Run(context.Background(), cfg)
	left := folders()
	if err == nil || len(left) != 1 || !strings.Contains(err.Error(), filepath.Join(left[0], "attempt_0", "rank_1")) {
		t.Fatalf("a failed job: %v, folders %v: want its log folder kept and named\n%s", err, left, out)
	}
	if _, err := os.Stat(filepath.Join(left[0], "attempt_0", "rank_1", "stderr.log")); err != nil {
		t.Errorf("the failed rank's log: %v", err)
	}
}
