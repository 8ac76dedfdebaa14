package launch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/timeline"
)

// Config is one launcher's job: the program, how many ranks this node runs, and where the
// node_rank 0 launcher (the master) listens. The zero value of every optional field works.
type Config struct {
	// Program is the worker program (a path, or a name looked up in $PATH); Args its arguments.
	// Go source, a main.go or a package's folder as `go run` takes them, is built once with
	// `go build` before the ranks start (and the executable removed when Run returns).
	Program string
	Args    []string
	// Arg0, when set, is what the ranks see as their os.Args[0] (default Program).
	Arg0 string
	// NprocPerNode is the number of ranks this launcher starts (default 1); see ResolveNproc.
	NprocPerNode int
	// NNodes is the number of launchers (nodes) of the job (default 1); NodeRank is this one's
	// index, 0 for the master. In an elastic job NNodes is the most nodes, and NodeRank only
	// says whether this launcher is the master (0) or joins it (any other value; the command
	// line gives -1 without --node_rank): the master numbers the nodes at every start.
	NNodes, NodeRank int
	// MinNodes, when positive, makes the job elastic (torchrun's --nnodes MIN:MAX): it runs on
	// MinNodes to NNodes nodes, re-formed when a node goes away or comes (see elastic.go).
	MinNodes int
	// LastCallTimeout is how long an elastic job's master, once MinNodes (but fewer than
	// NNodes) launchers joined, waits for more before it starts (torchrun's --rdzv_conf
	// last_call_timeout; default 30 s).
	LastCallTimeout time.Duration
	// MasterAddr and MasterPort are where the master listens (for the launchers of the nodes).
	// Defaults: 127.0.0.1; with one node a free port, with several DefaultMasterPort. The
	// ranks' MASTER_PORT, where rank 0 may bind a store of its own (PyTorch's), is
	// MasterPort+1, or a free port when MasterPort is 0.
	MasterAddr string
	MasterPort int
	// RdzvID is the job's id (torchrun's --rdzv_id): a launcher whose id differs from the
	// master's is refused, naming both ("": none, which matches only "").
	RdzvID string
	// BindMaster makes a launcher without a node rank (NodeRank -1, an elastic or c10d job)
	// whose MasterAddr names this machine try to serve the rendezvous itself: the first that
	// binds MasterPort is the master, the others join it (torchrun's c10d backend).
	BindMaster bool
	// CloseTimeout is torchrun's --rdzv_conf close_timeout: how long the master, once the job
	// ended, keeps its rendezvous open for the launchers still connected to hear the end and
	// hang up (a launcher that joins meanwhile is told the job is over); it stops listening as
	// soon as they all did. Default DefaultCloseTimeout; negative: it closes at once.
	CloseTimeout time.Duration
	// MaxRestarts is how many times the whole group restarts after a worker failure (in an
	// elastic job, also after the loss of a node).
	MaxRestarts int
	// LogDir receives LogDir/attempt_A/rank_R/{stdout,stderr}.log; "" makes a temporary folder
	// (goaccel-launch-*), removed when the job succeeds and kept when it fails.
	LogDir string
	// Tee chooses what the terminal shows besides the logs: 0 (the default) rank 0's stdout
	// and stderr; 1 every local rank's stdout; 2 their stderr; 3 both; TeeNone nothing.
	// Lines of several ranks are prefixed "[rank N] ".
	Tee int
	// Timeout, when positive, stops the whole job after that long (set on the master).
	Timeout time.Duration
	// JoinTimeout bounds the wait for all nodes' launchers (default 5 minutes).
	JoinTimeout time.Duration
	// StopGrace is how long stopped workers get between SIGTERM and SIGKILL (default 5 s).
	StopGrace time.Duration
	// NoCPUBind leaves the ranks on every CPU of the launcher. By default, with several local
	// ranks, each is bound to its share of the launcher's CPUs (see the package doc).
	NoCPUBind bool
	// Env is the workers' base environment (nil: this process's).
	Env []string
	// Secret is the job secret every launcher proves to the master's port, the same on every
	// node ("": $GOACCEL_JOB_SECRET from Env; a job of one node makes its own). See secret.go.
	Secret string
	// MPILib is passed to the ranks as $GOACCEL_MPI_LIB when they do not set it.
	MPILib string
	// Stdout and Stderr receive the workers' shown output and the launcher's messages
	// (nil: os.Stdout, os.Stderr).
	Stdout, Stderr io.Writer
	// Kill, when closed, kills every worker at once (SIGKILL): a second Ctrl-C.
	Kill <-chan struct{}
	// OnListen, on the master, is called with its port before any rank starts: the place to
	// start the launchers of the other nodes (horovodrun's -H does).
	OnListen func(port int) error
	// SelfTest marks the job of goaccel launch --selftest: a node_rank > 0 launcher that cannot
	// reach the master gives up after 8 s instead of JoinTimeout, and rank 0's output (the
	// report) is shown without its "[rank 0] " prefix.
	SelfTest bool

	// What only this package's tests change (their options set it; zero: the defaults).
	noGuardian    bool          // start no guardian: the parent-death signal alone stops the ranks
	selfTestDial  time.Duration // a self-test node's limit for reaching the master (0: selfTestDial)
	progressEvery time.Duration // how often a wait is reported (0: progressEvery)
}

// defaultStopGrace is Config.StopGrace's default.
const defaultStopGrace = 5 * time.Second

// sayEvery is how often a launcher of c that waits for another says what it waits for.
func (c *Config) sayEvery() time.Duration {
	if c.progressEvery > 0 {
		return c.progressEvery
	}
	return progressEvery
}

