package launch

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
)

// The env:// rendezvous: processes that a launcher without a PMI started (Kubeflow's
// PyTorchJob, a plain srun on a cluster whose MpiDefault is none, a shell loop over ssh) meet
// by themselves, as PyTorch's init_process_group("env://") does. Each knows its rank, the
// number of processes and where rank 0 is, from torch's variables (RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) or, under srun, from Slurm's
// (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID, the first host of
// SLURM_STEP_NODELIST, a port derived from SLURM_JOB_ID): EnvPlace reads them.
//
// Join then does in the process what goaccel launch does for its ranks: rank 0 serves the
// launcher's rendezvous and PMI-1 store (server.go) at MASTER_ADDR:MASTER_PORT, behind the
// job secret ($GOACCEL_JOB_SECRET, else a public one: any process that reaches the port may
// join, as with PyTorch's TCPStore); every process, rank 0 included, joins it as a node of
// one rank and gives its MPI library a PMI socket of its own (PMI_FD), relayed to rank 0
// (pmi.go). MPI_Init then finds the others as under goaccel launch. A process that leaves
// without Member.End (it crashed, or was killed) stops the others, which exit naming it; a
// rank that never comes is named when the wait (GOACCEL_TIMEOUT) runs out.

// Place is one process's place in a job, as the variables of its launcher say.
type Place struct {
	// Rank is this process's rank, 0 to WorldSize-1; LocalRank and LocalWorldSize its index
	// among, and the number of, the job's processes on its machine.
	Rank, WorldSize, LocalRank, LocalWorldSize int
	// Addr and Port are where rank 0 serves the rendezvous (MASTER_ADDR, MASTER_PORT).
	Addr string
	Port int
	// Source names the variables, for messages: "torch's env:// ($RANK, $WORLD_SIZE, ...)".
	Source string
	// RankVar, SizeVar, AddrVar and PortVar are the variables as the messages name them:
	// "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", or Slurm's.
	RankVar, SizeVar, AddrVar, PortVar string
}

// withPMI are the variables by which a launcher says it serves a PMI (or PMIx) to its
// processes, which then meet through it: MPICH's Hydra and goaccel launch (PMI_FD, PMI_PORT,
// PMI_RANK), srun --mpi=pmi2 (PMI_FD), srun --mpi=pmix and Open MPI (PMIX_RANK,
// OMPI_COMM_WORLD_RANK).
var withPMI = []*envvar.Var{envvar.PMIFD.Var, envvar.PMIPort.Var, envvar.PMIRank.Var, envvar.PMIxRank.Var,
	envvar.OMPIRank.Var}

