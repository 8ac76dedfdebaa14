package launch

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shmFiles lists the /dev/shm files that the "shm" workers pids made and that still exist.
func shmFiles(pids []int) []string {
	var left []string
	for _, pid := range pids {
		for _, kind := range []string{"mapped", "loose"} {
			p := filepath.Join(shmDir, "mpich_shm_goaccel_test_"+kind+"_"+strconv.Itoa(pid))
			if _, err := os.Stat(p); err == nil {
				left = append(left, p)
			}
		}
	}
	return left
}

// startPiped starts the test binary as `goaccel launch --nproc_per_node 2 --tee 3 SELF` with
// "shm" workers; with piped its stdout goes into a pipe that is closed after one line, as
// `| head -1` does.
func startPiped(t *testing.T, piped bool, extraEnv ...string) (*exec.Cmd, []int, *syncBuffer) {
	t.Helper()
	if _, err := os.Stat(shmDir); err != nil {
		t.Skipf("SKIPPING: no %s here", shmDir)
	}
	self, _ := os.Executable()
	cmd, dir, out := launcherCmd(t, "shm", "--nproc_per_node", "2", "--tee", "3", "--no_mpi_check", self)
	cmd.Env = append(cmd.Env, extraEnv...)
	var r *os.File
	if piped {
		var w *os.File
		var err error
		if r, w, err = os.Pipe(); err != nil {
			t.Fatal(err)
		}
		cmd.Stdout = w
		defer w.Close()
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	pids := waitPIDs(t, dir, 2)
	t.Cleanup(func() {
		for _, pid := range pids {
			if running(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		for _, f := range shmFiles(pids) {
			_ = os.Remove(f)
		}
	})
	if piped {
		line, err := bufio.NewReader(r).ReadString('\n')
		if err != nil {
			t.Fatalf("no line from the launcher: %v\n%s", err, out)
		}
		r.Close() // head -1 exits
		t.Logf("head -1 read %q", line)
	}
	return cmd, pids, out
}

// A launcher that gets SIGHUP (a dropped ssh session), SIGQUIT or SIGKILL, with its output on
// the terminal or piped into `head -1`, leaves no rank and no shared-memory file behind (well
// before the ranks' own end).
func TestLauncherDeathLeavesNothing(t *testing.T) {
	for _, c := range []struct {
		sig   syscall.Signal
		piped bool
	}{{syscall.SIGHUP, false}, {syscall.SIGQUIT, false}, {syscall.SIGKILL, false},
		{syscall.SIGHUP, true}, {syscall.SIGQUIT, true}, {syscall.SIGKILL, true}} {
		name := c.sig.String()
		if c.piped {
			name += " | head -1"
		}
		t.Run(name, func(t *testing.T) {
			var env []string
			if c.piped { // rank 0 writes on, so that the launcher meets the closed pipe; rank 1 waits quietly
				env = []string{"TICKS=1200", "TICK_RANK=0"}
			}
			cmd, pids, out := startPiped(t, c.piped, env...)
			if c.piped {
				waitLogLines(t, cmd, 3) // the launcher copied line 2 into the closed pipe
			}
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Errorf("the launcher is gone before the %s: %v\n%s", c.sig, err, out)
			}
			sent := time.Now()
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(workerSleep / 2):
				t.Fatalf("the launcher did not end within %s of %s\n%s", workerSleep/2, c.sig, out)
			}
			deadline := sent.Add(workerSleep / 2) // the ranks run for workerSleep
			for {
				var live []int
				for _, pid := range pids {
					if running(pid) {
						live = append(live, pid)
					}
				}
				left := shmFiles(pids)
				if len(live) == 0 && len(left) == 0 {
					t.Logf("%s: ranks and their /dev/shm files gone %s after it (%s)", c.sig,
						time.Since(sent).Round(time.Millisecond), cmd.ProcessState)
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s after %s to the launcher (%s): ranks still running: %v; shared-memory files left: %v\n%s",
						workerSleep/2, c.sig, cmd.ProcessState, live, left, out)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// Without the guardian, the parent-death signal alone kills the ranks of a SIGKILLed launcher
// (their /dev/shm files are the guardian's part): the thread that started them lives as long
// as the launcher.
func TestParentDeathSignal(t *testing.T) {
	cmd, pids, out := startPiped(t, false, noGuardianSwitch+"=1") // the ranks run: the goroutine that started them has ended
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	deadline := time.Now().Add(workerSleep / 2) // the ranks run for workerSleep
	for anyRunning(pids) {
		if time.Now().After(deadline) {
			t.Fatalf("ranks %v still run %s after their launcher was killed\n%s", pids, workerSleep/2, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// When `head -1` closes the launcher's output, the launcher stops copying and supervises the
// job to its end: the ranks finish and it exits 0.
func TestBrokenOutputKeepsSupervising(t *testing.T) {
	cmd, _, out := startPiped(t, true, "TICKS=40")
	err := cmd.Wait()
	if err != nil || !strings.Contains(out.String(), "node_rank 0 runs ranks 0-1 of 2") {
		t.Fatalf("launcher: %v (%s), want exit 0 after the ranks' own end\n%s", err, cmd.ProcessState, out)
	}
}

// waitLogLines waits until rank 0 of the launcher cmd (started by launcherCmd, its log folder
// in the test's TMPDIR) has n lines in its stdout.log.
func waitLogLines(t *testing.T, cmd *exec.Cmd, n int) {
	t.Helper()
	var tmp string
	for _, kv := range cmd.Env {
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok {
			tmp = v
		}
	}
	deadline := time.Now().Add(workerSleep / 2)
	for {
		logs, _ := filepath.Glob(filepath.Join(tmp, "goaccel-launch-*", "attempt_0", "rank_0", "stdout.log"))
		if len(logs) == 1 {
			if b, err := os.ReadFile(logs[0]); err == nil && strings.Count(string(b), "\n") >= n {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("rank 0 did not write %d lines within %s (logs: %v)", n, workerSleep/2, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