// TeeNone is Config.Tee's value for "no worker output on the terminal" (torchrun's --tee 0).
const TeeNone = -1

// nnodesSpec writes the job's nodes as --nnodes takes them: "4", or "2:4" for an elastic job.
func (c *Config) nnodesSpec() string {
	if c.MinNodes > 0 {
		return fmt.Sprintf("%d:%d", c.MinNodes, c.NNodes)
	}
	return strconv.Itoa(c.NNodes)
}

// DefaultLastCallTimeout is Config.LastCallTimeout's default (torchrun's last_call_timeout).
const DefaultLastCallTimeout = 30 * time.Second

// DefaultCloseTimeout is Config.CloseTimeout's default (torchrun's close_timeout).
const DefaultCloseTimeout = 30 * time.Second

// DefaultMasterPort is the master's port for a job of several nodes without --master_port (torchrun's).
const DefaultMasterPort = 29500

// Failure is the error of a job that did not end with every rank exiting 0.
type Failure struct {
	// Kind is "worker" (a rank exited non-zero or was killed), "start" (a rank could not be
	// started), "interrupt" (Ctrl-C or SIGTERM on a launcher), "timeout" (Config.Timeout),
	// "node" (a node's launcher went away), "join" (the nodes did not all join), "master"
	// (the connection to the master was lost).
	Kind string
	// Rank is the global rank that failed first (-1 when no rank is to blame); Node the
	// node_rank it ran on, Host that node's host name and PID its process id.
	Rank, Node int
	Host       string
	PID        int
	// What is how it ended: "exit code 3", "signal: killed".
	What string
	// Log is the folder with its stdout.log and stderr.log, on Host.
	Log string
	// Why is the whole story when Rank is -1, or MPI_Abort's message.
	Why string
	// Attempt counts restarts before the failure (0: the first attempt).
	Attempt int
}

func (f *Failure) Error() string {
	var b strings.Builder
	if f.Rank >= 0 {
		fmt.Fprintf(&b, "rank %d (node_rank %d on %s, pid %d) failed first: %s", f.Rank, f.Node, f.Host, f.PID, f.What)
		if f.Why != "" {
			fmt.Fprintf(&b, " (%s)", f.Why)
		}
		if f.Log != "" {
			fmt.Fprintf(&b, "; its log: %s/{stdout,stderr}.log", f.Log)
		}
		b.WriteString("; the other ranks were stopped")
	} else {
		b.WriteString(f.Why)
	}
	if f.Attempt > 0 {
		fmt.Fprintf(&b, " (after %d restart(s))", f.Attempt)
	}
	return b.String()
}

func failureFrom(m message) *Failure {
	f := &Failure{Kind: m.args["kind"], Rank: -1, Node: -1}
	if r, err := strconv.Atoi(m.args["rank"]); err == nil {
		f.Rank = r
	}
	f.Node, _ = strconv.Atoi(m.args["node"])
	f.PID, _ = strconv.Atoi(m.args["pid"])
	f.Attempt, _ = strconv.Atoi(m.args["attempt"])
	if r, err := strconv.Atoi(m.args["restarts"]); err == nil {
		f.Attempt = r // an elastic job's attempts also count its re-formations
	}
	f.Host, f.What, f.Log, f.Why = m.args["host"], m.args["what"], m.args["log"], m.args["why"]
	if a := m.args["abort"]; a != "" {
		f.Why = "MPI_Abort: " + a
	}
	return f
}

func (c *Config) defaults() error {
	if c.NprocPerNode == 0 {
		c.NprocPerNode = 1
	}
	if c.NNodes == 0 {
		c.NNodes = 1
	}
	if c.MasterAddr == "" {
		c.MasterAddr = "127.0.0.1"
	}
	if c.MasterPort == 0 && c.NNodes > 1 {
		c.MasterPort = DefaultMasterPort
	}
	if c.JoinTimeout <= 0 {
		c.JoinTimeout = 5 * time.Minute
	}
	if c.LastCallTimeout <= 0 {
		c.LastCallTimeout = DefaultLastCallTimeout
	}
	if c.CloseTimeout == 0 {
		c.CloseTimeout = DefaultCloseTimeout
	}
	if c.StopGrace <= 0 {
		c.StopGrace = defaultStopGrace
	}
	if c.Env == nil {
		c.Env = envvar.Environ()
	}
	if c.Stdout == nil {
		c.Stdout = os.Stdout
	}
	if c.Stderr == nil {
		c.Stderr = os.Stderr
	}
	switch {
	case c.Program == "":
		return errors.New("no program to run: usage: goaccel launch [flags] PROGRAM [ARGS...]")
	case c.NprocPerNode < 0:
		return fmt.Errorf("--nproc_per_node %d: want a positive number", c.NprocPerNode)
	case c.MinNodes < 0 || c.MinNodes > c.NNodes:
		return fmt.Errorf("--nnodes %d:%d: want 1 <= MIN <= MAX", c.MinNodes, c.NNodes)
	case c.MinNodes > 0:
	case c.NNodes < 0 || c.NodeRank < 0 || c.NodeRank >= c.NNodes:
		return fmt.Errorf("--node_rank %d is out of range for --nnodes %d (0 to %d)", c.NodeRank, c.NNodes, c.NNodes-1)
	case c.MaxRestarts < 0:
		return fmt.Errorf("--max_restarts %d: want 0 or more", c.MaxRestarts)
	case c.Tee < TeeNone || c.Tee > 3:
		return fmt.Errorf("--tee %d: want 0 (none), 1 (stdout), 2 (stderr) or 3 (both)", c.Tee)
	}
	return checkProgram(c.Program)
}

