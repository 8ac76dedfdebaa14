package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/flagsuggest"
	flag "github.com/spf13/pflag"
	"golang.org/x/sys/unix"
)

const usage = `usage: goaccel launch [flags] PROGRAM [ARGS...]
       goaccel launch --selftest [flags]

Starts PROGRAM as several processes (ranks) on this node, and with --nnodes on several nodes,
as torchrun does, and stops them all when one fails. Flags take torchrun's names, in snake or
kebab case (--nproc_per_node, --nproc-per-node), or horovodrun's (-np 4 -H host1:2,host2:2).
PROGRAM is an executable, or Go source as go run takes it (main.go, or a package's folder):
that is built once with go build, and every rank runs the result.

examples:
  goaccel launch --nproc_per_node 2 ./train --epochs 3
  goaccel launch --nnodes 2 --node_rank 0 --master_addr 10.0.0.1 --master_port 29500 --nproc_per_node 4 ./train
  goaccel launch --nnodes 2:4 --max_restarts 3 --node_rank 0 --master_addr 10.0.0.1 ./train   (elastic: the master;
          the other nodes run the same line without --node_rank, and may come and go while the job runs)
  goaccel launch -np 4 -H localhost:2,otherhost:2 ./train
  goaccel launch --hostfile hosts.txt ./train         (lines "host slots=N", "host:N" or "host")
  goaccel launch --selftest --nnodes 2 --node_rank 1 --master_addr 10.0.0.1 --nproc_per_node 4
                                                      (checks the job's ranks, MPI and network)

flags:
`

// invocation is a parsed command line.
type invocation struct {
	cfg        Config
	hosts      []hostSlots // horovodrun's -H or --hostfile, in order; empty without them
	noMPICheck bool
	// selfTest runs goaccel's self-test ranks instead of a program (--selftest); replaced names
	// the program given with it, which does not run.
	selfTest bool
	replaced string
	// forward holds the flags to pass on to the launchers of the other -H hosts.
	forward []string
}

// flagError is a command-line mistake: Main prints it with the usage hint and exits 2.
type flagError struct{ error }

// flagValues holds the parsed flags.
type flagValues struct {
	nproc, nnodes, masterAddr, logDir, timeout, joinTimeout, hosts, hostfile, secretFile, rdzvConf *string
	rdzvBackend, rdzvEndpoint, rdzvID                                                              *string
	nodeRank, masterPort, maxRestarts, tee, np                                                     *int
	standalone, noMPICheck, noCPUBind, oversubscribe, selfTest, help                               *bool
}

