package launch

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestSelfTestFailsFastNamingTheMaster: under --selftest a node_rank > 0 launcher fails within
// 10 s (exit 1) with a message naming host:port when its master's port is closed, when the
// master is unreachable (its SYNs dropped: a listener whose accept queue is full, as a firewall
// that drops them), and when another program holds the port (one that answers something else,
// one that says nothing); the launcher's own command line is the one a user types.
func TestSelfTestFailsFastNamingTheMaster(t *testing.T) {
	cases := []struct {
		name, port, why string
	}{
		{"closed port", strconv.Itoa(closedPort(t)), "connection refused"},
		{"unreachable master", blackHole(t), "i/o timeout"},
		{"another program answers", otherService(t, "HTTP/1.1 400 Bad Request\r\n", true), `it answered "HTTP/1.1 400 Bad Request"`},
		{"another program says nothing", otherService(t, "", true), "did not answer as goaccel launch's node_rank 0 launcher"},
		{"another program hangs up", otherService(t, "", false), "it closed the connection without answering the join"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cmd, _, out := launcherCmd(t, "env", "--selftest", "--nnodes", "2", "--node_rank", "1",
				"--master_addr", "127.0.0.1", "--master_port", c.port, "--nproc_per_node", "1")
			start := time.Now()
			err := cmd.Run()
			took := time.Since(start)
			addr := "127.0.0.1:" + c.port
			if err == nil || cmd.ProcessState.ExitCode() != 1 {
				t.Errorf("exit %v, want 1\n%s", err, out)
			}
			// selfTestDial (8 s) and a margin for a loaded machine, well under the 300 s of
			// --join_timeout that a launch without --selftest would wait.
			if took > 60*time.Second {
				t.Errorf("took %s, want about %s (--selftest's limit), not --join_timeout's 300 s", took.Round(time.Millisecond), selfTestDial)
			}
			for _, want := range []string{addr, c.why} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("the message misses %q:\n%s", want, out)
				}
			}
			t.Logf("%s after %s:\n%s", c.name, took.Round(time.Millisecond), out)
		})
	}
}

// boundSocket returns a TCP socket bound to a port of 127.0.0.1 the kernel picked, closed when
// the test ends, and that port.
func boundSocket(t *testing.T) (int, int) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fd, sa.(*syscall.SockaddrInet4).Port
}

// closedPort returns a port on 127.0.0.1 that refuses connections: a socket bound to it that
// never listens, held until the test ends, so that no other listener (this test's own among
// them) can take the port in the meantime, as one could a port found free and released.
func closedPort(t *testing.T) int {
	t.Helper()
	_, port := boundSocket(t)
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second); err == nil {
		c.Close()
		t.Fatalf("port %d accepted a connection though nothing listens on it", port)
	}
	return port
}

// blackHole returns the port of a listener on 127.0.0.1 that never accepts, with its accept
// queue full: Linux drops the SYNs of further connections, so they time out as they do to a
// machine that is down or behind a firewall that drops packets.
func blackHole(t *testing.T) string {
	t.Helper()
	fd, p := boundSocket(t)
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(p)
	for i := 0; ; i++ { // fill the queue until a connection hangs
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, 300*time.Millisecond)
		if err != nil {
			break
		}
		t.Cleanup(func() { c.Close() })
		if i == 8 {
			t.Fatal("the listener's accept queue does not fill up")
		}
	}
	return port
}

// otherService returns the port of a listener on 127.0.0.1 that accepts every connection and
// writes reply to it (nothing when reply is ""), then keeps it open (keep) or closes it: a
// program that is not goaccel's.
func otherService(t *testing.T, reply string, keep bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(reply))
			if !keep {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// TestJoinWaitSaysWhatItWaitsFor: a master without its other node, and a node without its
// master, say every Config.progressEvery what they wait for, and a normal launch waits the
// whole --join_timeout where a self-test's node gives up after Config.selfTestDial.
func TestJoinWaitSaysWhatItWaitsFor(t *testing.T) {
	master, _, out := testJob(t, "env", 1)
	master.progressEvery = 300 * time.Millisecond
	master.NNodes, master.MasterPort, master.JoinTimeout = 2, freePort(t), 1500*time.Millisecond
	err := Run(context.Background(), master)
	want := "waiting for node_rank 1 of 2 to join on port " + strconv.Itoa(master.MasterPort) + " ("
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "of 2 s)") {
		t.Errorf("the master does not say %q:\n%s", want, out)
	}
	var f *Failure
	if !errors.As(err, &f) || f.Kind != "join" {
		t.Errorf("master: %v, want a join failure", err)
	}

	for _, selfTest := range []bool{false, true} {
		node, _, out := testJob(t, "env", 1)
		node.progressEvery, node.selfTestDial = 300*time.Millisecond, 600*time.Millisecond
		node.NNodes, node.NodeRank, node.MasterPort, node.JoinTimeout = 2, 1, closedPort(t), 1500*time.Millisecond
		if selfTest {
			node.JoinTimeout = time.Minute // far beyond selfTestDial, which ends the wait
		}
		node.SelfTest = selfTest
		start := time.Now()
		err := Run(context.Background(), node)
		took := time.Since(start)
		addr := "127.0.0.1:" + strconv.Itoa(node.MasterPort)
		if !errors.As(err, &f) || f.Kind != "join" || !strings.Contains(err.Error(), addr) {
			t.Errorf("selftest %v: %v, want a join failure naming %s", selfTest, err, addr)
		}
		if !strings.Contains(out.String(), "waiting for node_rank 0's launcher at "+addr+" (") {
			t.Errorf("selftest %v: the node does not say what it waits for:\n%s", selfTest, out)
		}
		if !selfTest && (took < node.JoinTimeout || !strings.Contains(err.Error(), "within 1.5s (--join_timeout)")) {
			t.Errorf("a normal launch gave up after %s (%v), want the whole --join_timeout of %s", took, err, node.JoinTimeout)
		}
		if selfTest && (took > node.JoinTimeout/2 || !strings.Contains(err.Error(), "within 600ms (--selftest's limit")) {
			t.Errorf("a self-test's node gave up after %s (%v), want %s", took, err, node.selfTestDial)
		}
	}
}

