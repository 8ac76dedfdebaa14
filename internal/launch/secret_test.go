package launch

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordingProxy forwards connections from its port to target and records what the first
// connection's client sent: a captured launcher-to-master exchange.
type recordingProxy struct {
	ln       net.Listener
	mu       sync.Mutex
	captured []string // the first connection's client lines
}

func newRecordingProxy(t *testing.T, target string) *recordingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &recordingProxy{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		first := true
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			record := first
			first = false
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(c, up) }()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if record {
						p.mu.Lock()
						p.captured = append(p.captured, line)
						p.mu.Unlock()
					}
					if _, err := up.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return p
}

func (p *recordingProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// authLine is the captured exchange's proof, once the launcher sent it.
func (p *recordingProxy) authLine() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.captured {
		if strings.HasPrefix(l, "cmd=auth ") {
			return l
		}
	}
	return ""
}

// rogue connects to the master at addr, reads its challenge, sends lines (answer, given the
// challenge's nonce, makes them) and returns everything the master said until it closed.
func rogue(t *testing.T, addr string, answer func(nonce string) []string) []string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("rogue client: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(authWait + 5*time.Second)) // a refused client is closed within authWait
	r := bufio.NewReader(c)
	challenge, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("rogue client: no challenge: %v", err)
	}
	said := []string{strings.TrimSpace(challenge)}
	for _, l := range answer(parseMessage(strings.TrimSpace(challenge), true).args["nonce"]) {
		if _, err := c.Write([]byte(l)); err != nil {
			break
		}
	}
	for {
		line, err := r.ReadString('\n') // the master closes a refused connection
		if err != nil {
			return said
		}
		said = append(said, strings.TrimSpace(line))
	}
}