// checkProgram says what is wrong with a program that cannot be started: not found, a
// directory, or a file without execute permission.
func checkProgram(program string) error {
	if strings.HasSuffix(program, ".go") { // Go source that Run would have built had it been there
		if _, err := os.Stat(program); err != nil {
			return fmt.Errorf("program %s: no such Go file (%w)", program, unwrapPath(err))
		}
	}
	if strings.Contains(program, "/") {
		st, err := os.Stat(program)
		switch {
		case err == nil && st.IsDir():
			return fmt.Errorf("program %s is a directory: give the program inside it", program)
		case err == nil && st.Mode()&0o111 == 0:
			hint := "chmod +x " + program
			switch filepath.Ext(program) {
			case ".py":
				hint += ", or name its interpreter: goaccel launch [flags] python3 " + program
			case ".sh":
				hint += ", or name its interpreter: goaccel launch [flags] bash " + program
			}
			return fmt.Errorf("program %s is not executable (%s)", program, hint)
		}
	}
	if _, err := exec.LookPath(program); err != nil {
		return fmt.Errorf("program %q not found: %w (give a path such as ./%s, or a name in $PATH)",
			program, unwrapExec(err), filepath.Base(program))
	}
	return nil
}

func unwrapPath(err error) error {
	var e *os.PathError
	if errors.As(err, &e) {
		return e.Err
	}
	return err
}

func unwrapExec(err error) error {
	var e *exec.Error
	if errors.As(err, &e) {
		return e.Err
	}
	return err
}

// Run runs the job's share of this node and returns when the job is over: nil when every rank
// of every node exited 0, a *Failure otherwise, another error for bad configuration. Cancelling
// ctx stops the job (every rank of every node gets SIGTERM, then SIGKILL after StopGrace) and
// Run returns a Failure of kind "interrupt".
func Run(ctx context.Context, cfg Config) error {
	if goSource(cfg.Program) {
		exe, cleanup, err := buildGo(ctx, cfg.Program, sayTo(cfg.Stderr))
		if err != nil {
			return err
		}
		defer cleanup()
		cfg.Program = exe
	}
	if err := cfg.defaults(); err != nil {
		return err
	}
	if err := cfg.resolveSecret(); err != nil {
		return err
	}
	shares, note, err := splitNode(cfg.Env, cfg.NprocPerNode)
	if err != nil {
		return err
	}
	if cfg.LogDir == "" {
		if cfg.LogDir, err = os.MkdirTemp("", "goaccel-launch-"); err != nil {
			return err
		}
		err = run(ctx, cfg, shares, note, true)
		if err == nil {
			// A job that succeeded is not worth a folder per launch. A failure's logs stay (its
			// message says where); the folder goes only when no rank wrote into it.
			_ = os.RemoveAll(cfg.LogDir)
		} else {
			_ = os.Remove(cfg.LogDir)
		}
		return err
	}
	return run(ctx, cfg, shares, note, false)
}

// run is Run after the defaults and the CPU shares, tempLogs saying that cfg.LogDir is
// the temporary folder Run made.
func run(ctx context.Context, cfg Config, shares []share, note string, tempLogs bool) error {
	var err error
	if cfg.LogDir, err = filepath.Abs(cfg.LogDir); err != nil {
		return err
	}
	l := &launcher{cfg: cfg, shares: shares, host: hostname(), tempLogs: tempLogs}
	if l.guard, err = startGuardian(cfg.noGuardian); err != nil {
		l.sayf("cannot start the guardian that stops the ranks should this launcher be killed: %v", err)
	}
	defer l.guard.finish()
	if !cfg.NoCPUBind {
		l.cpus = cpuShares(cfg.NprocPerNode)
	}
	if note != "" {
		l.sayf("%s", note)
	}
	masterAddr := net.JoinHostPort(cfg.MasterAddr, strconv.Itoa(cfg.MasterPort))
	if cfg.BindMaster && cfg.NodeRank < 0 && isLocalHost(cfg.MasterAddr) {
		// torchrun's c10d: the first launcher that binds the endpoint's port serves it.
		stop, err := startMaster(l, &cfg, masterAddr)
		switch {
		case err == nil:
			defer stop()
			cfg.NodeRank, l.cfg.NodeRank = 0, 0
			l.sayf("serving the rendezvous at %s (--rdzv_endpoint: the first launcher there to bind its port serves it)", masterAddr)
		case !errors.Is(err, syscall.EADDRINUSE):
			return err
		}
	} else if cfg.NodeRank == 0 {
		stop, err := startMaster(l, &cfg, masterAddr)
		if err != nil {
			return err
		}
		defer stop()
	}
	if cfg.NodeRank == 0 {
		masterAddr = net.JoinHostPort(cfg.MasterAddr, strconv.Itoa(l.cfg.MasterPort))
	}
	wait := cfg.JoinTimeout
	if cfg.SelfTest && cfg.NodeRank != 0 {
		dial := selfTestDial
		if cfg.selfTestDial > 0 {
			dial = cfg.selfTestDial
		}
		wait = min(wait, dial)
	}
	dialStart := time.Now()
	ctl, err := dialMaster(ctx, masterAddr, wait, cfg.JoinTimeout, cfg.sayEvery(), l.sayf)
	if err != nil {
		return err
	}
	defer ctl.conn.Close()
	// The master answers a join at once; a second after connecting is plenty even at the end of wait.
	ackBy := dialStart.Add(wait)
	if soon := time.Now().Add(time.Second); ackBy.Before(soon) {
		ackBy = soon
	}
	l.ctl, l.masterAddr, l.ackBy, l.ackLimit = ctl, masterAddr, ackBy, wait
	return l.loop(ctx)
}

