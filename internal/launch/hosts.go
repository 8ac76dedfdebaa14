package launch

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/shell"
)

// hostSlots is one entry of horovodrun's -H list: a host and how many ranks it runs.
type hostSlots struct {
	host  string
	slots int
}

// parseHosts reads "host1:2,host2:2" (a host without ":N" has one slot) and fills the slots in
// order with np ranks (np 0: every slot). Hosts left without a rank are dropped.
func parseHosts(spec string, np int) ([]hostSlots, error) {
	var all []hostSlots
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		h, ok := hostColonSlots(item)
		if !ok {
			return nil, fmt.Errorf("-H %q: %q is not host:slots with slots a positive number", spec, item)
		}
		all = append(all, h)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("-H %q lists no host", spec)
	}
	return fillSlots(all, np, "-H "+spec)
}

// hostColonSlots reads "host:N" (MPICH's and horovodrun's way) or a bare "host" (one slot).
func hostColonSlots(item string) (hostSlots, bool) {
	h := hostSlots{host: item, slots: 1}
	if i := strings.LastIndex(item, ":"); i >= 0 {
		n, err := strconv.Atoi(item[i+1:])
		if err != nil || n < 1 || i == 0 {
			return h, false
		}
		h.host, h.slots = item[:i], n
	}
	return h, true
}

// fillSlots fills the slots of all, in order, with np ranks (np 0: every slot), drops the hosts
// left without a rank, and checks that the first host is this machine. from names the list in
// messages ("-H a:2,b:2", "--hostfile hosts").
func fillSlots(all []hostSlots, np int, from string) ([]hostSlots, error) {
	total := 0
	for _, h := range all {
		total += h.slots
	}
	if np == 0 {
		np = total
	}
	if np > total {
		return nil, fmt.Errorf("-np %d is more than the %d slots of %s", np, total, from)
	}
	var out []hostSlots
	for _, h := range all {
		if np == 0 {
			break
		}
		h.slots = min(h.slots, np)
		np -= h.slots
		out = append(out, h)
	}
	if !isLocalHost(out[0].host) {
		if strings.HasPrefix(from, "-H ") {
			from = "-H"
		}
		return nil, fmt.Errorf("%s: the first host (%s) must be this machine, which runs the master: "+
			"run goaccel launch on %s, or list this machine first", from, out[0].host, out[0].host)
	}
	return out, nil
}

// parseHostfile reads a host file, one host a line, in Open MPI's and Horovod's form
// ("host slots=N"), MPICH's ("host:N") or bare ("host": one slot); "#" starts a comment and
// blank lines are skipped. Its hosts then fill their slots with np ranks as -H's do.
func parseHostfile(path string, np int) ([]hostSlots, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--hostfile: %w", err)
	}
	var all []hostSlots
	for i, line := range strings.Split(string(raw), "\n") {
		if c := strings.IndexByte(line, '#'); c >= 0 {
			line = line[:c]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		bad := func(why string) error {
			return fmt.Errorf("--hostfile %s:%d: %q: %s (want \"host slots=N\", \"host:N\" or \"host\")",
				path, i+1, strings.TrimSpace(line), why)
		}
		h, ok := hostColonSlots(fields[0])
		if !ok {
			return nil, bad(fmt.Sprintf("%q is not host:N with N a positive number", fields[0]))
		}
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			if k != "slots" {
				return nil, bad(fmt.Sprintf("unknown %q: only slots=N is read", f))
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return nil, bad(fmt.Sprintf("slots=%q is not a positive number", v))
			}
			if strings.Contains(fields[0], ":") {
				return nil, bad("give the slots once, as host:N or as slots=N")
			}
			h.slots = n
		}
		all = append(all, h)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("--hostfile %s lists no host", path)
	}
	return fillSlots(all, np, "--hostfile "+path)
}

