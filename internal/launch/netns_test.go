package launch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cleanMPIExit checks that every rank of a gompi job that succeeded wrote nothing but the
// worker's own lines: no warning of the MPI library at MPI_Finalize, such as UCX's (on
// stdout) "object ... {{cb|rcv_tag} recv length 0 host memory} was not returned to mpool
// ucp_requests" for a receive still posted.
func cleanMPIExit(t *testing.T, logDir string, ranks ...int) {
	t.Helper()
	for _, r := range ranks {
		dir := filepath.Join(logDir, "attempt_0", "rank_"+strconv.Itoa(r))
		for _, f := range []struct{ name, want string }{{"stderr.log", "worker %d stderr line"}, {"stdout.log", "worker %d of 2 starting (gompi)|go rank %d of 2 "}} {
			b, err := os.ReadFile(filepath.Join(dir, f.name))
			if err != nil {
				t.Errorf("rank %d: %v", r, err)
			}
			for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
				ok := false
				for _, w := range strings.Split(f.want, "|") {
					ok = ok || strings.HasPrefix(line, fmt.Sprintf(w, r))
				}
				if !ok {
					t.Errorf("rank %d's %s has a line not of the worker's: %q", r, f.name, line)
				}
			}
		}
	}
}

// MPI_Finalize finds no request of internal/mpi's still posted (the alarm receives). With
// MPIR_CVAR_NOLOCAL=1 MPICH sends between the ranks of one host through its network module
// (UCX), as between hosts, and UCX names each request left at exit.
func TestMPIRequestsFreedAtFinalize(t *testing.T) {
	needMPI(t)
	cfg, _, out := testJob(t, "gompi", 2, "GOACCEL_DEVICES=2", "MPIR_CVAR_NOLOCAL=1")
	if err := Run(context.Background(), cfg); err != nil {
		t.Fatalf("Run: %v\n%s", err, out)
	}
	cleanMPIExit(t, cfg.LogDir, 0, 1)
}

// netnsHosts makes two network namespaces joined by a veth pair, 10.231.N.1 and 10.231.N.2,
// removed when the test ends, and returns their names and addresses; where that is refused
// (not root, no ip command) the test is skipped loudly, or fails under CI=true when it runs as
// root with ip and unshare installed (CI's case).
func netnsHosts(t *testing.T) (ns, addr [2]string) {
	t.Helper()
	ipCmd, ipErr := exec.LookPath("ip")
	_, unshareErr := exec.LookPath("unshare")
	shouldWork := os.Geteuid() == 0 && ipErr == nil && unshareErr == nil
	refused := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if shouldWork && os.Getenv("CI") == "true" {
			t.Fatalf("CI=true, as root with ip and unshare: %s", msg)
		}
		t.Skipf("SKIPPING the two-host test (network namespaces): %s", msg)
	}
	if !shouldWork {
		refused("needs root, ip and unshare (euid %d; ip: %v; unshare: %v)", os.Geteuid(), ipErr, unshareErr)
	}
	id := os.Getpid() % 100000
	subnet := 1 + os.Getpid()%250
	veth := [2]string{fmt.Sprintf("gav%da", id), fmt.Sprintf("gav%db", id)}
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ipCmd, args...).CombinedOutput(); err != nil {
			refused("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	for i := range ns {
		ns[i] = fmt.Sprintf("goaccel-test-%d-%d", id, i)
		addr[i] = fmt.Sprintf("10.231.%d.%d", subnet, i+1)
		ip("netns", "add", ns[i])
		name := ns[i]
		t.Cleanup(func() { _ = exec.Command(ipCmd, "netns", "del", name).Run() }) // takes its veth end along
	}
	ip("link", "add", veth[0], "type", "veth", "peer", "name", veth[1])
	for i := range ns {
		ip("link", "set", veth[i], "netns", ns[i])
		ip("-n", ns[i], "addr", "add", addr[i]+"/24", "dev", veth[i])
		ip("-n", ns[i], "link", "set", veth[i], "up")
		ip("-n", ns[i], "link", "set", "lo", "up")
	}
	return ns, addr
}

// Two simulated hosts (network namespaces with their own host names, joined over TCP by a
// veth pair) run a Go MPI job with goaccel launch --nnodes 2; each rank exits 0 with a clean
// stderr (MPICH reaches the other host through its network module, UCX, which warns at
// MPI_Finalize of every request still posted).
func TestTwoHostsCleanMPIExit(t *testing.T) {
	needMPI(t)
	ns, addr := netnsHosts(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	env := append(removeKey(removeKey(os.Environ(), workerSwitch), "MPIR_CVAR_NOLOCAL"), launcherSwitch+"=1",
		workerSwitch+"=gompi", dirVar+"="+dir, "GOACCEL_DEVICES=1", "TMPDIR="+dir, "GOACCEL_JOB_SECRET="+testSecret)
	cmds := make([]*exec.Cmd, 2)
	outs := make([]*syncBuffer, 2)
	dones := make([]chan error, 2)
	for i := range cmds {
		// On its own host name (a UTS namespace), so that MPICH takes the ranks for two hosts.
		cmds[i] = exec.Command("ip", "netns", "exec", ns[i], "unshare", "--uts", "sh", "-c", `hostname "$0" && exec "$@"`,
			fmt.Sprintf("goaccel-test-host%d", i), self, "launch", "--nnodes", "2", "--node_rank", strconv.Itoa(i),
			"--master_addr", addr[0], "--nproc_per_node", "1", "--tee", "3", "--log_dir", filepath.Join(dir, fmt.Sprintf("node%d", i)),
			"--join_timeout", "60", self)
		cmds[i].Env = env
		outs[i] = &syncBuffer{}
		cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
		dones[i] = make(chan error, 1)
		go func() { dones[i] <- cmds[i].Wait() }()
	}
	for i := range cmds {
		select {
		case err = <-dones[i]:
		case <-time.After(3 * time.Minute):
			for _, c := range cmds {
				_ = c.Process.Kill()
			}
			err = fmt.Errorf("did not end within 3 minutes")
		}
		if err != nil {
			t.Errorf("node_rank %d: %v\n%s", i, err, outs[i])
		}
	}
	if t.Failed() {
		return
	}
	for i := range cmds {
		if want := fmt.Sprintf("go rank %d of 2 ", i); !strings.Contains(outs[i].String(), want) {
			t.Errorf("node_rank %d's output misses %q:\n%s", i, want, outs[i])
		}
		cleanMPIExit(t, filepath.Join(dir, fmt.Sprintf("node%d", i)), i)
	}
}
