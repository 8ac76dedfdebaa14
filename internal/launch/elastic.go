package launch

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// An elastic job (--nnodes MIN:MAX, Config.MinNodes) runs on MIN to MAX nodes, as torchrun's
// does. The master is the launcher started with --node_rank 0; every other launcher joins it
// with an id (its host and pid) and gets its node rank from the master at every start. The
// master forms each attempt of the job (a rendezvous) from the launchers that joined it:
//   - at once when MAX have joined; else, when MIN have (the master's own among them) and
//     every node of the previous attempt still connected has joined again, after the last
//     call (Config.LastCallTimeout, torchrun's last_call_timeout), for more to come;
//   - node ranks are dense: the master's is 0, the others follow in the order they first
//     joined; a launcher beyond MAX waits as a spare for the next formation;
//   - a node whose launcher went away, or whose rank failed, stops the attempt: the others
//     stop their ranks and form the next attempt without it, which counts against
//     --max_restarts (TORCHELASTIC_RESTART_COUNT counts these restarts);
//   - a node whose launcher got SIGTERM (not the master's) leaves gracefully: every launcher
//     hears "leaving", its ranks stop at the next step boundary (exit 0, or 143 after
//     trainer.Interrupt saved), and the next attempt forms at once without it, counting no
//     restart (reformAfterLeave);
//   - a launcher that joins while the attempt runs on fewer than MAX nodes stops it at once,
//     and the next attempt includes it: not counted as a restart, as torchrun's agent does;
//   - a formation that has fewer than MIN nodes when --join_timeout has passed ends the job,
//     naming the nodes that left (their host and launcher pid, and last node rank);
//   - the master's own failure ends the job (the other launchers lose their connection to
//     it), as with torchrun's c10d rendezvous, whose store lives in one agent.
//
// The master logs every formation (elastic.note): which nodes left or came, the old and new
// number of nodes and world size; every launcher says it too.

// elasticState is the part of the server's state that only an elastic job has. The server's
// mu guards it.
type elasticState struct {
	// waiting holds the launchers that joined the attempt being formed (and, while an attempt
	// runs, those that joined after it started: newcomers and spares), in order of arrival.
	waiting []*peerConn
	// prev is the previous attempt's nodes, in node-rank order (nil before the first start);
	// prevWorld its world size.
	prev      []*peerConn
	prevWorld int
	// seq numbers the launchers in the order they first joined.
	seq int
	// lastCall is the last call's timer of the attempt being formed; lastCallOver says it fired.
	lastCall     *time.Timer
	lastCallOver bool
	// leaving holds the nodes of the running attempt that asked to leave (SIGTERM on their
	// launcher); the attempt's clean end then re-forms the job without them.
	leaving []*peerConn
}

// newAttempt resets the formation state for the next attempt (the waiting launchers stay).
func (e *elasticState) newAttempt() {
	if e.lastCall != nil {
		e.lastCall.Stop()
	}
	e.lastCall, e.lastCallOver = nil, false
}

// reformAfterLeave ends an attempt whose ranks all stopped cleanly while nodes were leaving:
// those launchers are told they left (they exit 0), and the others form the next attempt
// without them at once (no last call: every node still in the job is known), which counts
// no restart. Fewer than MIN left ends the job. s.mu is held.
func (s *server) reformAfterLeave() {
	e := &s.elastic
	var names []string
	for _, p := range e.leaving {
		names = append(names, fmt.Sprintf("%s (node_rank %d)", p.name, p.node))
		p.gone = true // it does not come back: the formation waits for the others only
	}
	why := strings.Join(names, ", ") + " left the job (SIGTERM), which saved at a step boundary"
	s.stopped = true
	left := len(s.joined) - len(e.leaving)
	for _, p := range e.leaving {
		p.send(msg("stop", "attempt", s.attempt, "kind", "left", "restart", 0, "why", why), true)
		delete(s.joined, p.node)
	}
	e.leaving = nil
	if left < s.minNodes {
		s.final = true
		s.broadcast(msg("stop", "attempt", s.attempt, "kind", "join", "restart", 0, "restarts", s.restarts, "why", fmt.Sprintf(
			"%s; %d node(s) are left, fewer than the minimum of --nnodes %s: the job ends", why, left, s.nnodesSpec())))
		s.endAttempt(false)
		return
	}
	s.say("%s: re-forming the job on the %d node(s) left (not counted as a restart)", why, left)
	s.broadcast(msg("stop", "attempt", s.attempt, "kind", "membership", "restart", 1, "restarts", s.restarts,
		"max_restarts", s.maxRestarts, "why", why))
	s.endAttempt(true)
	e.lastCallOver = true // the nodes of the next attempt are known: no last call
}

