package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The elastic tests that train (a node lost and the job resumed on the nodes left, a node
// that comes midway), with the uninterrupted run's weights as the check, are cmd/goaccel's
// (elastic_test.go): their ranks run trainer.Fit, a package above internal/. The tests here
// need only this package's worker modes.

// elasticNode is one launcher of an elastic test job: the test binary run as goaccel launch.
type elasticNode struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

// startNode starts a launcher of the job --nnodes spec on 127.0.0.1:port, the master when
// master is set, with env (the ranks' environment too) and more flags.
func startNode(t *testing.T, name string, master bool, spec string, port int, env []string, flags ...string) *elasticNode {
	t.Helper()
	self, _ := os.Executable()
	args := []string{"launch", "--nnodes", spec, "--master_addr", "127.0.0.1", "--master_port", strconv.Itoa(port),
		"--nproc_per_node", "1", "--tee", "3", "--log_dir", filepath.Join(t.TempDir(), "logs")}
	if master {
		args = append(args, "--node_rank", "0")
	}
	return startNodeArgs(t, name, env, append(append(args, flags...), self))
}

// startNodeArgs starts the test binary as `goaccel launch` with args (from "launch" on).
func startNodeArgs(t *testing.T, name string, env []string, args []string) *elasticNode {
	t.Helper()
	self, _ := os.Executable()
	n := &elasticNode{name: name, cmd: exec.Command(self, args...), out: &syncBuffer{}, done: make(chan struct{})}
	n.cmd.Env = append(env, launcherSwitch+"=1", graceSwitch+"=1s")
	n.cmd.Stdout, n.cmd.Stderr = n.out, n.out
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = n.cmd.Wait(); close(n.done) }()
	t.Cleanup(func() {
		select {
		case <-n.done:
		default:
			_ = n.cmd.Process.Kill()
			<-n.done
		}
	})
	return n
}

// outputs writes every launcher's output, for a failure's message.
func outputs(nodes ...*elasticNode) string {
	var b strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&b, "--- launcher %s:\n%s", n.name, n.out)
	}
	return b.String()
}

// wait waits for the launcher's end (a minute at most) and returns its exit status.
func (n *elasticNode) wait(t *testing.T, all ...*elasticNode) int {
	t.Helper()
	select {
	case <-n.done:
	case <-time.After(time.Minute):
		t.Fatalf("launcher %s did not end within a minute\n%s", n.name, outputs(all...))
	}
	return n.cmd.ProcessState.ExitCode()
}

// TestElasticBelowMinimum: an elastic job of 2 launchers (--nnodes 2:3) whose second launcher
// is SIGKILLed: the master waits --join_timeout for a launcher to take its place, then ends
// the job with an error naming the node that left (its host and launcher pid) and the minimum.
func TestElasticBelowMinimum(t *testing.T) {
	dir := t.TempDir()
	env := removeKey(os.Environ(), launcherSwitch)
	env = append(env, workerSwitch+"=sleep", dirVar+"="+dir, "GOACCEL_DEVICES=1", "GOACCEL_JOB_SECRET="+testSecret)
	port := freePort(t)
	flags := []string{"--max_restarts", "2", "--rdzv_conf", "last_call_timeout=0.5", "--join_timeout", "4", "--no_mpi_check"}
	master := startNode(t, "master", true, "2:3", port, env, flags...)
	second := startNode(t, "second", false, "2:3", port, env, flags...)
	all := []*elasticNode{master, second}
	pids := waitPIDs(t, dir, 2)
	if err := second.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := master.wait(t, all...); code != 1 {
		t.Fatalf("the master's exit status %d, want 1\n%s", code, outputs(all...))
	}
	log := master.out.String()
	for _, w := range []string{
		"the elastic job fell below its minimum of 2 node(s) (--nnodes 2:3): missing ",
		fmt.Sprintf("(launcher pid %d) (node_rank 1: its launcher went away)", second.cmd.Process.Pid),
		"no launcher took their place within --join_timeout 4s",
	} {
		if !strings.Contains(log, w) {
			t.Errorf("the master's log misses %q\n%s", w, log)
		}
	}
	for r, pid := range pids {
		if alive(pid) {
			t.Errorf("rank %d (pid %d) still runs", r, pid)
		}
	}
}

