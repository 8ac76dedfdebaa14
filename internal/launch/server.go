package launch

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
)

// server runs in the node_rank 0 launcher. On one TCP port, to launchers that proved the job
// secret (secret.go) only, it
//   - admits the launcher of every node (node 0's own included) for each attempt, gives each
//     its first global rank and the world size, and tells all of them when the attempt
//     finished or must stop (and whether the group restarts);
//   - holds MPICH's simple PMI-1 key-value store and barrier for the ranks of the attempt,
//     which is how MPI processes find each other: each rank talks PMI to its own launcher
//     (PMI_FD), which answers what it knows and relays puts, gets, barriers and aborts here
//     (pmi.go).
//
// It decides, for the whole job, which failure came first: the first "fail" report of an
// attempt wins, later ones (survivors killed by the stop) are ignored.
type server struct {
	ln          net.Listener
	secret      string // the job secret every connection proves first
	storePort   int    // the ranks' MASTER_PORT, sent to every launcher with "go"
	nnodes      int    // the job's nodes; in an elastic job the most (MAX of --nnodes MIN:MAX)
	maxRestarts int
	joinTimeout time.Duration
	sayEvery    time.Duration // how often the wait for the nodes is reported (Config.sayEvery)
	// minNodes > 0 makes the job elastic (elastic.go): it runs on minNodes to nnodes nodes,
	// which join with an id and get their node rank from the master at every start;
	// lastCall is how long a formation of at least minNodes waits for more.
	minNodes int
	lastCall time.Duration
	// rdzvID is the job's --rdzv_id: a launcher that gives another is refused.
	rdzvID string
	// closeTimeout bounds how long close waits for the launchers to hang up (Config.CloseTimeout:
	// torchrun's close_timeout); 0 or less: it does not wait.
	closeTimeout time.Duration
	// conns holds the admitted connections still open; hungUp hears of each one that closes.
	conns  map[*peerConn]bool
	hungUp chan struct{}
	// closeWaits, when not nil (tests), is closed when close begins to wait for the launchers.
	closeWaits chan struct{}

	mu        sync.Mutex
	attempt   int               // the attempt being formed or run
	restarts  int               // restarts used (--max_restarts): failed ranks, lost nodes
	joined    map[int]*peerConn // node rank -> its launcher, for this attempt
	running   bool              // every node joined and got its "go"
	stopped   bool              // a stop was sent for this attempt
	final     bool              // no more attempts: finished, or stopped without restart
	finalWhy  string            // why an env:// job ended before it ran (memberRefused), told to a process that joins after
	done      map[int]bool      // nodes whose ranks all exited 0
	world     int
	bases     map[int]int // node rank -> its first global rank, for this attempt
	kvsName   string
	id        int64 // this server's number in the process (serverCount)
	kvs       map[string]string
	barrier   int            // ranks in the PMI barrier
	aborts    map[int]string // rank -> the message it gave MPI_Abort
	joinTimer *time.Timer
	joinStart time.Time // when the wait for the current attempt's launchers began
	closed    chan struct{}
	elastic   elasticState
	// member, in a job whose processes meet by themselves (rendezvous.go), is rank 0's
	// place: every "node" is one process, and the messages name ranks and variables.
	member *Place
	// sayf prints a line of the master launcher (nil: none).
	sayf func(format string, args ...any)
}

// peerConn is one connection: a node's launcher (on the master), or one local MPI rank's PMI
// socket (on every launcher).
type peerConn struct {
	conn net.Conn
	wmu  sync.Mutex
	node int // launchers: node rank
	rank int // launchers: their number of ranks; ranks: the rank
	// Launchers of an elastic job: name is how messages call it ("HOST (launcher pid N)"),
	// seq its order of arrival (0: it has not joined yet), master whether it is the master's
	// own, gone whether its connection closed.
	name   string
	seq    int
	group  string // a process of an env:// job: its machine (machineKey)
	master bool
	gone   bool
}

