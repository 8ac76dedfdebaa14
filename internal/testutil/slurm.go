package testutil

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/launch"
)

// Slurm is a Slurm cluster of this machine that scripts/slurm_cluster.sh started for a test
// (slurmctld and slurmd on 127.0.0.1, MpiDefault none), stopped and removed when the test ends.
type Slurm struct {
	// Dir holds its configuration, state and logs; Conf is its slurm.conf.
	Dir, Conf string
}

// Env is what a command needs to talk to the cluster: SLURM_CONF.
func (s *Slurm) Env() []string { return []string{envvar.SlurmConf.KV(s.Conf)} }

// Command is srun, sbatch, scontrol... of the cluster, with env (nil: this process's).
func (s *Slurm) Command(env []string, name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	if env == nil {
		env = envvar.Environ()
	}
	c.Env = append(append([]string{}, env...), s.Env()...)
	return c
}

// NeedSlurm starts a Slurm cluster of this machine for the test, or skips it loudly (fails it
// when CI is set) when the test does not run as root or Debian's slurm-wlm and munge are not
// installed (`apt-get install -y slurm-wlm munge`; .ci/run installs them).
func NeedSlurm(t testing.TB) *Slurm { return NeedSlurmNodes(t, 1) }

// NeedSlurmNodes is NeedSlurm with nodes nodes: 1, or 2 (n1 and n2, each a network namespace
// with its own slurmd, host name and an /etc/hosts naming both; see scripts/slurm_cluster.sh),
// which also need ip, unshare and nsenter.
func NeedSlurmNodes(t testing.TB, nodes int) *Slurm {
	t.Helper()
	tools := []string{"slurmctld", "slurmd", "munged", "srun", "sbatch", "scontrol"}
	if nodes > 1 {
		tools = append(tools, "ip", "unshare", "nsenter")
	}
	for _, p := range tools {
		if _, err := exec.LookPath(p); err != nil {
			Missing(t, "a Slurm test needs "+p, "as root: apt-get install -y slurm-wlm munge")
		}
	}
	if os.Getuid() != 0 {
		Missing(t, "a Slurm test needs root (slurmd starts the tasks as their user)", "run it as root, as .ci/run does")
	}
	script := filepath.Join(moduleRoot(t), "scripts", "slurm_cluster.sh")
	dir, err := os.MkdirTemp("", "goaccel-slurm-") // short: munge's socket path is limited
	if err != nil {
		t.Fatal(err)
	}
	start := exec.Command(script, "start", dir, strconv.Itoa(nodes))
	start.Env = append(envvar.Environ(), envvar.SlurmctldPort.KV(strconv.Itoa(FreePort(t))),
		envvar.SlurmdPort.KV(strconv.Itoa(FreePort(t))))
	out, err := start.CombinedOutput()
	if err != nil {
		_ = os.RemoveAll(dir)
		t.Fatalf("scripts/slurm_cluster.sh start: %v\n%s", err, out)
	}
	started := time.Now()
	t.Cleanup(func() {
		if out, err := exec.Command(script, "stop", dir).CombinedOutput(); err != nil {
			t.Errorf("scripts/slurm_cluster.sh stop: %v\n%s", err, out)
		}
		// Tasks that Slurm killed (a requeue, a cancel) leave MPICH's /dev/shm files.
		if removed := launch.RemoveStaleShm(started); len(removed) > 0 {
			t.Logf("removed %d /dev/shm file(s) that the job's killed tasks left: %v", len(removed), removed)
		}
	})
	return &Slurm{Dir: dir, Conf: filepath.Join(dir, "slurm.conf")}
}

// moduleRoot is the folder of go.mod above the test's working folder.
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if d == filepath.Dir(d) {
			t.Fatalf("no go.mod above %s", dir)
		}
	}
}

// FreePort is a port of 127.0.0.1 that nothing listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
