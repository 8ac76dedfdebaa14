package launch

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeLauncher is a connection to a server that proved the job secret, as a launcher's does.
type fakeLauncher struct {
	conn net.Conn
	r    *bufio.Reader
}

// dialFake connects to the server at addr and proves secret.
func dialFake(t *testing.T, addr, secret string) *fakeLauncher {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial the rendezvous at %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	f := &fakeLauncher{conn: c, r: bufio.NewReader(c)}
	challenge := f.read(t)
	mine := nonce()
	f.send(t, msg("auth", "nonce", mine, "mac", proof(secret, "launcher", challenge.args["nonce"], mine)))
	if m := f.read(t); m.cmd != "authok" {
		t.Fatalf("the server answered the proof with %q", m.format(true))
	}
	return f
}

func (f *fakeLauncher) send(t *testing.T, m message) {
	t.Helper()
	if _, err := f.conn.Write([]byte(m.format(true))); err != nil {
		t.Fatal(err)
	}
}

// join joins attempt 0 of a static job as node_rank node, with one rank, and waits for the
// master's answer.
func (f *fakeLauncher) join(t *testing.T, node int) {
	t.Helper()
	f.send(t, msg("join", "node", node, "nproc", 1, "attempt", 0))
	if m := f.read(t); m.cmd != "joined" {
		t.Fatalf("node_rank %d's join was answered %q", node, m.format(true))
	}
}

func (f *fakeLauncher) read(t *testing.T) message {
	t.Helper()
	_ = f.conn.SetReadDeadline(time.Now().Add(time.Minute))
	line, err := readLine(f.r)
	if err != nil {
		t.Fatalf("reading from the rendezvous: %v", err)
	}
	return parseMessage(line, true)
}

// lines collects what a server says.
type lines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lines) sayf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.b, format+"\n", args...)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// closing closes srv in the background; the channel is closed when close returns.
func closing(srv *server) chan struct{} {
	done := make(chan struct{})
	go func() { srv.close(); close(done) }()
	return done
}

// TestCloseTimeout: torchrun's --rdzv_conf close_timeout. When the job is over, the master's
// close keeps the rendezvous open until every launcher still connected hung up (here one of a
// 2-node job, at once when it does, long before close_timeout's 30 s); a launcher that joins
// meanwhile is told the job is over, instead of finding the port closed. A launcher that never
// hangs up holds the close only for close_timeout, and the master names it; close_timeout=0
// (-1 in the Config) closes at once.
func TestCloseTimeout(t *testing.T) {
	say := &lines{}
	cfg := &Config{NNodes: 2, JoinTimeout: time.Minute, CloseTimeout: 30 * time.Second}
	srv, err := newServer("127.0.0.1:0", testSecret, 0, cfg, say.sayf)
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.ln.Addr().String()
	node1 := dialFake(t, addr, testSecret)
	node1.join(t, 1)
	// The job ends (here by --timeout, before node_rank 0 came); the master tells node1.
	srv.stopAll("timeout", "the job ran out of time")
	if m := node1.read(t); m.cmd != "stop" || m.args["kind"] != "timeout" {
		t.Fatalf("node_rank 1 heard %q, want the job's end", m.format(true))
	}
	start := time.Now()
	srv.closeWaits = make(chan struct{})
	done := closing(srv)
	select {
	case <-srv.closeWaits:
	case <-done:
		t.Fatalf("close returned while node_rank 1's launcher is still connected\n%s", say)
	}
	late := dialFake(t, addr, testSecret) // the port still answers: node1 has not hung up
	late.send(t, msg("join", "node", 0, "nproc", 1, "attempt", 0))
	if m := late.read(t); m.cmd != "stop" || m.args["why"] != "the job is already over" {
		t.Fatalf("a launcher joining while the rendezvous closes got %q, want the job's end", m.format(true))
	}
	late.conn.Close()
	node1.conn.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("close did not return within 10 s of the last launcher hanging up (close_timeout 30 s)\n%s", say)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Errorf("the rendezvous still listens after close")
	}
	t.Logf("closed %s after it began, once both launchers hung up", time.Since(start).Round(time.Millisecond))

	for _, c := range []struct {
		timeout time.Duration
		named   bool
	}{{200 * time.Millisecond, true}, {-1, false}} {
		say := &lines{}
		srv, err := newServer("127.0.0.1:0", testSecret, 0, &Config{NNodes: 2, JoinTimeout: time.Minute, CloseTimeout: c.timeout}, say.sayf)
		if err != nil {
			t.Fatal(err)
		}
		stays := dialFake(t, srv.ln.Addr().String(), testSecret)
		stays.join(t, 1)
		select {
		case <-closing(srv):
		case <-time.After(10 * time.Second):
			t.Fatalf("close_timeout %s: close still waits after 10 s for a launcher that does not hang up", c.timeout)
		}
		const want = "closing the rendezvous without waiting any longer for the launcher of node_rank 1 to hang up " +
			"(--rdzv_conf close_timeout=0.2 s)"
		if got := strings.Contains(say.String(), want); got != c.named {
			t.Errorf("close_timeout %s: the master said\n%s\nwant the line %q: %v", c.timeout, say, want, c.named)
		}
	}
}