// pmiDebug ($GOACCEL_LAUNCH_DEBUG=1 or true) logs every line the master receives to its stderr.
var pmiDebug, _ = envvar.LaunchDebug.Bool()

// serverCount numbers the servers of this process, for their kvsnames.
var serverCount atomic.Int64

func (p *peerConn) send(m message, escaped bool) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_ = p.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, _ = p.conn.Write([]byte(m.format(escaped)))
}

// newServer listens on addr ("host:port"; port 0 picks a free one). storePort is the ranks'
// MASTER_PORT, which the server sends to every launcher. cfg gives the nodes (NNodes, and
// MinNodes for an elastic job), MaxRestarts, JoinTimeout, LastCallTimeout and how often to report a wait.
func newServer(addr, secret string, storePort int, cfg *Config, sayf func(string, ...any)) (*server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s for the other ranks (--master_addr/--master_port): %w", addr, err)
	}
	s := &server{ln: ln, secret: secret, storePort: storePort, nnodes: cfg.NNodes, maxRestarts: cfg.MaxRestarts,
		joinTimeout: cfg.JoinTimeout, sayEvery: cfg.sayEvery(), minNodes: cfg.MinNodes, lastCall: cfg.LastCallTimeout,
		joined: map[int]*peerConn{}, closed: make(chan struct{}), sayf: sayf, id: serverCount.Add(1),
		closeTimeout: cfg.CloseTimeout, conns: map[*peerConn]bool{}, hungUp: make(chan struct{}, 1)}
	s.armJoinTimer()
	go s.serve()
	go s.sayWhileJoining()
	return s, nil
}

// sayWhileJoining says every s.sayEvery, until the server closes, which node_ranks the
// current attempt still waits for.
func (s *server) sayWhileJoining() {
	t := time.NewTicker(s.sayEvery)
	defer t.Stop()
	for {
		select {
		case <-s.closed:
			return
		case <-t.C:
		}
		s.mu.Lock()
		if s.minNodes > 0 {
			s.sayWhileForming()
		} else if !s.running && !s.final && len(s.joined) < s.nnodes && s.sayf != nil {
			var missing []string
			for n := 0; n < s.nnodes; n++ {
				if s.joined[n] == nil {
					missing = append(missing, strconv.Itoa(n))
				}
			}
			s.sayf("waiting for node_rank %s of %d to join on port %d (%s of %s)", strings.Join(missing, ", "), s.nnodes,
				s.port(), seconds(time.Since(s.joinStart)), seconds(s.joinTimeout))
		}
		s.mu.Unlock()
	}
}

// seconds writes d as whole seconds, "12 s" (at least 1 s for a positive d under a second).
func seconds(d time.Duration) string {
	n := int(d.Round(time.Second) / time.Second)
	if n == 0 && d > 0 {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%d s", n)
}

// port is the port the server listens on.
func (s *server) port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// close closes the rendezvous of a job that is over (torchrun's shutdown of its rendezvous
// handler): a launcher that joins now is told so (s.final). It waits, at
// most s.closeTimeout, for every launcher still connected to hang up (the launchers of the job
// hang up once they heard its end, and a spare or a latecomer once it heard that it is over),
// so that each hears the job's verdict from the master rather than finding its connection
// lost or its port closed; then it stops listening, and says which launchers it closed without.
func (s *server) close() {
	s.mu.Lock()
	if s.joinTimer != nil {
		s.joinTimer.Stop()
	}
	s.mu.Unlock()
	if s.closeTimeout > 0 {
		limit := time.NewTimer(s.closeTimeout)
		defer limit.Stop()
		if s.closeWaits != nil {
			close(s.closeWaits)
		}
	wait:
		for {
			s.mu.Lock()
			var open []string
			for p := range s.conns {
				open = append(open, p.describe())
			}
			s.mu.Unlock()
			if len(open) == 0 {
				break
			}
			select {
			case <-s.hungUp:
			case <-limit.C:
				sort.Strings(open)
				s.say("closing the rendezvous without waiting any longer for %s to hang up (--rdzv_conf close_timeout=%s)",
					strings.Join(open, ", "), seconds(s.closeTimeout))
				break wait
			}
		}
	}
	_ = s.ln.Close()
	close(s.closed)
}

// describe names a connected launcher for the master's messages: its id, else its node rank,
// else its address.
func (p *peerConn) describe() string {
	switch {
	case p.name != "":
		return p.name
	case p.node >= 0:
		return fmt.Sprintf("the launcher of node_rank %d", p.node)
	}
	return "the connection from " + p.conn.RemoteAddr().String()
}

func (s *server) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.handle(c)
	}
}