// nnodesSpec writes the job's --nnodes as given: "N", or "MIN:MAX" for an elastic job.
func (s *server) nnodesSpec() string {
	if s.minNodes == 0 {
		return strconv.Itoa(s.nnodes)
	}
	return fmt.Sprintf("%d:%d", s.minNodes, s.nnodes)
}

// elasticJoin handles a launcher's join of an elastic job. s.mu is held.
func (s *server) elasticJoin(p *peerConn, m message) {
	nproc, err := strconv.Atoi(m.args["nproc"])
	refuse := func(why string) {
		p.send(msg("stop", "attempt", m.args["attempt"], "restart", 0, "kind", "join", "why", why), true)
	}
	e := &s.elastic
	switch {
	case err != nil || nproc < 1:
		refuse("malformed join: " + m.format(true))
		return
	case s.final:
		refuse("the job is already over")
		return
	case m.args["master"] == "1" && p.seq == 0 && s.hasMaster():
		refuse("two launchers claim to be the master (--node_rank 0) of the elastic job: start the others without --node_rank")
		return
	}
	if p.seq == 0 {
		e.seq++
		p.seq, p.master = e.seq, m.args["master"] == "1"
		p.name = m.args["id"]
		if p.name == "" {
			p.name = p.conn.RemoteAddr().String()
		}
	}
	p.rank = nproc
	if slices.Contains(e.waiting, p) || s.running && s.joined[p.node] == p {
		return // joined already
	}
	e.waiting = append(e.waiting, p)
	p.send(msg("joined", "attempt", s.attempt), true)
	if !s.running {
		s.tryStart()
		return
	}
	if len(s.joined) >= s.nnodes {
		s.say("%s joined; the job runs on --nnodes %s's most nodes already (%d): it waits for the next formation",
			p.name, s.nnodesSpec(), s.nnodes)
		return
	}
	// A newcomer: the attempt stops and the next one includes it, without counting a restart.
	s.say("%s joined while the job runs on %d node(s): re-forming the job to include it (not counted as a restart)",
		p.name, len(s.joined))
	s.stopped = true
	s.broadcast(msg("stop", "attempt", s.attempt, "kind", "membership", "restart", 1, "restarts", s.restarts,
		"max_restarts", s.maxRestarts, "why", p.name+" joined the job"))
	s.endAttempt(true)
}

// hasMaster says whether the master's own launcher joined (it waits, or runs a node). s.mu is held.
func (s *server) hasMaster() bool {
	for _, p := range s.joined {
		if p.master {
			return true
		}
	}
	return slices.ContainsFunc(s.elastic.waiting, func(p *peerConn) bool { return p.master })
}

// say prints a line of the master launcher, when it has a terminal.
func (s *server) say(format string, args ...any) {
	if s.sayf != nil {
		s.sayf(format, args...)
	}
}

// formable says whether the launchers waiting may start the next attempt, and whether they
// must first wait for the last call: the master's own launcher and at least MIN have joined,
// and every node of the previous attempt still connected has joined again. s.mu is held.
func (s *server) formable() (ok, now bool) {
	e := &s.elastic
	if len(e.waiting) < s.minNodes || !slices.ContainsFunc(e.waiting, func(p *peerConn) bool { return p.master }) {
		return false, false
	}
	if len(e.waiting) >= s.nnodes {
		return true, true
	}
	for _, p := range e.prev {
		if !p.gone && !slices.Contains(e.waiting, p) {
			return false, false // it is still stopping its ranks
		}
	}
	return true, e.lastCallOver
}

// tryStart starts the next attempt when the launchers waiting may form it, at once or after
// the last call (which it arms). s.mu is held.
func (s *server) tryStart() {
	if s.running || s.final {
		return
	}
	ok, now := s.formable()
	switch {
	case now:
		s.startElastic()
	case ok && s.elastic.lastCall == nil:
		attempt := s.attempt
		s.elastic.lastCall = time.AfterFunc(s.lastCall, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.attempt == attempt && !s.running && !s.final {
				s.elastic.lastCallOver = true
				s.tryStart()
			}
		})
	}
}