// newFlags defines the launcher's flags; "_" and "-" are the same in their names.
func newFlags() (*flag.FlagSet, *flagValues) {
	fs := flag.NewFlagSet("goaccel launch", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SetInterspersed(false)
	fs.SetNormalizeFunc(func(_ *flag.FlagSet, name string) flag.NormalizedName {
		return flag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
	})
	fs.Usage = func() {}
	v := &flagValues{}
	v.nproc = fs.String("nproc-per-node", "", "ranks on this node: a number, gpu (one per visible GPU), cpu (one per CPU core, "+
		"each with its share of the node's CPU devices, at least one) or auto (gpu if there are GPUs, else cpu); "+
		"default: one per visible GPU, else 1 (one process driving the node's CPU devices)")
	v.nnodes = fs.String("nnodes", "1", "number of nodes (launchers) in the job, or MIN:MAX for an elastic job (torchrun's): "+
		"it starts on MAX nodes, or on MIN once --rdzv_conf last_call_timeout has passed, and goes on while nodes leave or come")
	v.nodeRank = fs.Int("node-rank", 0, "this node's index, 0 to nnodes-1; node 0 is the master. Elastic (--nnodes MIN:MAX): "+
		"give --node_rank 0 to the master only; the master numbers the other nodes")
	v.masterAddr = fs.String("master-addr", "127.0.0.1", "address of the node_rank 0 machine, which the other nodes and every rank connect to")
	v.masterPort = fs.Int("master-port", 0, fmt.Sprintf("port of the master launcher (default: a free port on one node, %d on several); "+
		"the ranks' MASTER_PORT is this+1 (open both)", DefaultMasterPort))
	v.standalone = fs.Bool("standalone", false, "one node, on a free local port (the default already)")
	v.maxRestarts = fs.Int("max-restarts", 0, "restart the whole group this many times after a worker failure (elastic: or the loss of a node)")
	v.logDir = fs.String("log-dir", "", "write DIR/attempt_A/rank_R/{stdout,stderr}.log (default: a new temporary folder, removed when the job succeeds)")
	v.tee = fs.Int("tee", -1, "show on the terminal: 0 nothing, 1 every local rank's stdout, 2 stderr, 3 both (default: rank 0's output)")
	v.timeout = fs.String("timeout", "0", "stop the whole job after this long (seconds or a duration such as 30m; 0: never)")
	v.joinTimeout = fs.String("join-timeout", "300", "how long to wait for every node's launcher (seconds or a duration); every 10 s the launchers say what they wait for")
	v.rdzvConf = fs.String("rdzv-conf", "", fmt.Sprintf("elastic jobs, torchrun's KEY=VALUE,...: last_call_timeout=SECONDS, how long the master "+
		"waits for more nodes once MIN have joined (default %g), join_timeout=SECONDS (--join_timeout) and close_timeout=SECONDS, "+
		"how long the master, once the job ended, waits for the other launchers to hear it and hang up (default %g)",
		DefaultLastCallTimeout.Seconds(), DefaultCloseTimeout.Seconds()))
	v.rdzvBackend = fs.String("rdzv-backend", "static", "torchrun's rendezvous: static (the nodes are numbered by --node_rank) or c10d "+
		"(the launchers meet at --rdzv_endpoint, the first one there to bind its port serves it, and it numbers the nodes: "+
		"an elastic job of --nnodes, MIN:MAX or N)")
	v.rdzvEndpoint = fs.String("rdzv-endpoint", "", fmt.Sprintf("HOST[:PORT] where the launchers meet (default port %d with c10d, "+
		"%d with static); the same as --master_addr/--master_port", DefaultC10dPort, DefaultMasterPort))
	v.rdzvID = fs.String("rdzv-id", "", "the job's id: a launcher whose id differs from the master's is refused")
	v.secretFile = fs.String("job-secret-file", "", "read the job secret from this file's first line (mode 0600; - for standard input); "+
		"default $GOACCEL_JOB_SECRET; a job of one node, or of -H hosts, makes its own")
	v.np = fs.Int("np", 0, "horovodrun: total number of ranks")
	v.hosts = fs.StringP("hosts", "H", "", "horovodrun: host1:slots,host2:slots; the first host must be this machine")
	v.hostfile = fs.String("hostfile", "", "the hosts of -H from a file, one a line: \"host slots=N\" (Open MPI, Horovod), \"host:N\" (MPICH) or \"host\" (1 slot); # comments")
	v.selfTest = fs.Bool("selftest", false, "run goaccel's check on every rank instead of PROGRAM: discovery, a barrier, a 64 MiB all-reduce and its "+
		"bandwidth, host names and interfaces, in one table; a node_rank > 0 that cannot reach the master fails within 10 s")
	v.noMPICheck = fs.Bool("no-mpi-check", false, "start several ranks even when no MPI library is found (programs that do not use MPI)")
	v.noCPUBind = fs.Bool("no-cpu-bind", false, "leave every rank on all CPUs (default with several local ranks: each is bound to its share)")
	v.oversubscribe = fs.Bool("oversubscribe", false, "start more ranks than this machine's CPU cores (its CPU affinity) when no GPU is visible "+
		"(refused without it: the ranks would take turns on the cores)")
	v.help = fs.BoolP("help", "h", false, "show this help")
	return fs, v
}

func parseArgs(args []string, env []string) (inv *invocation, err error) {
	fs, v := newFlags()
	var from map[string]string // flag -> the variable that gave it (PET_*, SLURM_*)
	defer func() {
		var fe flagError
		if errors.As(err, &fe) && len(from) > 0 {
			err = flagError{renameFlags(fe.error, from)}
		}
	}()
	nproc, nnodes, nodeRank, masterAddr, masterPort := v.nproc, v.nnodes, v.nodeRank, v.masterAddr, v.masterPort
	standalone, maxRestarts, logDir, tee, timeout, joinTimeout := v.standalone, v.maxRestarts, v.logDir, v.tee, v.timeout, v.joinTimeout
	np, hosts, noMPICheck, help := v.np, v.hosts, v.noMPICheck, v.help
	if err := fs.Parse(horovodShortFlags(fs, args)); err != nil {
		return nil, flagError{unknownFlagHint(fs, err)}
	}
	if *help {
		return nil, flag.ErrHelp
	}
	if from, err = envDefaults(fs, env); err != nil {
		return nil, flagError{err}
	}
	inv = &invocation{noMPICheck: *noMPICheck, selfTest: *v.selfTest}
	c := &inv.cfg
	c.NoCPUBind = *v.noCPUBind
	c.Env = env
	switch {
	case inv.selfTest:
		if fs.NArg() > 0 {
			inv.replaced = fs.Arg(0)
		}
		if err := c.selfTestProgram(); err != nil {
			return nil, err
		}
	case fs.NArg() == 0:
		return nil, flagError{errors.New("no program to run (or --selftest)")}
	default:
		c.Program, c.Args = fs.Arg(0), fs.Args()[1:]
	}
	if c.MinNodes, c.NNodes, err = parseNNodes(*nnodes); err != nil {
		return nil, flagError{err}
	}
	c.NodeRank, c.MasterAddr, c.MasterPort = *nodeRank, *masterAddr, *masterPort
	c.RdzvID = *v.rdzvID
	switch *v.rdzvBackend {
	case "static":
	case "c10d":
		if c.MinNodes == 0 {
			c.MinNodes = c.NNodes // the rendezvous numbers the nodes: an elastic job of N to N
		}
		c.BindMaster = !fs.Changed("node-rank")
	default:
		return nil, flagError{fmt.Errorf("--rdzv_backend %q: goaccel's launchers meet by c10d (at --rdzv_endpoint) or static "+
			"(--node_rank and --master_addr); etcd is not supported", *v.rdzvBackend)}
	}
	if fs.Changed("rdzv-endpoint") {
		if fs.Changed("master-addr") || fs.Changed("master-port") {
			return nil, flagError{errors.New("--rdzv_endpoint and --master_addr/--master_port both say where the launchers meet: give one")}
		}
		port := DefaultMasterPort
		if *v.rdzvBackend == "c10d" {
			port = DefaultC10dPort
		}
		if c.MasterAddr, c.MasterPort, err = parseEndpoint(*v.rdzvEndpoint, port); err != nil {
			return nil, flagError{err}
		}
	} else if *v.rdzvBackend == "c10d" && !*standalone {
		return nil, flagError{errors.New("--rdzv_backend c10d: give --rdzv_endpoint HOST[:PORT], where the launchers meet (or --standalone for one node)")}
	}
	if c.MinNodes > 0 && !fs.Changed("node-rank") {
		c.NodeRank = -1 // elastic: a launcher that joins the master, which numbers it
	}
	c.MaxRestarts, c.LogDir = *maxRestarts, *logDir
	switch {
	case !fs.Changed("tee"):
	case *tee == 0:
		c.Tee = TeeNone
	case *tee >= 1 && *tee <= 3:
		c.Tee = *tee
	default:
		return nil, flagError{fmt.Errorf("--tee %d: want 0 (nothing), 1 (stdout), 2 (stderr) or 3 (both)", *tee)}
	}
	if c.Timeout, err = parseSeconds("timeout", *timeout); err != nil {
		return nil, flagError{err}
	}
	if c.JoinTimeout, err = parseSeconds("join_timeout", *joinTimeout); err != nil {
		return nil, flagError{err}
	}
	if fs.Changed("rdzv-conf") {
		lastCall, join, closeWait, err := parseRdzvConf(*v.rdzvConf)
		c.CloseTimeout = closeWait
		switch {
		case err != nil:
			return nil, flagError{err}
		case c.MinNodes == 0 && *standalone:
			// torchrun --standalone takes --rdzv_conf too: one node has nothing to wait for.
		case c.MinNodes == 0:
			return nil, flagError{fmt.Errorf("--rdzv_conf %q: only an elastic job (--nnodes MIN:MAX, or --rdzv_backend c10d) has a rendezvous to configure", *v.rdzvConf)}
		case join > 0 && fs.Changed("join-timeout"):
			return nil, flagError{fmt.Errorf("--rdzv_conf join_timeout and --join_timeout both set the wait for the nodes: give one")}
		}
		c.LastCallTimeout = lastCall
		if join > 0 {
			c.JoinTimeout = join
		}
	}
	if *standalone {
		if c.NNodes != 1 || fs.Changed("node-rank") {
			return nil, flagError{errors.New("--standalone runs one node: drop --nnodes/--node_rank, or drop --standalone")}
		}
		c.MasterAddr, c.MasterPort, c.MinNodes, c.NodeRank, c.BindMaster = "127.0.0.1", 0, 0, 0, false
	}
	if *hosts != "" && *v.hostfile != "" {
		return nil, flagError{errors.New("-H and --hostfile both list the hosts: give one")}
	}
	switch {
	case *hosts != "" || *v.hostfile != "":
		which := "-H"
		if *v.hostfile != "" {
			which = "--hostfile"
		}
		elastic := c.MinNodes > 0 && !fs.Changed("node-rank") // --nnodes MIN:MAX: the listed hosts, elastic
		if fs.Changed("nproc-per-node") || fs.Changed("node-rank") || fs.Changed("nnodes") && !elastic {
			return nil, flagError{fmt.Errorf("%s lists the nodes and their slots: do not combine it with --nproc_per_node, "+
				"--nnodes N or --node_rank (--nnodes MIN:MAX makes the hosts' job elastic)", which)}
		}
		if *hosts != "" {
			inv.hosts, err = parseHosts(*hosts, *np)
		} else {
			inv.hosts, err = parseHostfile(*v.hostfile, *np)
		}
		if err != nil {
			return nil, flagError{err}
		}
		if elastic && (len(inv.hosts) < c.MinNodes || len(inv.hosts) > c.NNodes) {
			return nil, flagError{fmt.Errorf("--nnodes %d:%d with %s of %d host(s): want MIN <= %d <= MAX", c.MinNodes, c.NNodes,
				which, len(inv.hosts), len(inv.hosts))}
		}
		c.NprocPerNode = inv.hosts[0].slots
		if elastic {
			c.NodeRank = 0 // this launcher is the master; the hosts' launchers join it
		} else {
			c.NNodes = len(inv.hosts)
		}
	case fs.Changed("np"):
		if fs.Changed("nproc-per-node") {
			return nil, flagError{errors.New("-np and --nproc_per_node both say how many ranks: give one")}
		}
		if *np < 1 {
			return nil, flagError{fmt.Errorf("-np %d: want a positive number", *np)}
		}
		c.NprocPerNode = *np
	default:
		if c.NprocPerNode, err = ResolveNproc(*nproc, env); err != nil {
			return nil, flagError{err}
		}
	}
	if !*v.oversubscribe {
		flag := fmt.Sprintf("--nproc_per_node %d", c.NprocPerNode)
		switch {
		case len(inv.hosts) > 0:
			flag = fmt.Sprintf("-H's first host (this machine) with %d slots", c.NprocPerNode)
		case fs.Changed("np"):
			flag = fmt.Sprintf("-np %d", c.NprocPerNode)
		}
		if err := CheckCPURanks(flag, c.NprocPerNode, env); err != nil {
			return nil, flagError{err}
		}
	}
	if *v.secretFile != "" {
		if c.Secret, err = readSecretFile(*v.secretFile, os.Stdin); err != nil {
			return nil, flagError{err}
		}
	}
	if len(inv.hosts) > 1 && c.Secret == "" {
		// This launcher starts every other one, and hands them the secret (hostLaunchers).
		if c.Secret, _ = envvar.Lookup(env, envvar.JobSecret.Name); c.Secret == "" {
			c.Secret = newSecret()
		}
	}
	// What the launchers of the other -H hosts need besides their node, nproc and master.
	inv.forward = []string{"--max_restarts", strconv.Itoa(c.MaxRestarts), "--join_timeout", c.JoinTimeout.String()}
	if c.MinNodes > 0 && c.LastCallTimeout > 0 {
		inv.forward = append(inv.forward, "--rdzv_conf", "last_call_timeout="+c.LastCallTimeout.String())
	}
	if c.RdzvID != "" {
		inv.forward = append(inv.forward, "--rdzv_id", c.RdzvID)
	}
	if fs.Changed("tee") {
		inv.forward = append(inv.forward, "--tee", strconv.Itoa(*tee))
	}
	if c.LogDir != "" {
		inv.forward = append(inv.forward, "--log_dir", c.LogDir)
	}
	if inv.noMPICheck {
		inv.forward = append(inv.forward, "--no_mpi_check")
	}
	if c.NoCPUBind {
		inv.forward = append(inv.forward, "--no_cpu_bind")
	}
	if *v.oversubscribe {
		inv.forward = append(inv.forward, "--oversubscribe")
	}
	if inv.selfTest {
		inv.forward = append(inv.forward, "--selftest")
	}
	return inv, nil
}

// parseSeconds reads "30" (seconds) or a Go duration ("30m").
func parseSeconds(name, v string) (time.Duration, error) {
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return d, nil
	}
	return 0, fmt.Errorf("--%s %q: want seconds or a duration such as 90s or 30m", name, v)
}