// handle reads one connection: a launcher's, once it proved the job secret; anything else is
// refused, logged and closed.
func (s *server) handle(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	if err := s.admit(c, r); err != nil {
		if s.sayf != nil {
			s.sayf("refused a connection from %s: %v; the job goes on", c.RemoteAddr(), err)
		}
		return
	}
	p := &peerConn{conn: c, node: -1, rank: -1}
	s.mu.Lock()
	s.conns[p] = true
	s.mu.Unlock()
	for {
		line, err := readLine(r)
		if err != nil {
			s.launcherGone(p)
			s.mu.Lock()
			delete(s.conns, p)
			s.mu.Unlock()
			select {
			case s.hungUp <- struct{}{}:
			default:
			}
			return
		}
		if pmiDebug {
			fmt.Fprintf(os.Stderr, "goaccel launch: debug: %s <- %s\n", c.RemoteAddr(), line)
		}
		s.onLauncher(p, parseMessage(line, true))
	}
}

// armJoinTimer (re)starts the wait for every node's launcher to join the current attempt.
// s.mu is held or the server is not shared yet.
func (s *server) armJoinTimer() {
	if s.joinTimer != nil {
		s.joinTimer.Stop()
	}
	attempt := s.attempt
	s.joinStart = time.Now()
	s.joinTimer = time.AfterFunc(s.joinTimeout, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.attempt != attempt || s.running || s.final {
			return
		}
		if s.minNodes > 0 {
			s.joinTimeUp()
			return
		}
		var missing []string
		for n := 0; n < s.nnodes; n++ {
			if s.joined[n] == nil {
				missing = append(missing, strconv.Itoa(n))
			}
		}
		s.final = true
		why := fmt.Sprintf("the launcher of node_rank %s did not join within %s: is `goaccel launch --node_rank N` "+
			"running there, with --nnodes %d, and can it reach port %d of this machine?",
			strings.Join(missing, ", "), s.joinTimeout, s.nnodes, s.port())
		if p := s.member; p != nil {
			why = fmt.Sprintf("rank %s of %d ($%s=%d) did not reach rank 0's rendezvous within %s: is its process running, "+
				"with the same $%s, $%s and $%s, and can it reach port %d of rank 0's machine? (every rank waits the same; "+
				"GOACCEL_TIMEOUT sets how long)", strings.Join(missing, ", "), s.nnodes, p.SizeVar, s.nnodes, s.joinTimeout,
				p.SizeVar, p.AddrVar, envvar.MasterPort.Name, s.port())
		}
		s.broadcast(msg("stop", "attempt", attempt, "restart", 0, "kind", "join", "why", why))
	})
}

// broadcast sends m to every launcher of the attempt, and, when the job ends (final), to
// the launchers of an elastic job that wait to join it. s.mu is held.
func (s *server) broadcast(m message) {
	for _, p := range s.joined {
		p.send(m, true)
	}
	if s.final {
		for _, p := range s.elastic.waiting {
			p.send(m, true)
		}
	}
}