// startElastic starts the next attempt on the launchers waiting: the master first, then the
// others in the order they first joined, at most MAX; the rest keep waiting. s.mu is held.
func (s *server) startElastic() {
	e := &s.elastic
	peers := slices.Clone(e.waiting)
	slices.SortStableFunc(peers, func(a, b *peerConn) int {
		if a.master != b.master {
			if a.master {
				return -1
			}
			return 1
		}
		return a.seq - b.seq
	})
	if len(peers) > s.nnodes {
		peers = peers[:s.nnodes]
	}
	e.waiting = slices.DeleteFunc(e.waiting, func(p *peerConn) bool { return slices.Contains(peers, p) })
	world := 0
	for _, p := range peers {
		world += p.rank
	}
	note := s.formationNote(e.prev, e.prevWorld, peers, world)
	e.newAttempt()
	e.prev, e.prevWorld = peers, world
	s.startNodes(peers, note)
}

// formationNote says what changed from the previous attempt's nodes (prev, of world size
// prevWorld) to peers (in node-rank order, of world size world): "" when nothing did. s.mu
// is held.
func (s *server) formationNote(prev []*peerConn, prevWorld int, peers []*peerConn, world int) string {
	var ranks []string
	for i, p := range peers {
		ranks = append(ranks, fmt.Sprintf("%d = %s", i, p.name))
	}
	if prev == nil {
		return fmt.Sprintf("the elastic job (--nnodes %s) starts on %d node(s), world size %d; node_rank %s",
			s.nnodesSpec(), len(peers), world, strings.Join(ranks, ", "))
	}
	var left, came []string
	for i, p := range prev {
		if !slices.Contains(peers, p) {
			left = append(left, fmt.Sprintf("%s (node_rank %d)", p.name, i))
		}
	}
	for _, p := range peers {
		if !slices.Contains(prev, p) {
			came = append(came, p.name)
		}
	}
	if len(left) == 0 && len(came) == 0 {
		return ""
	}
	var what []string
	if len(left) > 0 {
		what = append(what, strings.Join(left, ", ")+" left")
	}
	if len(came) > 0 {
		what = append(what, strings.Join(came, ", ")+" came")
	}
	return fmt.Sprintf("the elastic job re-formed (attempt %d, restart count %d of --max_restarts %d): %s; %d -> %d node(s), "+
		"world size %d -> %d; node_rank %s", s.attempt, s.restarts, s.maxRestarts, strings.Join(what, "; "),
		len(prev), len(peers), prevWorld, world, strings.Join(ranks, ", "))
}

// joinTimeUp ends the wait of --join_timeout for the attempt being formed: it starts with the
// launchers waiting when they may form it, else the job ends, naming the nodes missing. s.mu
// is held.
func (s *server) joinTimeUp() {
	e := &s.elastic
	if ok, _ := s.formable(); ok {
		s.startElastic()
		return
	}
	var here []string
	for _, p := range e.waiting {
		here = append(here, p.name)
	}
	if len(here) == 0 {
		here = []string{"none"}
	}
	var why string
	if e.prev == nil {
		why = fmt.Sprintf("only %d launcher(s) of the elastic job (--nnodes %s) joined within --join_timeout %s, fewer "+
			"than its minimum of %d: is `goaccel launch --nnodes %s` running on the other nodes, and can they reach port %d "+
			"of this machine? Joined: %s", len(e.waiting), s.nnodesSpec(), s.joinTimeout, s.minNodes, s.nnodesSpec(),
			s.port(), strings.Join(here, ", "))
	} else {
		var missing []string
		for i, p := range e.prev {
			if !slices.Contains(e.waiting, p) {
				how := "its launcher went away"
				if !p.gone {
					how = "its launcher did not join again"
				}
				missing = append(missing, fmt.Sprintf("%s (node_rank %d: %s)", p.name, i, how))
			}
		}
		why = fmt.Sprintf("the elastic job fell below its minimum of %d node(s) (--nnodes %s): missing %s, and no "+
			"launcher took their place within --join_timeout %s; still here: %s", s.minNodes, s.nnodesSpec(),
			strings.Join(missing, ", "), s.joinTimeout, strings.Join(here, ", "))
	}
	s.final = true
	s.broadcast(msg("stop", "attempt", s.attempt, "restart", 0, "restarts", s.restarts, "kind", "join", "why", why))
}

