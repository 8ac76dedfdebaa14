package launch

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// pmiFD is the descriptor of a rank's PMI socket, as its PMI_FD says: the first of
// exec.Cmd.ExtraFiles.
const pmiFD = 3

// The PMI-1 limits announced to the ranks (the values MPICH's own Hydra announces).
const (
	pmiKVSNameMax = 256
	pmiKeyMax     = 64
	pmiValueMax   = 1024
)

// pmiRelay serves the PMI-1 connections of one attempt's local ranks: each rank's MPI library
// talks to its launcher over the socket it inherited (PMI_FD), as under MPICH's Hydra. What
// the launcher knows (the rank, the world size, the key-value space's name, the limits) it
// answers itself; puts, gets, barriers and MPI_Abort go to the master over the launcher's
// authenticated connection, whose answers come back through fromMaster.
type pmiRelay struct {
	l              *launcher
	attempt, world int
	kvsName        string

	mu    sync.Mutex
	ranks map[int]*peerConn // rank -> its PMI socket
}

func newPMIRelay(l *launcher, attempt, world int, kvsName string) *pmiRelay {
	return &pmiRelay{l: l, attempt: attempt, world: world, kvsName: kvsName, ranks: map[int]*peerConn{}}
}

// socket makes a rank's PMI socket pair: the launcher's end, served from now on, and the
// rank's, for exec.Cmd.ExtraFiles (the caller closes it once the rank started).
func (r *pmiRelay) socket(rank int) (*os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot make rank %d's PMI socket: %w", rank, err)
	}
	ours := os.NewFile(uintptr(fds[0]), fmt.Sprintf("pmi-rank-%d", rank))
	conn, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		syscall.Close(fds[1])
		return nil, fmt.Errorf("cannot make rank %d's PMI socket: %w", rank, err)
	}
	p := &peerConn{conn: conn, node: -1, rank: rank}
	r.mu.Lock()
	r.ranks[rank] = p
	r.mu.Unlock()
	go r.serve(p)
	return os.NewFile(uintptr(fds[1]), "pmi"), nil
}

// close closes every rank's socket (the attempt is over).
func (r *pmiRelay) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.ranks {
		_ = p.conn.Close()
	}
}

// serve reads one rank's PMI commands until its socket closes.
func (r *pmiRelay) serve(p *peerConn) {
	defer p.conn.Close()
	in := bufio.NewReader(p.conn)
	for {
		line, err := readLine(in)
		if err != nil {
			return
		}
		if pmiDebug {
			fmt.Fprintf(os.Stderr, "goaccel launch: debug: rank %d <- %s\n", p.rank, line)
		}
		var m message
		if strings.HasPrefix(line, "mcmd=") {
			if m, err = readMultiline(in, line); err != nil {
				return
			}
		} else {
			m = parseMessage(line, false)
			if _, text, ok := strings.Cut(line, " message="); ok && m.cmd == "abort" {
				m.args["message"] = text // the one value that may hold spaces
			}
		}
		r.onPMI(p, m)
	}
}

// onPMI answers one command of MPICH's simple PMI-1 wire protocol, as MPICH 5.0.2's client
// sends it (checked by logging a real session):
//
//	init, get_maxes, get_appnum, get_my_kvsname, get_universe_size, put, get, barrier_in,
//	finalize, abort (and initack pmiid=N, which a client started with PMI_PORT sends)
//
// and refuses the rest with rc=-1, once per command: spawn (MPI_Comm_spawn, whose command spans
// several lines, "mcmd=spawn", one key=value a line, "endcmd") is not supported.
func (r *pmiRelay) onPMI(p *peerConn, m message) {
	reply := func(cmd string, kv ...any) { p.send(msg(cmd, kv...), false) }
	relay := func(cmd string, kv ...any) {
		_ = r.l.ctl.send(msg(cmd, append([]any{"attempt", r.attempt, "rank", p.rank}, kv...)...))
	}
	switch m.cmd {
	case "initack":
		reply("initack", "rc", 0)
		reply("set", "size", r.world)
		reply("set", "rank", p.rank)
		reply("set", "debug", 0)
	case "init":
		reply("response_to_init", "pmi_version", 1, "pmi_subversion", 1, "rc", 0)
	case "get_maxes":
		reply("maxes", "rc", 0, "kvsname_max", pmiKVSNameMax, "keylen_max", pmiKeyMax, "vallen_max", pmiValueMax)
	case "get_appnum":
		reply("appnum", "rc", 0, "appnum", 0)
	case "get_my_kvsname":
		reply("my_kvsname", "rc", 0, "kvsname", r.kvsName)
	case "get_universe_size":
		reply("universe_size", "rc", 0, "size", r.world)
	case "put":
		// The connection to the master keeps the order: a later get or barrier sees this put.
		relay("pmi_put", "key", m.args["key"], "value", m.args["value"])
		reply("put_result", "rc", 0)
	case "get":
		relay("pmi_get", "key", m.args["key"]) // answered in fromMaster
	case "barrier_in":
		relay("pmi_barrier")
	case "finalize":
		reply("finalize_ack", "rc", 0)
	case "spawn":
		// MPI_Comm_spawn: one "mcmd=spawn ... endcmd" block per command of the spawn, a single
		// answer after the last one.
		if sofar, total := m.args["spawnssofar"], m.args["totspawns"]; sofar == total || sofar == "" || total == "" {
			reply("spawn_result", "rc", -1, "msg", "MPI_Comm_spawn_is_not_supported_by_goaccel_launch")
			r.l.sayf("rank %d called MPI_Comm_spawn (of %s): goaccel launch does not support it, so it fails in that "+
				"rank; start every process with --nproc_per_node instead", p.rank, m.args["execname"])
		}
	case "abort":
		relay("pmi_abort", "exitcode", m.args["exitcode"], "message", m.args["message"])
	default:
		reply(m.cmd+"_result", "rc", -1, "msg", "unsupported_by_goaccel_launch")
	}
}

// fromMaster delivers the master's answer to a relayed command: a get's value to the rank
// that asked, the end of the barrier to every local rank.
func (r *pmiRelay) fromMaster(m message) {
	if a, _ := strconv.Atoi(m.args["attempt"]); a != r.attempt {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch m.cmd {
	case "pmi_got":
		rank, _ := strconv.Atoi(m.args["rank"])
		if p := r.ranks[rank]; p != nil {
			if m.args["found"] == "1" {
				p.send(msg("get_result", "rc", 0, "value", m.args["value"]), false)
			} else {
				p.send(msg("get_result", "rc", -1, "msg", "key_"+m.args["key"]+"_not_found"), false)
			}
		}
	case "pmi_barrier_out":
		for _, p := range r.ranks {
			p.send(msg("barrier_out", "rc", 0), false)
		}
	}
}