func (s *server) onLauncher(p *peerConn, m message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	attempt, _ := strconv.Atoi(m.args["attempt"])
	switch m.cmd {
	case "join":
		if id := m.args["rdzv_id"]; id != s.rdzvID && s.member == nil {
			p.send(msg("stop", "attempt", attempt, "restart", 0, "kind", "join", "why", fmt.Sprintf(
				"this launcher has --rdzv_id %q but the master at port %d has --rdzv_id %q: it reached another job's "+
					"rendezvous (give every node of a job the same --rdzv_id, and each job its own endpoint)", id, s.port(), s.rdzvID)), true)
			s.say("refused a launcher of --rdzv_id %q (%s): this job's is %q", id, m.args["id"], s.rdzvID)
			return
		}
		if spec := m.args["nnodes"]; spec != "" && spec != s.nnodesSpec() {
			if s.member != nil {
				s.memberRefused(p, attempt, fmt.Sprintf("rank %s says $%s=%s but rank 0 says $%s=%d: every process of the job "+
					"must have the same", m.args["node"], s.member.SizeVar, spec, s.member.SizeVar, s.nnodes))
				return
			}
			p.send(msg("stop", "attempt", attempt, "restart", 0, "kind", "join", "why", fmt.Sprintf(
				"this launcher has --nnodes %s but the master's (node_rank 0) has --nnodes %s: give every node the same",
				spec, s.nnodesSpec())), true)
			return
		}
		if s.minNodes > 0 {
			s.elasticJoin(p, m)
			return
		}
		node, err1 := strconv.Atoi(m.args["node"])
		nproc, err2 := strconv.Atoi(m.args["nproc"])
		refuse := func(why string) {
			p.send(msg("stop", "attempt", attempt, "restart", 0, "kind", "join", "why", why), true)
		}
		switch {
		case err1 != nil || err2 != nil || nproc < 1:
			refuse("malformed join: " + m.format(true))
		case s.final && s.finalWhy != "":
			refuse(s.finalWhy)
		case s.final:
			refuse("the job is already over")
		case node < 0 || node >= s.nnodes:
			refuse(fmt.Sprintf("node_rank %d is out of range: the job has --nnodes %d (node ranks 0 to %d)",
				node, s.nnodes, s.nnodes-1))
		case attempt != s.attempt:
			refuse(fmt.Sprintf("node_rank %d joins attempt %d but the job is at attempt %d", node, attempt, s.attempt))
		case s.joined[node] != nil && s.joined[node] != p && s.member != nil:
			s.memberRefused(p, attempt, fmt.Sprintf("two processes say they are rank %d ($%s): %s and %s", node,
				s.member.RankVar, s.joined[node].name, m.args["id"]))
		case s.joined[node] != nil && s.joined[node] != p:
			refuse(fmt.Sprintf("two launchers claim node_rank %d", node))
		default:
			p.node = node
			p.rank = nproc // a launcher's rank field holds its number of ranks
			p.name, p.group = m.args["id"], m.args["group"]
			s.joined[node] = p
			p.send(msg("joined", "attempt", attempt, "node", node), true) // it reached goaccel's master
			if len(s.joined) == s.nnodes {
				s.startAttempt()
			}
		}
	case "pmi_put", "pmi_get", "pmi_barrier", "pmi_abort":
		if attempt == s.attempt && s.running && p.node >= 0 {
			s.onRelayed(p, m)
		}
	case "fail":
		if attempt != s.attempt || !s.running || s.stopped {
			return // a survivor of a stop already decided, or a stale report
		}
		s.stopped = true
		kind := m.args["kind"]
		restart := kind == "worker" && s.restarts < s.maxRestarts
		stop := msg("stop", "attempt", attempt, "kind", kind, "restart", btoi(restart), "restarts", s.restarts,
			"max_restarts", s.maxRestarts)
		for _, k := range []string{"rank", "node", "host", "pid", "what", "log", "why", "hang"} {
			if v, ok := m.args[k]; ok {
				stop.args[k] = v
			}
		}
		if r, err := strconv.Atoi(m.args["rank"]); err == nil && s.aborts[r] != "" {
			stop.args["abort"] = s.aborts[r]
		}
		if restart {
			s.restarts++
		} else {
			s.final = true // its waiting launchers hear it too
		}
		s.broadcast(stop)
		s.endAttempt(restart)
	case "leave":
		if attempt == s.attempt && s.running && s.minNodes > 0 && s.joined[p.node] == p {
			s.elastic.leaving = append(s.elastic.leaving, p)
			s.broadcast(msg("leaving", "attempt", attempt, "node", p.node))
			s.say("%s (node_rank %d) leaves the job (SIGTERM): the job saves at its next step boundary and goes on "+
				"without it", p.name, p.node)
		}
	case "done":
		if attempt != s.attempt || !s.running || s.stopped {
			return
		}
		s.done[p.node] = true
		if len(s.done) == len(s.joined) && len(s.elastic.leaving) > 0 {
			s.reformAfterLeave()
			return
		}
		if len(s.done) == len(s.joined) {
			s.final = true
			s.broadcast(msg("finished", "attempt", attempt))
			s.endAttempt(false)
		}
	}
}