// sayWhileForming says, while an attempt is being formed, who joined and what the master
// waits for. s.mu is held.
func (s *server) sayWhileForming() {
	if s.running || s.final {
		return
	}
	var here []string
	for _, p := range s.elastic.waiting {
		here = append(here, p.name)
	}
	s.say("forming the elastic job (--nnodes %s): %d launcher(s) joined (%s); it starts when %d have, or %d and then "+
		"--rdzv_conf last_call_timeout=%s has passed (%s of --join_timeout %s)", s.nnodesSpec(), len(here),
		strings.Join(here, ", "), s.nnodes, s.minNodes, seconds(s.lastCall), seconds(time.Since(s.joinStart)), seconds(s.joinTimeout))
}

// elasticGone handles the closed connection of a launcher of an elastic job: one waiting
// leaves the formation; a node of the running attempt stops it, and the next attempt forms
// without it (a restart, when --max_restarts allows; else the job ends). s.mu is held.
func (s *server) elasticGone(p *peerConn) {
	p.gone = true
	e := &s.elastic
	if i := slices.Index(e.waiting, p); i >= 0 {
		e.waiting = slices.Delete(e.waiting, i, i+1)
		if !s.final {
			s.say("%s left before its node started", p.name)
		}
	}
	if !s.running || s.joined[p.node] != p {
		if !s.running {
			s.tryStart() // a node of the previous attempt that is not coming back
		}
		return
	}
	delete(s.joined, p.node)
	if s.stopped {
		return
	}
	s.stopped = true
	restart := s.restarts < s.maxRestarts
	why := fmt.Sprintf("the launcher of node_rank %d, %s, went away (its machine, its launcher or its connection to port "+
		"%d failed)", p.node, p.name, s.port())
	if !restart {
		why += fmt.Sprintf("; --max_restarts %d: no restart left", s.maxRestarts)
	}
	stop := msg("stop", "attempt", s.attempt, "restart", btoi(restart), "restarts", s.restarts, "max_restarts", s.maxRestarts,
		"kind", "node", "node", p.node, "why", why)
	if restart {
		s.restarts++
	} else {
		s.final = true
	}
	s.broadcast(stop)
	s.endAttempt(restart)
}

// parseNNodes reads --nnodes: "N" (a static job of N nodes) or torchrun's "MIN:MAX" (an
// elastic job); min is 0 for a static job.
func parseNNodes(v string) (min, max int, err error) {
	lo, hi, ranged := strings.Cut(v, ":")
	if !ranged {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return 0, 0, fmt.Errorf("--nnodes %q: want a positive number of nodes, or MIN:MAX for an elastic job (torchrun's --nnodes 1:4)", v)
		}
		return 0, n, nil
	}
	a, err1 := strconv.Atoi(strings.TrimSpace(lo))
	b, err2 := strconv.Atoi(strings.TrimSpace(hi))
	switch {
	case err1 != nil || err2 != nil:
		return 0, 0, fmt.Errorf("--nnodes %q: want MIN:MAX with two whole numbers, such as 2:4 (an elastic job of 2 to 4 nodes)", v)
	case a < 1:
		return 0, 0, fmt.Errorf("--nnodes %q: MIN is %d: an elastic job needs at least 1 node", v, a)
	case a > b:
		return 0, 0, fmt.Errorf("--nnodes %q: MIN %d is more than MAX %d", v, a, b)
	}
	return a, b, nil
}

// parseRdzvConf reads torchrun's --rdzv_conf "key=value,key=value": last_call_timeout,
// join_timeout and close_timeout, in seconds or as a duration (the other keys of torchrun's
// are refused by name); a key not given is 0, and close_timeout=0 is -1 (close at once).
func parseRdzvConf(v string) (lastCall, join, closeWait time.Duration, err error) {
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, val, ok := strings.Cut(item, "=")
		k = strings.TrimSpace(k)
		if !ok {
			return 0, 0, 0, fmt.Errorf("--rdzv_conf %q: %q is not key=value", v, item)
		}
		var d time.Duration
		switch k {
		case "last_call_timeout", "join_timeout", "close_timeout":
			if d, err = parseSeconds("rdzv_conf "+k, strings.TrimSpace(val)); err != nil {
				return 0, 0, 0, err
			}
		default:
			return 0, 0, 0, fmt.Errorf("--rdzv_conf %q: unknown key %q: goaccel reads last_call_timeout, join_timeout and close_timeout", v, k)
		}
		switch k {
		case "last_call_timeout":
			lastCall = d
		case "join_timeout":
			join = d
		default:
			closeWait = d
			if d == 0 {
				closeWait = -1 // Config.CloseTimeout's "at once"
			}
		}
	}
	return lastCall, join, closeWait, nil
}