// horovodShortFlags rewrites horovodrun's single-dash "-np" (which pflag would read as -n -p)
// to "--np", in the launcher's flags only: the program's own arguments are left alone.
func horovodShortFlags(fs *flag.FlagSet, args []string) []string {
	out := append([]string(nil), args...)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			break // the program starts here
		}
		if a == "-np" || strings.HasPrefix(a, "-np=") {
			out[i] = "-" + a
			a = out[i]
		}
		if strings.Contains(a, "=") {
			continue
		}
		name := strings.TrimLeft(a, "-")
		var f *flag.Flag
		if strings.HasPrefix(a, "--") {
			f = fs.Lookup(strings.ReplaceAll(name, "_", "-"))
		} else if len(name) == 1 {
			f = fs.ShorthandLookup(name)
		}
		if f != nil && f.Value.Type() != "bool" {
			i++ // its value
		}
	}
	return out
}

// unknownFlagHint turns pflag's "unknown flag: --nproc_per_nod" into a message with the
// nearest known flag, spelled as the user spells flags.
func unknownFlagHint(fs *flag.FlagSet, err error) error {
	s := err.Error()
	const prefix = "unknown flag: --"
	if !strings.HasPrefix(s, prefix) {
		return err
	}
	given := strings.TrimPrefix(s, prefix)
	best := flagsuggest.Nearest(fs, given)
	if best == "" {
		return fmt.Errorf("unknown flag --%s (see goaccel launch --help)", given)
	}
	if strings.Contains(given, "_") || !strings.Contains(given, "-") {
		best = strings.ReplaceAll(best, "-", "_")
	}
	return fmt.Errorf("unknown flag --%s (did you mean --%s?)", given, best)
}