// startAttempt gives every node its first rank and starts the attempt: the nodes of a static
// job in node_rank order. s.mu is held.
func (s *server) startAttempt() {
	nodes := make([]int, 0, len(s.joined))
	for n := range s.joined {
		nodes = append(nodes, n)
	}
	sort.Ints(nodes)
	peers := make([]*peerConn, len(nodes))
	for i, n := range nodes {
		peers[i] = s.joined[n]
	}
	s.startNodes(peers, "")
}

// startNodes starts the attempt on peers, whose index is their node rank (every launcher's
// node field is set to it), and sends each its "go", with note, when not "", for every
// launcher to say. s.mu is held.
func (s *server) startNodes(peers []*peerConn, note string) {
	nprocs := make([]int, len(peers))
	s.joined = map[int]*peerConn{}
	for i, p := range peers {
		p.node = i
		s.joined[i] = p
		nprocs[i] = p.rank
	}
	s.world = 0
	for _, n := range nprocs {
		s.world += n
	}
	// MPICH names its shared-memory segments after the job's kvsname: two jobs that a process
	// launches at once (the library's Run called twice) need two names, not just two attempts.
	s.kvsName = fmt.Sprintf("goaccel_%d_%d_%d", os.Getpid(), s.id, s.attempt)
	mapping := processMapping(nprocs)
	if s.member != nil {
		mapping = memberMapping(peers)
	}
	s.kvs = map[string]string{"PMI_process_mapping": mapping}
	s.barrier = 0
	s.aborts = map[int]string{}
	s.done = map[int]bool{}
	s.running, s.stopped = true, false
	if s.joinTimer != nil {
		s.joinTimer.Stop()
	}
	base := 0
	s.bases = map[int]int{}
	for i, p := range peers {
		s.bases[i] = base
		p.send(msg("go", "attempt", s.attempt, "world", s.world, "base", base, "node", i, "nnodes", len(peers),
			"restarts", s.restarts, "kvs", s.kvsName, "store", s.storePort, "note", note), true)
		base += nprocs[i]
	}
}

// endAttempt closes the current attempt; with restart the launchers join the next one. s.mu is held.
func (s *server) endAttempt(restart bool) {
	s.running = false
	if !restart {
		s.final = true
		return
	}
	s.attempt++
	s.joined = map[int]*peerConn{}
	s.elastic.newAttempt()
	s.armJoinTimer()
}

// stopAll ends the job from the outside (the master launcher's --timeout): every node stops its
// ranks, without restart.
func (s *server) stopAll(kind, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.final || s.stopped {
		return
	}
	s.stopped, s.final = true, true
	s.broadcast(msg("stop", "attempt", s.attempt, "restart", 0, "kind", kind, "why", why))
	s.endAttempt(false)
}

