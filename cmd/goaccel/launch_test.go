package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
)

// asGoaccel, set in a test binary's environment, makes it goaccel itself: it runs its
// arguments as goaccel's command line (launchers, and the self-test ranks they start).
const asGoaccel = "GOACCEL_CMD_TEST_AS_GOACCEL"

func TestMain(m *testing.M) {
	if os.Getenv(asGoaccel) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// goaccelCmd is this test binary run as `goaccel ARGS`, its stdout and stderr kept apart.
func goaccelCmd(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	// TMPDIR: a failed launch's default log folder stays in the test's own folder.
	cmd.Env = append(os.Environ(), asGoaccel+"=1", "TMPDIR="+t.TempDir(),
		"GOACCEL_JOB_SECRET=the tests' job secret, 16 bytes or more")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	return cmd, &out, &errOut
}

// TestLaunchSelfTestTwoLaunchers: `goaccel launch --selftest` on two launchers on 127.0.0.1
// (the code path of two machines), two ranks each: every rank joins through accelerator.New,
// passes the barrier and the 64 MiB all-reduce, and node_rank 0 prints one table of the four.
func TestLaunchSelfTestTwoLaunchers(t *testing.T) {
	testutil.NeedMPI(t)
	port := strconv.Itoa(freePort(t))
	type result struct {
		out, errOut *bytes.Buffer
		err         error
	}
	results := make([]result, 2)
	var wg sync.WaitGroup
	for node := range results {
		cmd, out, errOut := goaccelCmd(t, "launch", "--selftest", "--nnodes", "2", "--node_rank", strconv.Itoa(node),
			"--master_addr", "127.0.0.1", "--master_port", port, "--nproc_per_node", "2", "--timeout", "120")
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[node] = result{out, errOut, cmd.Run()}
		}()
	}
	wg.Wait()
	for node, r := range results {
		if r.err != nil {
			t.Fatalf("node_rank %d: %v\nstdout:\n%s\nstderr:\n%s", node, r.err, r.out, r.errOut)
		}
	}
	report := results[0].out.String()
	t.Logf("node_rank 0's stdout:\n%s", report)
	for _, want := range []string{
		"goaccel launch --selftest: 4 rank(s) on 2 node(s), 1 host(s): every rank joined, passed the barrier and summed 64 MiB correctly\n",
		"all-reduce: sum of 64 MiB of float32 over 4 ranks, best of 3 after a warm-up; the slowest rank's ",
		"discovery (accelerator.New):\n  ranks 0-3: ",
		"MPI library:\n  ranks 0-3: ",
		"network interfaces:\n  ranks 0-3: ",
		"127.0.0.1/8",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report misses %q", want)
		}
	}
	rows := 0
	for _, line := range strings.Split(report, "\n") {
		f := strings.Fields(line)
		if len(f) > 10 && f[0] == strconv.Itoa(rows) {
			bw, err := strconv.ParseFloat(f[len(f)-1], 64)
			if node := strconv.Itoa(rows / 2); f[1] != node || f[2] != strconv.Itoa(rows%2) || err != nil || bw <= 0 {
				t.Errorf("rank %d's row: %q, want node_rank %s", rows, line, node)
			}
			rows++
		}
	}
	if rows != 4 {
		t.Errorf("%d rank rows in the table, want 4", rows)
	}
	if results[1].out.Len() != 0 {
		t.Errorf("node_rank 1 printed a report too:\n%s", results[1].out)
	}
}

// TestLaunchSelfTestOneRank: with one rank there is no MPI: the report says so and still
// shows discovery.
func TestLaunchSelfTestOneRank(t *testing.T) {
	cmd, out, errOut := goaccelCmd(t, "launch", "--selftest", "--nproc_per_node", "1")
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s%s", err, out, errOut)
	}
	for _, want := range []string{"1 rank(s) on 1 node(s), 1 host(s): one rank: discovery only", "MPI library:\n  rank 0: none (one process)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report misses %q:\n%s", want, out)
		}
	}
}

// TestLaunchSelfTestHostfile: --selftest with a host file of two hosts of this machine: the
// master starts the other host's launcher with --selftest, which runs its own self-test rank
// (the program given is replaced), and the report has both.
func TestLaunchSelfTestHostfile(t *testing.T) {
	testutil.NeedMPI(t)
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("localhost slots=1  # this machine\n127.0.0.1:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, out, errOut := goaccelCmd(t, "launch", "--selftest", "--hostfile", hosts, "--timeout", "120", "./train", "--epochs", "3")
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(out.String(), "2 rank(s) on 2 node(s), 1 host(s): every rank joined") {
		t.Errorf("the report:\n%s", out)
	}
	if !strings.Contains(errOut.String(), "running the self-test on every rank instead of ./train") {
		t.Errorf("the replaced program is not named:\n%s", errOut)
	}
}