// Main runs `goaccel launch` with args (the words after "launch") and returns its exit status:
// 0 when every rank exited 0; 1 when the job failed (the message names the rank that failed
// first, how it ended and where its log is); 2 for a bad command line; 130 when interrupted.
// SIGINT, SIGTERM, SIGHUP or SIGQUIT stops every rank (SIGTERM, then SIGKILL after 5 s); a
// second one kills them.
func Main(args []string, stdout, stderr io.Writer) int { return mainWith(args, stdout, stderr) }

// configOption changes the Config a command line gave (tests define them, in _test.go files).
type configOption func(cfg *Config)

// mainWith is Main with opts applied to the job's Config after the command line.
func mainWith(args []string, stdout, stderr io.Writer, opts ...configOption) int {
	inv, err := parseArgs(args, envvar.Environ())
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage+flagHelp())
		return 0
	}
	var fe flagError
	if errors.As(err, &fe) {
		fmt.Fprintf(stderr, "goaccel launch: %v\nusage: goaccel launch [flags] PROGRAM [ARGS...] (see goaccel launch --help)\n", err)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "goaccel launch: %v\n", err)
		return 2
	}
	cfg := inv.cfg
	cfg.Stdout, cfg.Stderr = stdout, stderr
	for _, o := range opts {
		o(&cfg)
	}
	if inv.replaced != "" {
		fmt.Fprintf(stderr, "goaccel launch: --selftest: running the self-test on every rank instead of %s\n", inv.replaced)
	}
	var others *hostLaunchers
	if len(inv.hosts) > 1 {
		others = &hostLaunchers{inv: inv, stdout: stdout, stderr: stderr}
	}
	return supervise(cfg, !inv.noMPICheck, " (or pass --no_mpi_check for a program that does not use MPI)", others)
}