// TestSelfTestFlag: --selftest needs no program (one given is replaced and named), runs this
// executable's self-test ranks, and reaches the launchers of the other -H hosts.
func TestSelfTestFlag(t *testing.T) {
	self, _ := os.Executable()
	for _, args := range [][]string{{"--selftest", "--nproc_per_node", "2"}, {"--selftest", "-np", "2", "./train", "--epochs", "3"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			inv, err := parseArgs(args, []string{"A=1"})
			if err != nil {
				t.Fatal(err)
			}
			c := inv.cfg
			if c.Program != self || !slices.Equal(c.Args, []string{SelfTestCommand}) || !c.SelfTest ||
				!slices.Contains(c.Env, "GOACCEL_LAUNCH_SELFTEST=1") || c.NprocPerNode != 2 || !slices.Contains(inv.forward, "--selftest") {
				t.Errorf("%+v", inv)
			}
			if len(args) > 4 && inv.replaced != "./train" {
				t.Errorf("the replaced program is %q", inv.replaced)
			}
		})
	}
	if _, err := parseArgs([]string{"--nproc_per_node", "2"}, nil); err == nil || !strings.Contains(err.Error(), "no program to run (or --selftest)") {
		t.Errorf("no program and no --selftest: %v", err)
	}
}

// TestSelfTestTable: rank 0's report lists every rank in rank order, gives the bandwidth of the
// slowest rank, writes what many ranks share once with their ranks, and leads with the failure.
func TestSelfTestTable(t *testing.T) {
	disc := SelfTestDiscovery{Backend: "xla:cpu", Plugin: "/p/cpu.so", Devices: 2, Reason: "XLA's CPU plugin was found"}
	rows := []selfTestRow{
		{Rank: 1, Node: 0, Local: 1, Host: "a", PID: 11, Interfaces: "lo 127.0.0.1/8", Discovery: disc, MPI: "libmpi (mpich)",
			Barrier: time.Millisecond, Allreduce: 100 * time.Millisecond},
		{Rank: 0, Node: 0, Local: 0, Host: "a", PID: 10, Interfaces: "lo 127.0.0.1/8", Discovery: disc, MPI: "libmpi (mpich)",
			Allreduce: 50 * time.Millisecond},
		{Rank: 2, Node: 1, Local: 0, Host: "b", PID: 12, Interfaces: "eth0 10.0.0.2/24", Discovery: SelfTestDiscovery{Backend: "go", Devices: 1, Reason: "no plugin"},
			MPI: "libmpi (mpich)", Allreduce: 80 * time.Millisecond},
	}
	got := selfTestTable(rows)
	for _, want := range []string{
		"3 rank(s) on 2 node(s), 2 host(s): every rank joined, passed the barrier and summed 64 MiB correctly",
		"the slowest rank's 100.0 ms is 0.67 GB/s of data (64 MiB / time), 0.89 GB/s on the bus",
		"  ranks 0-1: xla:cpu (/p/cpu.so), 2 device(s): XLA's CPU plugin was found\n  rank 2: go, 1 device(s): no plugin\n",
		"  ranks 0-2: libmpi (mpich)\n",
		"  ranks 0-1: a: lo 127.0.0.1/8\n  rank 2: b: eth0 10.0.0.2/24\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report misses %q:\n%s", want, got)
		}
	}
	lines := strings.Split(got, "\n")
	if !strings.HasSuffix(lines[3], "50.0 ms            1.34") || !strings.HasPrefix(lines[4], "  1     0     1      a     11   all   xla:cpu") {
		t.Errorf("rows out of rank order or misaligned:\n%s", got)
	}
	rows[2].Failed = "all-reduce: element 7 is 3 after summing rank+1 over 3 ranks, want 6"
	if got := selfTestTable(rows); !strings.Contains(got, "2 host(s): FAILED: rank 2: all-reduce: element 7") {
		t.Errorf("the failure is not in the first line:\n%s", got)
	}
}