// startMaster makes l the master: it serves the job's rendezvous and PMI on masterAddr (every
// interface when the job has several nodes and the address is not a loopback one), arms
// --timeout and calls OnListen. stop ends it.
func startMaster(l *launcher, cfg *Config, masterAddr string) (stop func(), err error) {
	bind := masterAddr
	if cfg.NNodes > 1 && !isLoopback(cfg.MasterAddr) {
		bind = net.JoinHostPort("", strconv.Itoa(cfg.MasterPort)) // other machines must reach it
	}
	store, err := storePort(bind, cfg.MasterPort, l.sayf)
	if err != nil {
		return nil, err
	}
	srv, err := newServer(bind, cfg.Secret, store, cfg, l.sayf)
	if err != nil {
		return nil, err
	}
	srv.rdzvID = cfg.RdzvID
	l.cfg.MasterPort = srv.port()
	t := &time.Timer{}
	if cfg.Timeout > 0 {
		t = time.AfterFunc(cfg.Timeout, func() {
			srv.stopAll("timeout", fmt.Sprintf("the job ran out of time (--timeout %s): every rank was stopped", cfg.Timeout))
		})
	}
	stop = func() {
		if cfg.Timeout > 0 {
			t.Stop()
		}
		srv.close()
	}
	if cfg.OnListen != nil {
		if err := cfg.OnListen(l.cfg.MasterPort); err != nil {
			stop()
			return nil, err
		}
	}
	return stop, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// storePort chooses the ranks' MASTER_PORT, the port where rank 0 of a PyTorch job binds its
// store (init_process_group's TCPStore): the launcher's own port+1 when --master_port is given
// (a firewall opens both), else a free port of bind's host. A given port+1 that is in use now
// is only a warning, since a program that binds no store does not need it.
func storePort(bind string, masterPort int, warnf func(string, ...any)) (int, error) {
	host, _, _ := net.SplitHostPort(bind)
	if masterPort == 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return 0, fmt.Errorf("cannot find a free port on %s for the ranks' MASTER_PORT: %w", bind, err)
		}
		defer ln.Close()
		return ln.Addr().(*net.TCPAddr).Port, nil
	}
	p := masterPort + 1
	if p > 65535 {
		return 0, fmt.Errorf("--master_port %d: the ranks' MASTER_PORT is --master_port+1, so choose at most 65534", masterPort)
	}
	if ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p))); err != nil {
		warnf("port %d, the ranks' MASTER_PORT (--master_port+1), is in use: a rank 0 that binds a store there "+
			"(PyTorch's init_process_group) will fail (%v)", p, err)
	} else {
		ln.Close()
	}
	return p, nil
}

// control is a launcher's connection to the master.
type control struct {
	conn net.Conn
	wmu  sync.Mutex
	in   chan message // closed when the connection ends
	// relay receives the master's answers to the ranks' relayed PMI commands (pmi_*), which
	// bypass in; nil between attempts.
	rmu   sync.Mutex
	relay *pmiRelay
}

// setRelay makes r the receiver of the master's PMI answers (nil: none).
func (c *control) setRelay(r *pmiRelay) {
	c.rmu.Lock()
	c.relay = r
	c.rmu.Unlock()
}

func (c *control) send(m message) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := c.conn.Write([]byte(m.format(true)))
	return err
}

// progressEvery is how often a launcher that waits for another says what it waits for
// (Config.sayEvery).
const progressEvery = 10 * time.Second

// dialMaster connects to the master, retrying while it is not up yet (other nodes' launchers
// may start first), for at most wait, saying every `every` what it waits for; joinTimeout is
// the --join_timeout that wait comes from (shorter under --selftest).
func dialMaster(ctx context.Context, addr string, wait, joinTimeout, every time.Duration, sayf func(string, ...any)) (*control, error) {
	start := time.Now()
	deadline := start.Add(wait)
	nextSay := start.Add(every)
	for {
		d := net.Dialer{Timeout: min(5*time.Second, max(time.Until(deadline), 100*time.Millisecond))}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c := &control{conn: conn, in: make(chan message, 16)}
			go func() {
				defer close(c.in)
				r := bufio.NewReader(conn)
				for {
					line, err := readLine(r)
					if err != nil {
						return
					}
					m := parseMessage(line, true)
					if m.cmd == "" {
						m.args["line"] = line // not goaccel's: kept for the message
					}
					if strings.HasPrefix(m.cmd, "pmi_") {
						c.rmu.Lock()
						if c.relay != nil {
							c.relay.fromMaster(m)
						}
						c.rmu.Unlock()
						continue
					}
					c.in <- m
				}
			}()
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, &Failure{Kind: "interrupt", Rank: -1, Why: "interrupted while connecting to the master at " + addr}
		}
		if time.Now().After(deadline) {
			limit := "--join_timeout"
			if wait < joinTimeout {
				limit = "--selftest's limit; a normal launch waits --join_timeout"
			}
			return nil, &Failure{Kind: "join", Rank: -1, Why: fmt.Sprintf("cannot reach the node_rank 0 launcher at %s "+
				"within %s (%s): %v (is it running, with the same --master_addr and --master_port, and is the port open?)",
				addr, wait.Round(time.Millisecond), limit, err)}
		}
		if now := time.Now(); now.After(nextSay) {
			sayf("waiting for node_rank 0's launcher at %s (%s of %s): %v", addr, seconds(now.Sub(start)), seconds(joinTimeout), err)
			nextSay = nextSay.Add(every)
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// launcher runs one node's ranks, attempt after attempt.
type launcher struct {
	cfg    Config
	shares []share
	cpus   [][]int // per local rank; nil: unbound
	host   string
	ctl    *control
	guard  *guardian // nil: none
	// storePort is the ranks' MASTER_PORT, as the master chose it (storePort).
	storePort int
	// node, nnodes and restarts are this node's rank, the number of nodes and the restarts
	// so far, as the master gave them for the current attempt (in an elastic job they change).
	node, nnodes, restarts int
	out                    *terminal
	errOut                 *terminal
	mu                     sync.Mutex // guards l.cfg.Stderr writes from several goroutines through sayf
	// masterAddr is the master's host:port; ackBy is when the master must have answered the
	// first join ("joined"), ackLimit the wait that ends then (a program on the port that is
	// not goaccel's master never answers).
	masterAddr string
	ackBy      time.Time
	ackLimit   time.Duration
	// tempLogs says that cfg.LogDir is the temporary folder Run made (no --log_dir), which
	// it removes when the job succeeds.
	tempLogs bool
}

func (l *launcher) sayf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.cfg.Stderr, "goaccel launch: "+format+"\n", args...)
}