// Supervise runs a job as `goaccel launch` runs it and returns the same exit status as Main:
// unless checkMPI is false or cfg.MPILib is set, it first finds the MPI library (a job of
// several ranks fails without one; a single rank gets it when found, and starts without
// otherwise), and SIGINT, SIGTERM, SIGHUP or SIGQUIT stops every rank (a second one kills
// them). Failures are printed on cfg.Stderr. The spawn package runs its ranks with it.
func Supervise(cfg Config, checkMPI bool) int {
	return supervise(cfg, checkMPI, "", nil)
}

// supervise is Supervise, with what to add to a missing MPI's message and the launchers of
// the other -H hosts to start and wait for.
func supervise(cfg Config, checkMPI bool, mpiHint string, others *hostLaunchers) int {
	stderr := cfg.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	// One rank needs no MPI, but an MPI program run as one rank (mpi4py's) still loads the
	// library: it gets the one found, as several ranks do, and starts without when none is.
	if checkMPI && cfg.MPILib == "" {
		lib, err := findMPI()
		switch {
		case err == nil:
			cfg.MPILib = lib.Path
		case max(cfg.NprocPerNode, 1)*max(cfg.NNodes, 1) > 1:
			fmt.Fprintf(stderr, "goaccel launch: %v%s\n", err, mpiHint)
			return 2
		}
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	kill := make(chan struct{})
	cfg.Kill = kill
	// SIGHUP (a closed terminal or ssh session) and SIGQUIT stop the job as SIGINT and SIGTERM
	// do (SIGQUIT prints no goroutine dump). SIGPIPE is caught, not left to kill the launcher
	// when its output's reader goes away (`| head`): writes there fail, and it goes on.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	defer signal.Stop(pipes)
	go func() {
		for range pipes {
		}
	}()
	go func() {
		n := 0
		for sig := range sigs {
			n++
			if n == 1 {
				fmt.Fprintf(stderr, "goaccel launch: %v: stopping every rank (again to kill them at once)\n", sig)
				cancel(errors.New(unix.SignalName(sig.(syscall.Signal))))
				continue
			}
			if n == 2 {
				close(kill)
			}
		}
	}()

	if others != nil {
		cfg.MasterAddr = others.masterAddr(cfg.MasterAddr)
		cfg.OnListen = others.start
	}
	err := Run(ctx, cfg)
	if others != nil {
		others.wait(cfg.StopGrace + 10*time.Second)
	}
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "goaccel launch: %v\n", err)
	var f *Failure
	if errors.As(err, &f) {
		if f.Kind == "interrupt" {
			return 130
		}
		return 1
	}
	return 2
}

// flagHelp lists the flags for --help, in snake case.
func flagHelp() string {
	fs, _ := newFlags()
	var b strings.Builder
	fs.VisitAll(func(f *flag.Flag) {
		name := "--" + strings.ReplaceAll(f.Name, "-", "_")
		switch {
		case f.Name == "np":
			name = "-np"
		case f.Shorthand != "":
			name = "-" + f.Shorthand + ", " + name
		}
		def := ""
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "-1" {
			def = " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(&b, "  %-18s %s%s\n", name, f.Usage, def)
	})
	return b.String()
}