// TestElasticMasterLostEndsJob: when the master's launcher dies, the other launchers of an
// elastic job stop their ranks and end, saying that an elastic job ends with its master.
func TestElasticMasterLostEndsJob(t *testing.T) {
	dir := t.TempDir()
	env := removeKey(os.Environ(), launcherSwitch)
	env = append(env, workerSwitch+"=sleep", dirVar+"="+dir, "GOACCEL_DEVICES=1", "GOACCEL_JOB_SECRET="+testSecret)
	port := freePort(t)
	flags := []string{"--max_restarts", "2", "--rdzv_conf", "last_call_timeout=0.5", "--no_mpi_check"}
	master := startNode(t, "master", true, "1:2", port, env, flags...)
	second := startNode(t, "second", false, "1:2", port, env, flags...)
	all := []*elasticNode{master, second}
	pids := waitPIDs(t, dir, 2)
	if err := master.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := second.wait(t, all...); code != 1 {
		t.Fatalf("exit status %d, want 1\n%s", code, outputs(all...))
	}
	if s := second.out.String(); !strings.Contains(s, "lost the connection to the elastic job's master") ||
		!strings.Contains(s, "an elastic job ends with its master") {
		t.Errorf("the message does not say the master was lost:\n%s", s)
	}
	// The master's rank dies with its launcher (the parent-death signal, the guardian): a
	// moment after, as the kernel delivers it.
	deadline := time.Now().Add(10 * time.Second)
	for r, pid := range pids {
		for running(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if running(pid) {
			t.Errorf("rank %d (pid %d) still runs", r, pid)
		}
	}
}

// TestElasticStartsAtMinAfterLastCall: a job of --nnodes 1:3 with one launcher starts after
// the last call, on 1 node; GROUP_WORLD_SIZE, GROUP_RANK and TORCHELASTIC_RESTART_COUNT come
// from the master.
func TestElasticStartsAtMinAfterLastCall(t *testing.T) {
	cfg, dir, out := testJob(t, "env", 1, "GOACCEL_DEVICES=1")
	cfg.MinNodes, cfg.NNodes, cfg.MasterPort, cfg.LastCallTimeout = 1, 3, freePort(t), 200*time.Millisecond
	if err := Run(context.Background(), cfg); err != nil {
		t.Fatalf("Run: %v\n%s", err, out)
	}
	env := readEnvFile(t, filepath.Join(dir, "env_0"))
	if env["WORLD_SIZE"] != "1" || env["GROUP_RANK"] != "0" || env["GOACCEL_RESTART_COUNT"] != "0" {
		t.Errorf("env %v", env)
	}
	if !strings.Contains(out.String(), "the elastic job (--nnodes 1:3) starts on 1 node(s), world size 1") {
		t.Errorf("no formation line:\n%s", out)
	}
}

// TestElasticJoinRefusals: a launcher whose --nnodes differs from the master's is refused,
// naming both; a master left alone below MIN ends after --join_timeout, saying who joined.
func TestElasticJoinRefusals(t *testing.T) {
	master, _, out := testJob(t, "env", 1)
	master.MinNodes, master.NNodes, master.MasterPort, master.JoinTimeout = 2, 2, freePort(t), 3*time.Second
	other, _, out2 := testJob(t, "env", 1)
	other.NNodes, other.NodeRank, other.MasterPort = 2, 1, master.MasterPort
	errc := make(chan error, 1)
	go func() { errc <- Run(context.Background(), master) }()
	err := Run(context.Background(), other)
	if err == nil || !strings.Contains(err.Error(), "this launcher has --nnodes 2 but the master's (node_rank 0) has --nnodes 2:2") {
		t.Errorf("a static launcher joining an elastic master: %v\n%s", err, out2)
	}
	err = <-errc
	var f *Failure
	if !errors.As(err, &f) || f.Kind != "join" || !strings.Contains(err.Error(),
		"only 1 launcher(s) of the elastic job (--nnodes 2:2) joined within --join_timeout 3s, fewer than its minimum of 2") {
		t.Errorf("the master alone: %v\n%s", err, out)
	}
}