// loop joins attempt after attempt until the job finished or stopped without restart.
func (l *launcher) loop(ctx context.Context) error {
	l.out, l.errOut = &terminal{w: l.cfg.Stdout}, &terminal{w: l.cfg.Stderr}
	if err := l.authenticate(ctx); err != nil {
		return err
	}
	for next := 0; ; {
		if err := l.ctl.send(msg("join", "node", l.cfg.NodeRank, "nproc", l.cfg.NprocPerNode, "attempt", next, "rdzv_id", l.cfg.RdzvID,
			"host", l.host, "id", fmt.Sprintf("%s (launcher pid %d)", l.host, os.Getpid()),
			"master", btoi(l.cfg.NodeRank == 0), "nnodes", l.cfg.nnodesSpec())); err != nil {
			return l.lost(err)
		}
		start, err := l.awaitStart(ctx, next == 0)
		if err != nil {
			return err
		}
		switch start.cmd {
		case "stop":
			return failureFrom(start)
		case "finished": // an elastic job's spare: the job ended without it
			l.sayf("the job finished before this node was needed")
			return nil
		case "go":
		default:
			return l.notMaster(answered(start))
		}
		attempt, _ := strconv.Atoi(start.args["attempt"])
		l.node, _ = strconv.Atoi(start.args["node"])
		l.nnodes, _ = strconv.Atoi(start.args["nnodes"])
		l.restarts, _ = strconv.Atoi(start.args["restarts"])
		if note := start.args["note"]; note != "" {
			l.sayf("%s", note)
		}
		end, err := l.attempt(ctx, attempt, start)
		if err != nil {
			return err
		}
		if end.cmd == "finished" {
			l.mergeTimeline(start)
			return nil
		}
		if end.args["kind"] == "left" {
			l.sayf("left the elastic job: %s", end.args["why"])
			return nil
		}
		f := failureFrom(end)
		if end.args["restart"] != "1" {
			return f
		}
		maxRestarts, _ := strconv.Atoi(end.args["max_restarts"])
		switch end.args["kind"] {
		case "membership":
			l.sayf("%s: re-forming the job (not counted as a restart)", end.args["why"])
		case "node":
			l.sayf("%s; re-forming the job with the nodes left (restart %d of %d)", f.Why, f.Attempt+1, maxRestarts)
		default:
			l.sayf("%s; restarting the group (restart %d of %d)", strings.TrimSuffix(f.Error(), "; the other ranks were stopped"),
				f.Attempt+1, maxRestarts)
		}
		next = attempt + 1
	}
}

// sigtermExit is the exit status of a program that stopped on SIGTERM after saving
// (trainer.Interrupt's ExitCode, 128+15, as a shell reports it).
const sigtermExit = 143

// canLeave says whether this launcher may leave its job gracefully on SIGTERM: a node of an
// elastic job other than the master (the job ends with its master).
func (l *launcher) canLeave() bool { return l.cfg.MinNodes > 0 && l.node != 0 }

// mergeTimeline merges the timelines this node's ranks wrote, when GOACCEL_TIMELINE is set in
// their environment, into one file and says where it is (each node's launcher merges its own
// ranks: with several nodes, there is one file per node).
func (l *launcher) mergeTimeline(start message) {
	dir, _ := envvar.Lookup(l.cfg.Env, envvar.Timeline.Name)
	if dir == "" {
		return
	}
	base, _ := strconv.Atoi(start.args["base"])
	out, err := timeline.Merge(dir, l.node, base, l.cfg.NprocPerNode)
	if err != nil {
		l.sayf("the timeline of node_rank %d is incomplete: %v", l.node, err)
	}
	if abs, err := filepath.Abs(out); err == nil {
		out = abs
	}
	what := "the timeline of ranks"
	if l.nnodes > 1 {
		what = fmt.Sprintf("node_rank %d's timeline (each node writes its own) of ranks", l.node)
	}
	l.sayf("%s %d-%d: %s (open it in chrome://tracing or ui.perfetto.dev)", what, base, base+l.cfg.NprocPerNode-1, out)
}