// EnvPlace reads env ("NAME=value" entries) for a process that must meet the others by
// itself: ok is true when torch's RANK and WORLD_SIZE (or, in a task of srun, Slurm's
// SLURM_PROCID and SLURM_NTASKS) say it is one of several processes and no launcher's PMI
// is there to join them. A batch script and an salloc shell have no SLURM_STEP_ID and are
// not a rank. A variable that does not parse, or a missing MASTER_ADDR or MASTER_PORT, is an
// error naming it.
func EnvPlace(env []string) (p Place, ok bool, err error) {
	for _, v := range withPMI {
		if val, set := envvar.Lookup(env, v.Name); set && val != "" {
			return Place{}, false, nil
		}
	}
	get := func(v *envvar.Var) string { s, _ := envvar.Lookup(env, v.Name); return strings.TrimSpace(s) }
	num := func(v *envvar.Var, dflt, least int, what string) (int, error) {
		s := get(v)
		if s == "" {
			return dflt, nil
		}
		if v.Kind == envvar.KindSlurmCount {
			s, _, _ = strings.Cut(s, "(")
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < least {
			return 0, fmt.Errorf("$%s=%q (%s) is not %s", v.Name, get(v), p.Source, what)
		}
		return n, nil
	}
	var nodeList string
	switch {
	case get(envvar.Rank.Var) != "" || get(envvar.WorldSize.Var) != "":
		p = Place{Source: "torch's env:// variables", RankVar: envvar.Rank.Name, SizeVar: envvar.WorldSize.Name,
			AddrVar: envvar.MasterAddr.Name, PortVar: envvar.MasterPort.Name}
		if p.WorldSize, err = num(envvar.WorldSize.Var, -1, 1, "a number of processes (1 or more)"); err != nil {
			return p, false, err
		}
		if p.Rank, err = num(envvar.Rank.Var, -1, 0, "a rank (0 or more)"); err != nil {
			return p, false, err
		}
		if p.Rank < 0 || p.WorldSize < 0 {
			set, unset := envvar.Rank.Name, envvar.WorldSize.Name
			if p.Rank < 0 {
				set, unset = unset, set
			}
			return p, false, fmt.Errorf("$%s is set but $%s is not: a launcher sets both (torchrun, Kubeflow's PyTorchJob); "+
				"unset $%s to run as a single process", set, unset, set)
		}
		if p.LocalRank, err = num(envvar.LocalRank.Var, 0, 0, "a local rank (0 or more)"); err != nil {
			return p, false, err
		}
		if p.LocalWorldSize, err = num(envvar.LocalWorldSize.Var, p.LocalRank+1, 1, "a number of processes (1 or more)"); err != nil {
			return p, false, err
		}
	case get(envvar.SlurmStepID.Var) != "" && get(envvar.SlurmProcID.Var) != "":
		p = Place{Source: "Slurm's task variables (srun without --mpi)", RankVar: envvar.SlurmProcID.Name,
			SizeVar: envvar.SlurmNTasks.Name, AddrVar: envvar.SlurmStepNodeList.Name}
		if p.Rank, err = num(envvar.SlurmProcID.Var, 0, 0, "a rank (0 or more)"); err != nil {
			return p, false, err
		}
		if p.WorldSize, err = num(envvar.SlurmNTasks.Var, 1, 1, "a number of tasks (1 or more)"); err != nil {
			return p, false, err
		}
		if p.LocalRank, err = num(envvar.SlurmLocalID.Var, 0, 0, "a local rank (0 or more)"); err != nil {
			return p, false, err
		}
		if p.LocalWorldSize, err = num(envvar.SlurmNTasksPerNode.Var, p.LocalRank+1, 1, "a number of tasks (1 or more)"); err != nil {
			return p, false, err
		}
		if nodeList = get(envvar.SlurmStepNodeList.Var); nodeList == "" {
			nodeList, p.AddrVar = get(envvar.SlurmJobNodeList.Var), envvar.SlurmJobNodeList.Name
		}
	default:
		return Place{}, false, nil
	}
	if p.Rank >= p.WorldSize {
		return p, false, fmt.Errorf("$%s=%d is not below $%s=%d (%s)", p.RankVar, p.Rank, p.SizeVar, p.WorldSize, p.Source)
	}
	if p.LocalRank >= p.LocalWorldSize {
		p.LocalWorldSize = p.LocalRank + 1
	}
	if p.WorldSize == 1 {
		return p, false, nil // one process: nothing to meet
	}
	// Where rank 0 is: MASTER_ADDR and MASTER_PORT when set (torch's; under Slurm they override).
	if a := get(envvar.MasterAddr.Var); a != "" || nodeList == "" {
		p.Addr, p.AddrVar = a, envvar.MasterAddr.Name
	} else if p.Addr, err = FirstHost(nodeList); err != nil {
		return p, false, fmt.Errorf("$%s: %w: set $%s to rank 0's host", p.AddrVar, err, envvar.MasterAddr.Name)
	}
	if p.Addr == "" {
		return p, false, fmt.Errorf("%s say this is rank %d of %d, but $%s, the host of rank 0, is not set: if the "+
			"program was started by hand, unset $%s and $%s to run as one process, or set $%s and $%s as torchrun does, "+
			"or start it with goaccel launch", p.Source, p.Rank, p.WorldSize, envvar.MasterAddr.Name, p.RankVar, p.SizeVar,
			envvar.MasterAddr.Name, envvar.MasterPort.Name)
	}
	if s := get(envvar.MasterPort.Var); s != "" || nodeList == "" {
		p.PortVar = envvar.MasterPort.Name
		if s == "" {
			return p, false, fmt.Errorf("%s say this is rank %d of %d, but $%s, the port where rank 0 serves the others, "+
				"is not set: set it (the same on every process), as torchrun does", p.Source, p.Rank, p.WorldSize,
				envvar.MasterPort.Name)
		}
		if p.Port, err = strconv.Atoi(s); err != nil || p.Port < 1 || p.Port > 65535 {
			return p, false, fmt.Errorf("$%s=%q is not a port (1 to 65535)", envvar.MasterPort.Name, s)
		}
		return p, true, nil
	}
	job, _ := strconv.Atoi(get(envvar.SlurmJobID.Var))
	step, _ := strconv.Atoi(get(envvar.SlurmStepID.Var))
	p.Port = SlurmPort(job, step)
	p.PortVar = fmt.Sprintf("the port derived from $%s=%d and $%s=%d (set $%s to choose another)", envvar.SlurmJobID.Name,
		job, envvar.SlurmStepID.Name, step, envvar.MasterPort.Name)
	return p, true, nil
}

// SlurmPort is the port where task 0 of a Slurm job step serves the others when no
// MASTER_PORT is set: 10000 + (job id + 1009 x step id) mod 20000, below Linux's ephemeral
// ports (32768 and up), the same in every task of the step and different for two steps of a job.
func SlurmPort(jobID, stepID int) int {
	return 10000 + ((jobID+1009*stepID)%20000+20000)%20000
}

// publicSecret is the job secret of a rendezvous without $GOACCEL_JOB_SECRET: it only tells
// goaccel's processes from other programs.
const publicSecret = "goaccel env:// rendezvous without a job secret"

// JoinConfig is how Join meets the others. The zero value works.
type JoinConfig struct {
	// Secret is the job secret ("": $GOACCEL_JOB_SECRET from Env, else a public one).
	Secret string
	// Timeout bounds the wait for every process (default 30 minutes).
	Timeout time.Duration
	// Env is the environment read ($GOACCEL_JOB_SECRET; nil: this process's).
	Env []string
	// Stderr receives the rendezvous's lines (nil: os.Stderr).
	Stderr io.Writer
	// Lost is called, once, when the job ends without this process after Join returned:
	// another process failed or went away, or rank 0's rendezvous did. nil: the reason is
	// written to Stderr, MPICH's /dev/shm files that the process maps are removed, and it exits
	// with status 1, as a launcher would stop it.
	Lost func(why string)

	progressEvery time.Duration // tests: how often a wait is reported (0: progressEvery)
}

// Member is one process's membership of a job that met through Join.
type Member struct {
	place    Place
	l        *launcher
	srv      *server // rank 0's
	relay    *pmiRelay
	pmi      *os.File // the MPI library's end of its PMI socket
	lost     func(why string)
	say      func(format string, args ...any)
	wait     time.Duration
	mu       sync.Mutex
	hangOnce sync.Once
	ended    bool
	end      chan message // the master's last word: "finished" or "stop" (or a closed connection)
	closed   chan struct{}
}

// Join meets the job's other processes at p (EnvPlace's): rank 0 serves the rendezvous, every
// process joins it, and Join returns once all p.WorldSize processes have. Then the process's
// MPI library finds the others through the PMI socket that PMIEnv describes. A rank that does
// not come within the timeout, a port in use, a wrong secret, a WORLD_SIZE that differs
// between processes: an error naming it, on every process that came.
func Join(ctx context.Context, p Place, cfg JoinConfig) (*Member, error) {
	if cfg.Env == nil {
		cfg.Env = envvar.Environ()
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Minute
	}
	secret, public := cfg.Secret, false
	if secret == "" {
		secret, _ = envvar.Lookup(cfg.Env, envvar.JobSecret.Name)
	}
	if secret == "" {
		secret, public = publicSecret, true
	} else if len(secret) < secretMinBytes {
		return nil, fmt.Errorf("the job secret ($%s) has %d bytes: give at least %d", envvar.JobSecret.Name, len(secret), secretMinBytes)
	}
	var smu sync.Mutex
	say := func(format string, args ...any) {
		smu.Lock()
		defer smu.Unlock()
		fmt.Fprintf(cfg.Stderr, "goaccel: rank %d: "+format+"\n", append([]any{p.Rank}, args...)...)
	}
	lc := Config{NNodes: p.WorldSize, NodeRank: p.Rank, NprocPerNode: 1, JoinTimeout: cfg.Timeout, Secret: secret,
		Stderr: cfg.Stderr, progressEvery: cfg.progressEvery}
	addr := net.JoinHostPort(p.Addr, strconv.Itoa(p.Port))
	m := &Member{place: p, lost: cfg.Lost, say: say, wait: cfg.Timeout, end: make(chan message, 1),
		closed: make(chan struct{})}
	if p.Rank == 0 {
		bind := addr
		if !isLoopback(p.Addr) && !resolvesToLoopback(p.Addr) {
			bind = net.JoinHostPort("", strconv.Itoa(p.Port)) // the other machines must reach it
		}
		srv, err := newServer(bind, secret, 0, &lc, say)
		if err != nil {
			hint := "another program (or a previous run) holds it: choose another $" + envvar.MasterPort.Name
			if _, torchrun := envvar.Lookup(cfg.Env, envvar.TorchelasticRunID.Name); torchrun {
				hint = "torchrun's agent serves its own store there: start the program with goaccel launch, not torchrun"
			}
			return nil, fmt.Errorf("rank 0 cannot serve the other processes at %s (%s %s): %v: %s", bind, p.AddrVar, p.PortVar,
				unwrapOpErr(err), hint)
		}
		srv.member = &p
		m.srv = srv
		note := ""
		if public {
			note = fmt.Sprintf(" (no $%s: any process that reaches the port may join, as with torch's TCPStore)", envvar.JobSecret.Name)
		}
		say("serving the rendezvous of %d processes at %s (from %s)%s", p.WorldSize, addr, p.Source, note)
	}
	fail := func(err error) (*Member, error) {
		m.close()
		return nil, err
	}
	ctl, err := dialMember(ctx, addr, p, cfg.Timeout, lc.sayEvery(), say)
	if err != nil {
		return fail(err)
	}
	l := &launcher{cfg: lc, host: hostname(), ctl: ctl, masterAddr: addr, ackBy: time.Now().Add(authWait), ackLimit: authWait}
	m.l = l
	if err := l.authenticate(ctx); err != nil {
		return fail(memberWords(err, p))
	}
	if err := ctl.send(msg("join", "node", p.Rank, "nproc", 1, "attempt", 0, "host", l.host,
		"id", fmt.Sprintf("%s (pid %d)", l.host, os.Getpid()), "nnodes", p.WorldSize, "group", machineKey(l.host))); err != nil {
		return fail(l.lost(err))
	}
	start, err := m.awaitGo(ctx)
	if err != nil {
		return fail(err)
	}
	world, _ := strconv.Atoi(start.args["world"])
	m.relay = newPMIRelay(l, 0, world, start.args["kvs"])
	ctl.setRelay(m.relay)
	if m.pmi, err = m.relay.socket(p.Rank); err != nil {
		return fail(err)
	}
	go m.watch()
	return m, nil
}

// unwrapOpErr drops the "listen tcp ...:" prefix of a net error, which the message says already.
func unwrapOpErr(err error) error {
	if oe, ok := err.(*net.OpError); ok && oe.Err != nil {
		return oe.Err
	}
	return err
}

// machineKey tells the processes of one machine from those of another, for MPICH's
// PMI_process_mapping (shared memory within a machine): the host name and the boot id, since
// two containers (pods) of one machine have names of their own but may share no memory.
func machineKey(host string) string {
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s", host, strings.TrimSpace(string(boot)))
	return strconv.FormatUint(h.Sum64(), 36)
}

// dialMember connects to rank 0's rendezvous, retrying while it is not up yet, for at most wait.
func dialMember(ctx context.Context, addr string, p Place, wait, every time.Duration, say func(string, ...any)) (*control, error) {
	quiet := func(string, ...any) {}
	if p.Rank != 0 {
		quiet = func(format string, args ...any) {
			say("waiting for rank 0's rendezvous at %s (%s %s)", addr, p.AddrVar, p.PortVar)
		}
	}
	ctl, err := dialMaster(ctx, addr, wait, wait, every, quiet)
	if f, ok := err.(*Failure); ok && f.Kind == "join" {
		f.Why = strings.NewReplacer("cannot reach the node_rank 0 launcher", fmt.Sprintf("rank %d cannot reach rank 0's rendezvous", p.Rank),
			"(--join_timeout)", "($"+envvar.Timeout.Name+")",
			"the same --master_addr and --master_port", fmt.Sprintf("the same %s and %s", p.AddrVar, p.PortVar)).Replace(f.Why)
	}
	return ctl, err
}

// memberWords rewrites a launcher's failure to join for a process that joins by itself.
func memberWords(err error, p Place) error {
	f, ok := err.(*Failure)
	if !ok {
		return err
	}
	r := strings.NewReplacer("goaccel launch's node_rank 0 launcher", "rank 0's rendezvous",
		"this job's node_rank 0 launcher", "rank 0's rendezvous of this job",
		"--master_addr and --master_port", "$"+p.AddrVar+" and $"+envvar.MasterPort.Name,
		"the node_rank 0 launcher refused this launcher", "rank 0 refused rank "+strconv.Itoa(p.Rank),
		" or --job_secret_file must be the same on every node", " must be the same in every process")
	f.Why = r.Replace(f.Why)
	return f
}

// awaitGo waits for the master's "go" (every process joined) or its refusal.
func (m *Member) awaitGo(ctx context.Context) (message, error) {
	tick := time.NewTicker(m.l.cfg.sayEvery())
	defer tick.Stop()
	begin := time.Now()
	for {
		select {
		case msg, ok := <-m.l.ctl.in:
			if !ok {
				return message{}, memberWords(m.l.lost(nil), m.place)
			}
			switch msg.cmd {
			case "joined":
			case "go":
				return msg, nil
			case "stop":
				return message{}, failureFrom(msg)
			default:
				return message{}, memberWords(m.l.notMaster(answered(msg)), m.place)
			}
		case <-tick.C:
			if m.place.Rank != 0 {
				m.say("joined rank 0's rendezvous; waiting for the other processes (%s of %s)", seconds(time.Since(begin)),
					seconds(m.wait))
			}
		case <-ctx.Done():
			return message{}, &Failure{Kind: "interrupt", Rank: -1, Why: "interrupted while waiting for the other processes"}
		}
	}
}

// watch follows the master's messages once the job runs: its end ("finished" after every
// process's End), or a stop because another process failed or went away, which is Lost.
func (m *Member) watch() {
	var last message
	for msg := range m.l.ctl.in {
		if msg.cmd == "stop" || msg.cmd == "finished" {
			last = msg
			break
		}
	}
	m.mu.Lock()
	ended := m.ended
	m.mu.Unlock()
	select {
	case m.end <- last:
	default:
	}
	if ended && last.cmd == "" && m.srv == nil {
		return // rank 0 went away after this process ended: nothing lost
	}
	if ended && (last.cmd == "finished" || last.args["rank"] == strconv.Itoa(m.place.Rank)) {
		return
	}
	if ended {
		return // End reports the stop itself
	}
	why := ""
	if last.cmd == "" {
		why = fmt.Sprintf("lost the connection to rank 0's rendezvous at %s (rank 0's process ended or its machine went away)",
			m.l.masterAddr)
	} else {
		why = failureFrom(last).Error()
	}
	if m.lost != nil {
		m.lost(why)
		return
	}
	m.say("the job stops: %s", why)
	for path := range mappedShm(os.Getpid()) {
		_ = os.Remove(path) // MPICH's segment of this machine's ranks, which all stop: no launcher removes it
	}
	os.Exit(1)
}

// PMIEnv is what the process's MPI library reads to find its PMI: the inherited-socket form
// of MPICH's simple PMI-1 (PMI_FD, PMI_RANK, PMI_SIZE), MPICH's local ranks and the PMI version.
func (m *Member) PMIEnv() map[*envvar.Var]string {
	p := m.place
	return map[*envvar.Var]string{
		envvar.PMIFD.Var:          strconv.Itoa(int(m.pmi.Fd())),
		envvar.PMIRank.Var:        strconv.Itoa(p.Rank),
		envvar.PMISize.Var:        strconv.Itoa(p.WorldSize),
		envvar.MPILocalRankID.Var: strconv.Itoa(p.LocalRank),
		envvar.MPILocalNRanks.Var: strconv.Itoa(p.LocalWorldSize),
		envvar.PMIVersion.Var:     "1",
	}
}

// Place is where this process joined.
func (m *Member) Place() Place { return m.place }

// End says that this process is done with the job: code 0 after MPI_Finalize (whose PMI
// barrier rank 0 serves; End then waits, at most the join timeout, until every process said
// so, and ends the rendezvous), another code when it fails, which stops the other processes.
// Later calls do nothing.
func (m *Member) End(code int) error {
	m.mu.Lock()
	if m.ended {
		m.mu.Unlock()
		return nil
	}
	m.ended = true
	m.mu.Unlock()
	defer m.hangUp() // the PMI socket stays served till the process ends: MPICH may still say "finalize"
	if code != 0 {
		_ = m.l.ctl.send(msg("fail", "attempt", 0, "kind", "worker", "node", m.place.Rank, "host", m.l.host,
			"rank", m.place.Rank, "pid", os.Getpid(), "what", fmt.Sprintf("exit code %d", code)))
		select { // the master's stop reaches the others before this process (and rank 0's server) goes
		case <-m.end:
		case <-time.After(2 * time.Second):
		}
		return nil
	}
	if err := m.l.ctl.send(msg("done", "attempt", 0)); err != nil {
		return nil // the master is gone: the job is over for everyone
	}
	select {
	case last := <-m.end:
		if last.cmd == "stop" {
			return failureFrom(last)
		}
	case <-time.After(m.wait):
		return fmt.Errorf("rank %d ended, but the other processes did not within %s", m.place.Rank, m.wait)
	}
	return nil
}

// hangUp ends the connection to rank 0's rendezvous and, on rank 0, the rendezvous.
func (m *Member) hangUp() {
	m.hangOnce.Do(func() {
		if m.l != nil {
			_ = m.l.ctl.conn.Close()
		}
		if m.srv != nil {
			m.srv.close()
		}
	})
}

// close ends what Join started: the PMI socket, the connection, rank 0's server.
func (m *Member) close() {
	select {
	case <-m.closed:
		return
	default:
		close(m.closed)
	}
	if m.relay != nil {
		m.l.ctl.setRelay(nil)
		m.relay.close()
	}
	m.hangUp()
}

// resolvesToLoopback says whether host is a name of loopback addresses only (a one-machine
// cluster whose node name is 127.0.0.1 in /etc/hosts): rank 0 then listens there only.
func resolvesToLoopback(host string) bool {
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return false
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return false
		}
	}
	return true
}