// isLocalHost says whether host names this machine: localhost, a loopback address, the host
// name, or one of its interfaces' addresses.
func isLocalHost(host string) bool {
	if isLoopback(host) || host == hostname() {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// hostLaunchers starts and waits for the launchers of the -H hosts after the first: on this
// machine for names of this machine (the same code path as a real second machine), through
// ssh with the same binary path otherwise.
type hostLaunchers struct {
	inv            *invocation
	stdout, stderr io.Writer
	addr           string
	procs          []*exec.Cmd
	wg             sync.WaitGroup
}

// masterAddr is the address the other hosts reach the master at: given, else 127.0.0.1 when
// every host is this machine, else this machine's host name.
func (h *hostLaunchers) masterAddr(given string) string {
	h.addr = given
	allLocal := true
	for _, hs := range h.inv.hosts {
		allLocal = allLocal && isLocalHost(hs.host)
	}
	if !allLocal && isLoopback(given) {
		h.addr = hostname()
	}
	return h.addr
}

// start runs `SELF launch --nnodes N --node_rank i --master_addr A --master_port P ... PROGRAM ARGS`
// for every host after the first (elastic, --nnodes MIN:MAX: without --node_rank).
func (h *hostLaunchers) start(port int) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find this program to start the other hosts' launchers: %w", err)
	}
	cfg := h.inv.cfg
	for i, hs := range h.inv.hosts {
		if i == 0 {
			continue
		}
		args := []string{"launch", "--nnodes", strconv.Itoa(len(h.inv.hosts)), "--node_rank", strconv.Itoa(i),
			"--master_addr", h.addr, "--master_port", strconv.Itoa(port), "--nproc_per_node", strconv.Itoa(hs.slots)}
		if cfg.MinNodes > 0 { // elastic: the master numbers the hosts' launchers, which come and go
			args = []string{"launch", "--nnodes", cfg.nnodesSpec(), "--master_addr", h.addr, "--master_port", strconv.Itoa(port),
				"--nproc_per_node", strconv.Itoa(hs.slots)}
		}
		args = append(args, h.inv.forward...)
		if !h.inv.selfTest { // that launcher starts its own executable's self-test ranks
			args = append(append(args, "--", cfg.Program), cfg.Args...)
		}
		// The job secret never goes on a command line (ps shows them): by the environment here,
		// by ssh's standard input there.
		var cmd *exec.Cmd
		if isLocalHost(hs.host) {
			cmd = exec.Command(self, args...)
			cmd.Env = setEnv(cfg.Env, envvar.JobSecret.Name, cfg.Secret)
		} else {
			wd, _ := os.Getwd()
			args = append([]string{args[0], "--job_secret_file", "-"}, args[1:]...)
			cmd = exec.Command("ssh", "-o", "BatchMode=yes", hs.host, remoteCommand(wd, self, args, cfg.Env))
			cmd.Stdin = strings.NewReader(cfg.Secret + "\n")
		}
		cmd.Stdout, cmd.Stderr = h.stdout, h.stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // Ctrl-C reaches it through the master
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("cannot start the launcher of host %s: %w", hs.host, err)
		}
		h.procs = append(h.procs, cmd)
		h.wg.Add(1)
		go func() { defer h.wg.Done(); _ = cmd.Wait() }()
	}
	return nil
}

// remoteVars are the variables of goaccel's discovery that the launcher of another machine gets
// from this one's environment, when set: ssh starts it in a login environment without them,
// and it would then miss the folder that goaccel setup filled, or the MPI library and plugin
// chosen by hand.
var remoteVars = []string{envvar.Home.Name, envvar.MPILib.Name, envvar.PluginPath.Name}

// remoteCommand is the shell command that ssh runs on another machine: in the folder wd, self
// with args, and remoteVars as env (the base environment) has them.
func remoteCommand(wd, self string, args, env []string) string {
	remote := "cd " + shell.Quote(wd) + " && exec env"
	for _, k := range remoteVars {
		if v, ok := lookup(env, k); ok && v != "" {
			remote += " " + shell.Quote(k+"="+v)
		}
	}
	remote += " " + shell.Quote(self)
	for _, a := range args {
		remote += " " + shell.Quote(a)
	}
	return remote
}

// wait waits for the other launchers (they end with the job), killing them after d.
func (h *hostLaunchers) wait(d time.Duration) {
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		for _, c := range h.procs {
			signalGroup(c.Process.Pid, syscall.SIGKILL)
		}
		<-done
	}
}