// TestRogueClientsRefused: a two-node job (two launchers on 127.0.0.1, node_rank 1's through a
// proxy that captures its exchange with the master), whose MPI ranks wait at a gate; meanwhile
// three clients connect to the master's port: one without the secret (a join for node_rank 1
// and a PMI barrier_in, what an open port accepted before), one proving a wrong secret, one
// replaying node_rank 1's captured proof. Each is refused, closed and logged by the master;
// then the gate opens and the job's four ranks all-reduce and finish.
func TestRogueClientsRefused(t *testing.T) {
	needMPI(t)
	c0, dir, out := testJob(t, "gompi", 2, "GOACCEL_DEVICES=2", "GATE_FILE="+filepath.Join(t.TempDir(), "gate"))
	gate := ""
	for _, kv := range c0.Env {
		if v, ok := strings.CutPrefix(kv, "GATE_FILE="); ok {
			gate = v
		}
	}
	c0.Tee, c0.Timeout, c0.Secret = 1, 2*time.Minute, testSecret
	c1 := c0
	c1.LogDir = filepath.Join(dir, "logs1")
	port := freePort(t)
	master := "127.0.0.1:" + strconv.Itoa(port)
	proxy := newRecordingProxy(t, master)
	c0.NNodes, c0.NodeRank, c0.MasterAddr, c0.MasterPort = 2, 0, "127.0.0.1", port
	c1.NNodes, c1.NodeRank, c1.MasterAddr, c1.MasterPort = 2, 1, "127.0.0.1", proxy.port()
	// node_rank 1's launcher starts once the master listens: before, the proxy would accept its
	// connection and close it (the master's port refusing the proxy's), and a launcher whose
	// connection is closed unanswered gives up (it retries only a refused one).
	listening := make(chan struct{})
	c0.OnListen = func(int) error { close(listening); return nil }
	errs := make([]error, 2)
	ended := make(chan int, 2) // a node whose Run returned
	var wg sync.WaitGroup
	start := func(i int, c Config) {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = Run(context.Background(), c); ended <- i }()
	}
	start(0, c0)
	select {
	case <-listening:
	case <-ended:
		t.Fatalf("the master ended before it listened: %v\n%s", errs[0], out)
	}
	start(1, c1)
	// The ranks of both nodes started (node_rank 1 joined through the proxy): its proof is captured.
	deadline := time.Now().Add(time.Minute)
	for proxy.authLine() == "" || strings.Count(out.String(), "starting (gompi)") < 4 {
		select {
		case i := <-ended:
			wg.Wait()
			t.Fatalf("node_rank %d ended before the job started: %v (node_rank 0: %v, node_rank 1: %v)\n%s", i, errs[i], errs[0], errs[1], out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job did not start within a minute:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	captured := proxy.authLine()

	noSecret := rogue(t, master, func(string) []string {
		return []string{"cmd=join attempt=0 host=rogue node=1 nproc=1\n", "cmd=barrier_in\n"}
	})
	wrong := rogue(t, master, func(n string) []string {
		return []string{msg("auth", "nonce", nonce(), "mac", proof("a wrong secret of 16 bytes", "launcher", n, "x")).format(true)}
	})
	replayed := rogue(t, master, func(string) []string { return []string{captured} })
	for name, said := range map[string][]string{"no secret": noSecret, "wrong secret": wrong, "replayed": replayed} {
		for _, l := range said {
			if strings.HasPrefix(l, "cmd=authok") || strings.HasPrefix(l, "cmd=joined") || strings.HasPrefix(l, "cmd=go") {
				t.Errorf("%s: the master admitted it: %q", name, said)
			}
		}
		t.Logf("%s: the master said %q and closed", name, said)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v\n%s", i, err, out)
		}
	}
	if got := strings.Count(out.String(), "of 4 (") + strings.Count(out.String(), "allreduce 10"); got != 8 {
		t.Errorf("want 4 ranks with allreduce 10:\n%s", out)
	}
	for _, want := range []string{
		`refused a connection from 127.0.0.1:` /* each */, `no proof of the job secret (its first line: "cmd=join attempt=0 host=rogue node=1 nproc=1")`,
		"a wrong proof of the job secret (another secret, or an exchange replayed from another connection)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the master's log lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out.String(), "refused a connection from"); n != 3 {
		t.Errorf("%d refusals logged, want 3:\n%s", n, out)
	}
}

// TestWrongSecretNamed: a node whose launcher has another secret than the master's is refused
// with a message that says so, on both sides, and the job does not start.
func TestWrongSecretNamed(t *testing.T) {
	c0, _, out := testJob(t, "env", 1)
	c0.JoinTimeout = 3 * time.Second
	c1 := c0
	c1.Secret = "another secret, 16 bytes or more"
	errs := runNodes(t, []Config{c0, c1})
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "its job secret differs") {
		t.Errorf("node_rank 1: %v, want a refusal naming the job secret", errs[1])
	}
	if errs[0] == nil || !strings.Contains(out.String(), "a wrong proof of the job secret") {
		t.Errorf("node_rank 0: %v, want the job not to start and the refusal logged\n%s", errs[0], out)
	}
}

// TestSecretRequiredForSeveralNodes: a launcher of a job of several nodes without a secret
// says how to give one; a short one is refused; a file readable by others is refused.
func TestSecretRequiredForSeveralNodes(t *testing.T) {
	cfg := Config{Program: "true", NNodes: 2, NodeRank: 1, Env: []string{"PATH=/usr/bin:/bin"}}
	if err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "GOACCEL_JOB_SECRET") {
		t.Errorf("no secret: %v", err)
	}
	cfg.Env = append(cfg.Env, "GOACCEL_JOB_SECRET=short")
	if err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "has 5 bytes: give at least 16") {
		t.Errorf("short secret: %v", err)
	}
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte(testSecret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readSecretFile(path, nil); err == nil || !strings.Contains(err.Error(), "chmod 600 "+path) {
		t.Errorf("a file others may read: %v", err)
	}
	_ = os.Chmod(path, 0o600)
	if s, err := readSecretFile(path, nil); err != nil || s != testSecret {
		t.Errorf("a 0600 file: %q, %v", s, err)
	}
	if s, err := readSecretFile("-", strings.NewReader(testSecret+"\n")); err != nil || s != testSecret {
		t.Errorf("standard input: %q, %v", s, err)
	}
}