// awaitStart waits for the master's answer to a join: "go" once every node joined, or "stop",
// after its "joined", which the first join (first) must get by l.ackBy. A node_rank > 0 says
// every Config.sayEvery that it waits (the master says for whom).
func (l *launcher) awaitStart(ctx context.Context, first bool) (message, error) {
	begin := time.Now()
	tick := time.NewTicker(l.cfg.sayEvery())
	defer tick.Stop()
	var ackTimeout <-chan time.Time
	if first {
		t := time.NewTimer(time.Until(l.ackBy))
		defer t.Stop()
		ackTimeout = t.C
	}
	for {
		select {
		case m, ok := <-l.ctl.in:
			if !ok {
				if ackTimeout != nil {
					return message{}, l.notMaster("it closed the connection without answering the join")
				}
				return message{}, l.lost(nil)
			}
			if m.cmd == "joined" {
				ackTimeout = nil
				continue
			}
			return m, nil
		case <-ackTimeout:
			return message{}, &Failure{Kind: "join", Rank: -1, Why: fmt.Sprintf("something at %s accepted the connection "+
				"but did not answer as goaccel launch's node_rank 0 launcher within %s: check --master_addr and --master_port",
				l.masterAddr, l.ackLimit.Round(time.Millisecond))}
		case <-tick.C:
			switch {
			case l.cfg.MinNodes > 0 && l.cfg.NodeRank != 0:
				l.sayf("joined the elastic job's master at %s; waiting for it to start this node (%s)",
					l.ctl.conn.RemoteAddr(), seconds(time.Since(begin)))
			case l.cfg.NodeRank > 0:
				l.sayf("joined node_rank 0's launcher at %s; waiting for the other nodes to join (%s of %s)",
					l.ctl.conn.RemoteAddr(), seconds(time.Since(begin)), seconds(l.cfg.JoinTimeout))
			}
		case <-ctx.Done():
			return message{}, &Failure{Kind: "interrupt", Rank: -1, Why: "interrupted while waiting for the other nodes to join"}
		}
	}
}

// notMaster is the failure of a launcher whose master's port is held by a program that is not
// goaccel's master; what says what that program did.
func (l *launcher) notMaster(what string) error {
	return &Failure{Kind: "join", Rank: -1, Why: fmt.Sprintf("the program at %s is not goaccel launch's node_rank 0 launcher: "+
		"%s: check --master_addr and --master_port", l.masterAddr, what)}
}

// answered says what a program answered a join with: `it answered "HTTP/1.1 400 Bad Request"`.
func answered(m message) string {
	said := strings.TrimSpace(m.args["line"])
	if said == "" {
		said = strings.TrimSpace(m.format(true))
	}
	if len(said) > 80 {
		said = said[:80] + "..."
	}
	return fmt.Sprintf("it answered %q", said)
}

func (l *launcher) lost(err error) error {
	why := "lost the connection to the node_rank 0 launcher (it stopped or its machine went away)"
	if l.cfg.MinNodes > 0 {
		why = "lost the connection to the elastic job's master, the launcher started with --node_rank 0 at " + l.masterAddr +
			" (it stopped or its machine went away): an elastic job ends with its master, as torchrun's c10d rendezvous does"
	}
	if err != nil {
		why += ": " + err.Error()
	}
	return &Failure{Kind: "master", Rank: -1, Why: why}
}

// worker is one running rank.
type worker struct {
	rank, local int
	cmd         *exec.Cmd
	logDir      string
	outs        []*prefixWriter
	files       []*os.File
	exited      atomic.Bool // set once Wait returned
}

type exit struct {
	w     *worker
	state *os.ProcessState
	err   error
}

// describe says how a process ended: "exit code 3", "signal: killed".
func describe(state *os.ProcessState, err error) (string, bool) {
	if state == nil {
		return fmt.Sprintf("wait failed: %v", err), false
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "signal: " + ws.Signal().String(), false
	}
	return fmt.Sprintf("exit code %d", state.ExitCode()), state.ExitCode() == 0
}