// launcherGone handles a node launcher's closed connection.
func (s *server) launcherGone(p *peerConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.minNodes > 0 {
		s.elasticGone(p)
		return
	}
	if p.node < 0 || s.joined[p.node] != p {
		return
	}
	if !s.running {
		if !s.final {
			delete(s.joined, p.node) // it left before the attempt started; it may come back
		}
		return
	}
	delete(s.joined, p.node)
	if s.stopped || s.done[p.node] && len(s.done) == s.nnodes {
		return
	}
	s.stopped, s.final = true, true
	why := fmt.Sprintf("the launcher of node_rank %d went away (its machine or its connection to port %d failed)",
		p.node, s.port())
	if s.member != nil {
		why = fmt.Sprintf("rank %d, %s, went away before the job ended (its process exited without closing the "+
			"Accelerator, was killed, or its machine failed)", p.node, p.name)
	}
	s.broadcast(msg("stop", "attempt", s.attempt, "restart", 0, "kind", "node", "node", p.node, "why", why))
	s.endAttempt(false)
}

// onRelayed handles what a launcher relays of its ranks' PMI-1 commands (pmi.go): a put into
// the attempt's key-value space, a get from it, a rank's arrival at the barrier (which ends
// when every rank of the job arrived) and MPI_Abort. s.mu is held.
func (s *server) onRelayed(p *peerConn, m message) {
	rank, _ := strconv.Atoi(m.args["rank"])
	switch m.cmd {
	case "pmi_put":
		s.kvs[m.args["key"]] = m.args["value"]
	case "pmi_get":
		v, ok := s.kvs[m.args["key"]]
		p.send(msg("pmi_got", "attempt", s.attempt, "rank", rank, "key", m.args["key"], "found", btoi(ok), "value", v), true)
	case "pmi_barrier":
		s.barrier++
		if s.barrier >= s.world {
			s.barrier = 0
			s.broadcast(msg("pmi_barrier_out", "attempt", s.attempt))
		}
	case "pmi_abort":
		// MPI_Abort: MPICH says so and carries on, leaving the kill to the process manager.
		// The rank's own launcher reports it as that rank's failure, with its pid and log.
		if s.stopped {
			return
		}
		s.aborts[rank] = strings.TrimSpace(m.args["message"])
		p.send(msg("aborted", "attempt", s.attempt, "rank", rank, "exitcode", m.args["exitcode"]), true)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// memberRefused refuses a process of an env:// job whose variables disagree with rank 0's,
// and ends the job: every process that came, or comes after, stops with the same message,
// before any trains.
// s.mu is held.
func (s *server) memberRefused(p *peerConn, attempt int, why string) {
	stop := msg("stop", "attempt", attempt, "restart", 0, "kind", "join", "why", why)
	p.send(stop, true)
	if !s.final && !s.running {
		s.final, s.finalWhy = true, why
		s.broadcast(stop)
	}
}

// memberMapping is PMI_process_mapping for the processes of an env:// job, one per peer in
// rank order: the ranks of one machine share memory when they are consecutive (as torchrun
// and srun number them); else every rank counts as a machine of its own (MPICH then talks
// over the network only).
func memberMapping(peers []*peerConn) string {
	var nprocs []int
	seen := map[string]bool{}
	for i, p := range peers {
		if i > 0 && p.group == peers[i-1].group && p.group != "" {
			nprocs[len(nprocs)-1]++
			continue
		}
		if seen[p.group] || p.group == "" {
			return processMapping(slicesOf(len(peers), 1))
		}
		seen[p.group] = true
		nprocs = append(nprocs, 1)
	}
	return processMapping(nprocs)
}

// slicesOf is n copies of v.
func slicesOf(n, v int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}