// attempt starts this node's ranks for one attempt and returns the master's last word on it:
// "finished", or "stop" (with the first failure and whether to restart).
func (l *launcher) attempt(ctx context.Context, attempt int, start message) (message, error) {
	world, _ := strconv.Atoi(start.args["world"])
	base, _ := strconv.Atoi(start.args["base"])
	l.storePort, _ = strconv.Atoi(start.args["store"])
	n := l.cfg.NprocPerNode
	if world > 1 {
		shown := shownHere(l.cfg.Tee, base, n)
		if l.tempLogs {
			shown += "; the folder is removed if the job succeeds: --log_dir keeps it"
		}
		l.sayf("node_rank %d runs ranks %d-%d of %d; every rank's output is in %s/attempt_%d/rank_N/ (%s)",
			l.node, base, base+n-1, world, l.cfg.LogDir, attempt, shown)
	}
	exits := make(chan exit, n)
	var workers []*worker
	var pmu sync.Mutex
	pids := func() []int {
		pmu.Lock()
		defer pmu.Unlock()
		var out []int
		for _, w := range workers {
			if !w.exited.Load() {
				out = append(out, w.cmd.Process.Pid)
			}
		}
		return out
	}
	shm := newShmTracker(pids)
	relay := newPMIRelay(l, attempt, world, start.args["kvs"])
	l.ctl.setRelay(relay)
	defer func() {
		l.ctl.setRelay(nil)
		relay.close()
	}()
	alive := 0
	var startErr *Failure
	for i := 0; i < n; i++ {
		w, err := l.startWorker(attempt, base+i, i, world, relay)
		if err != nil {
			startErr = &Failure{Kind: "start", Rank: base + i, Node: l.node, Host: l.host, What: err.Error()}
			break
		}
		pmu.Lock()
		workers = append(workers, w)
		pmu.Unlock()
		l.guard.add(w.cmd.Process.Pid)
		alive++
		go func() {
			err := w.cmd.Wait()
			w.exited.Store(true)
			l.guard.remove(w.cmd.Process.Pid)
			exits <- exit{w: w, state: w.cmd.ProcessState, err: err}
		}()
	}

	stopping := false
	var grace <-chan time.Time
	stop := func() {
		if stopping {
			return
		}
		stopping = true
		for _, w := range workers {
			w.signal(syscall.SIGTERM)
		}
		grace = time.After(l.cfg.StopGrace)
	}
	kill := func() {
		for _, w := range workers {
			w.signal(syscall.SIGKILL)
		}
	}
	// stopHung ends the ranks of a hung job at once: they wait in MPI, their reports are
	// written, and a SIGTERM handler (trainer's Interrupt) would only wait for a step that
	// cannot end.
	stopHung := func() {
		if !stopping {
			stopping = true
			kill()
		}
	}
	// The first hang report of a local rank: the verdict's wait for the others starts there,
	// not when a rank exits (the one that timed out first waits for the others' reports).
	var firstHang time.Time
	hangTick := time.NewTicker(hangPoll)
	defer hangTick.Stop()
	lookForHang := func() bool {
		if firstHang.IsZero() {
			for _, w := range workers {
				if hasHangReport(w.logDir) {
					firstHang = time.Now()
					break
				}
			}
		}
		return !firstHang.IsZero()
	}
	verdictSaid := false
	verdict := func() {
		if !verdictSaid && len(workers) > 0 {
			verdictSaid = true
			if !lookForHang() {
				firstHang = time.Now()
			}
			l.hangVerdict(workers, firstHang)
		}
	}
	fail := func(f *Failure) {
		m := msg("fail", "attempt", attempt, "kind", f.Kind, "node", l.node, "host", l.host)
		if f.Rank >= 0 {
			m.args["rank"], m.args["pid"] = strconv.Itoa(f.Rank), strconv.Itoa(f.PID)
			m.args["what"], m.args["log"] = f.What, f.Log
		}
		if f.Why != "" {
			m.args["why"] = f.Why
		}
		// A rank timed out in a collective: it, or another it alarmed, wrote a report.
		hang := f.Kind == "worker" && lookForHang()
		if hang {
			m.args["hang"] = "1" // the other nodes collect their ranks' reports too
		}
		_ = l.ctl.send(m)
		if hang {
			verdict()
			stopHung()
		}
		stop()
	}
	if startErr != nil {
		fail(startErr)
	}

	var end *message
	var lost bool
	leaving := false // a node of this elastic job leaves (SIGTERM): see canLeave
	failed := startErr != nil
	in := l.ctl.in
	done := ctx.Done()
	killNow := l.cfg.Kill
	for alive > 0 || (end == nil && !lost) {
		select {
		case e := <-exits:
			alive--
			for _, pw := range e.w.outs {
				pw.flush()
			}
			for _, f := range e.w.files {
				_ = f.Close()
			}
			what, ok := describe(e.state, e.err)
			if !ok && leaving && e.state != nil && e.state.ExitCode() == sigtermExit {
				ok = true // trainer.Interrupt's status after it saved at the step boundary: a clean stop
			}
			if !ok && !stopping && !failed {
				failed = true
				pid := 0
				if e.w.cmd.Process != nil {
					pid = e.w.cmd.Process.Pid
				}
				f := &Failure{Kind: "worker", Rank: e.w.rank, Node: l.node, Host: l.host, PID: pid, What: what,
					Log: e.w.logDir}
				if t := tail(filepath.Join(e.w.logDir, "stderr.log"), 10); t != "" {
					l.sayf("rank %d ended with %s; the end of its stderr:\n%s", e.w.rank, what, t)
				}
				fail(f)
			}
			if alive == 0 && !failed && !stopping {
				_ = l.ctl.send(msg("done", "attempt", attempt))
			}
		case m, ok := <-in:
			if !ok {
				in, lost = nil, true
				stop()
				continue
			}
			if a, _ := strconv.Atoi(m.args["attempt"]); a != attempt {
				continue
			}
			if m.cmd == "leaving" {
				leaving = true // a node leaves: ranks that stop at a step boundary stop cleanly
				continue
			}
			if m.cmd == "aborted" && !stopping && !failed {
				// A local rank called MPI_Abort: its failure, though it may still be running.
				r, _ := strconv.Atoi(m.args["rank"])
				for _, w := range workers {
					if w.rank == r {
						failed = true
						fail(&Failure{Kind: "worker", Rank: r, Node: l.node, Host: l.host, PID: w.cmd.Process.Pid,
							What: "MPI_Abort with error code " + m.args["exitcode"], Log: w.logDir})
					}
				}
				continue
			}
			if m.cmd == "stop" || m.cmd == "finished" {
				end = &m
				if m.cmd == "stop" {
					if m.args["hang"] == "1" && !stopping {
						verdict()
						stopHung()
					}
					stop()
				}
			}
		case <-done:
			done = nil
			if c := context.Cause(ctx); !stopping && !failed && l.canLeave() && c != nil && c.Error() == "SIGTERM" {
				// A preempted or scaled-down node of an elastic job leaves gracefully: its ranks
				// stop at the next step boundary (the program's trainer.Interrupt, which every
				// rank agrees on) and the master forms the job anew without it.
				leaving = true
				_ = l.ctl.send(msg("leave", "attempt", attempt, "node", l.node))
				l.sayf("SIGTERM: leaving the elastic job: this node's ranks get SIGTERM and stop at their next step " +
					"boundary, then the job goes on without this node (SIGTERM again stops them at once)")
				for _, w := range workers {
					w.signal(syscall.SIGTERM)
				}
				continue
			}
			if !stopping {
				what := "Ctrl-C or SIGTERM"
				if c := context.Cause(ctx); c != nil && c != context.Canceled {
					what = c.Error()
				}
				fail(&Failure{Kind: "interrupt", Rank: -1,
					Why: fmt.Sprintf("interrupted (%s on the launcher of node_rank %d on %s): every rank was stopped",
						what, l.node, l.host)})
			}
		case <-hangTick.C:
			if lookForHang() {
				hangTick.Stop() // seen: the verdict waits from then
			}
		case <-killNow:
			killNow = nil // closed: it would fire again at once
			kill()
		case <-grace:
			grace = nil
			kill()
		}
	}
	if removed := shm.cleanup(); len(removed) > 0 {
		l.sayf("removed %d shared-memory file(s) left by the ranks: %s", len(removed), strings.Join(removed, " "))
	}
	if lost && end == nil {
		return message{}, l.lost(nil)
	}
	return *end, nil
}

// shownHere says which ranks' output a launcher whose ranks are base to base+n-1 shows on
// its terminal, as Config.Tee chooses.
func shownHere(tee, base, n int) string {
	ranks := fmt.Sprintf("ranks %d-%d", base, base+n-1)
	if n == 1 {
		ranks = fmt.Sprintf("rank %d", base)
	}
	switch tee {
	case 0:
		if base == 0 {
			return "rank 0's output is shown here"
		}
		return "no rank's output is shown here: rank 0's is shown by node_rank 0's launcher; --tee 3 shows this node's"
	case TeeNone:
		return "no rank's output is shown here: --tee 0"
	case 1:
		return "the stdout of " + ranks + " is shown here"
	case 2:
		return "the stderr of " + ranks + " is shown here"
	}
	return "the stdout and stderr of " + ranks + " are shown here"
}

// signal signals a running worker's process group (the worker and what it started).
func (w *worker) signal(sig syscall.Signal) {
	if !w.exited.Load() {
		signalGroup(w.cmd.Process.Pid, sig)
	}
}

// signalGroup signals the process group led by pid, or pid alone when it leads none.
func signalGroup(pid int, sig syscall.Signal) {
	if err := syscall.Kill(-pid, sig); err != nil {
		_ = syscall.Kill(pid, sig)
	}
}

// startWorker starts one rank, its output going to its log files and, as Tee says, the terminal.
func (l *launcher) startWorker(attempt, rank, local, world int, relay *pmiRelay) (*worker, error) {
	w := &worker{rank: rank, local: local,
		logDir: filepath.Join(l.cfg.LogDir, fmt.Sprintf("attempt_%d", attempt), fmt.Sprintf("rank_%d", rank))}
	if err := os.MkdirAll(w.logDir, 0o755); err != nil {
		return nil, err
	}
	env := rankEnv{rank: rank, local: local, nlocal: l.cfg.NprocPerNode, world: world, node: l.node,
		nnodes: l.nnodes, restart: l.restarts, masterAddr: l.cfg.MasterAddr, masterPort: l.cfg.MasterPort,
		storePort: l.storePort,
		share:     l.shares[local], mpiLib: l.cfg.MPILib, logDir: w.logDir}
	cmd := exec.Command(l.cfg.Program, l.cfg.Args...)
	if l.cfg.Arg0 != "" {
		cmd.Args[0] = l.cfg.Arg0
	}
	cmd.Env = env.build(l.cfg.Env)
	// Its own process group, so that stop signals reach what it started too; and it dies with
	// the launcher (Pdeathsig, tied to the fork thread: see onForkThread).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 2 * time.Second
	streams := []struct {
		name string
		term *terminal
		bit  int
		dst  *io.Writer
	}{{"stdout.log", l.out, 1, &cmd.Stdout}, {"stderr.log", l.errOut, 2, &cmd.Stderr}}
	for _, s := range streams {
		f, err := os.Create(filepath.Join(w.logDir, s.name))
		if err != nil {
			return nil, err
		}
		w.files = append(w.files, f)
		show := l.cfg.Tee > 0 && l.cfg.Tee&s.bit != 0
		if l.cfg.Tee == 0 {
			show = rank == 0
		}
		if !show {
			*s.dst = f
			continue
		}
		prefix := ""
		if world > 1 && !(l.cfg.SelfTest && rank == 0) {
			prefix = fmt.Sprintf("[rank %d] ", rank)
		}
		pw := &prefixWriter{t: s.term, prefix: prefix}
		w.outs = append(w.outs, pw)
		*s.dst = io.MultiWriter(f, pw)
	}
	w.cmd = cmd
	var cpus []int
	if l.cpus != nil {
		cpus = l.cpus[local]
		cmd.Env = setEnv(cmd.Env, envvar.CPUs.Name, cpuList(cpus))
	}
	pmi, err := relay.socket(rank)
	if err != nil {
		for _, f := range w.files {
			_ = f.Close()
		}
		return nil, err
	}
	cmd.ExtraFiles = []*os.File{pmi} // PMI_FD (pmiFD)
	onForkThread(func() { err = startPinned(cmd, cpus) })
	_ = pmi.Close()
	if err != nil {
		for _, f := range w.files {
			_ = f.Close()
		}
		return nil, fmt.Errorf("cannot start %s: %w", l.cfg.Program, err)
	}
	return w, nil
}
