package launch

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
)

// A launcher killed outright (SIGKILL, the OOM killer) cannot stop its ranks or remove their
// /dev/shm files. Two things do it instead:
//   - every rank is started with Linux's parent-death signal (SIGKILL): the kernel kills it
//     when the launcher's thread that started it ends, and that thread is one locked to a
//     goroutine that never ends (onForkThread), so it ends only with the launcher;
//   - a guardian process, the launcher's own executable started again with guardianArg,
//     learns every rank's pid through a pipe; when the pipe closes without "done" (the
//     launcher died), it SIGKILLs each rank's process group (what the ranks started too) and
//     removes the /dev/shm files they left, as the launcher does after an attempt.
const guardianArg = "__goaccel_launch_guardian__" // with $GOACCEL_LAUNCH_GUARDIAN=1

// init turns this process into a guardian when it was started as one (the binary is any
// program that imports this package: goaccel, or a test binary).
func init() {
	if len(os.Args) == 2 && os.Args[1] == guardianArg && envvar.LaunchGuardian.Value() == "1" {
		os.Exit(runGuardian(os.Stdin, os.Stdout, os.Stderr))
	}
}

// guardian is the launcher's end of its guardian process; a nil *guardian does nothing.
type guardian struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	w   io.WriteCloser
}

// guardianReady is the line the guardian writes on its stdout once it has listed /dev/shm: the
// launcher starts no rank before it, or a rank's file made before the listing would count as
// another job's and stay behind.
const guardianReady = "ready"

// startGuardian starts the guardian, in its own process group so that the terminal's signals
// (Ctrl-C, a hang-up) reach the launcher only, and waits until it is ready. With none (set
// by tests through Config.noGuardian) it starts nothing: the parent-death signal alone stops
// the ranks.
func startGuardian(none bool) (*guardian, error) {
	if none {
		return nil, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, guardianArg)
	cmd.Env = append(envvar.Environ(), envvar.LaunchGuardian.KV("1"))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(r).ReadString('\n')
		if err == nil && strings.TrimSpace(line) != guardianReady {
			err = fmt.Errorf("it wrote %q", line)
		}
		ready <- err
	}()
	select {
	case err = <-ready:
	case <-time.After(30 * time.Second):
		err = fmt.Errorf("it was not ready after 30 s")
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("the guardian process (%s %s): %w", exe, guardianArg, err)
	}
	return &guardian{cmd: cmd, w: w}, nil
}

func (g *guardian) send(line string) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	_, _ = io.WriteString(g.w, line+"\n")
}

// add and remove tell the guardian that a rank started or ended.
func (g *guardian) add(pid int)    { g.send("+" + strconv.Itoa(pid)) }
func (g *guardian) remove(pid int) { g.send("-" + strconv.Itoa(pid)) }

// finish tells the guardian that the launcher ends normally, and waits for it.
func (g *guardian) finish() {
	if g == nil {
		return
	}
	g.send("done")
	g.mu.Lock()
	_ = g.w.Close()
	g.mu.Unlock()
	done := make(chan struct{})
	go func() { _ = g.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		_ = g.cmd.Process.Kill()
	}
}

// runGuardian is the guardian process: it reads "+PID", "-PID" and "done" lines until its
// input ends, and then, without "done", kills the ranks left and removes their /dev/shm files.
func runGuardian(in io.Reader, out, errOut io.Writer) int {
	// Only the end of its input stops it: the terminal's and the shell's signals are the launcher's.
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGPIPE)
	launcher := os.Getppid()
	var mu sync.Mutex
	live := map[int]bool{}
	pids := func() []int {
		mu.Lock()
		defer mu.Unlock()
		var out []int
		for pid := range live {
			out = append(out, pid)
		}
		sort.Ints(out)
		return out
	}
	shm := newShmTracker(pids)
	fmt.Fprintln(out, guardianReady)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := sc.Text()
		if line == "done" {
			shm.stopWatching()
			return 0
		}
		pid, err := strconv.Atoi(strings.TrimLeft(line, "+-"))
		if err != nil || pid <= 0 {
			continue
		}
		mu.Lock()
		live[pid] = line[0] == '+'
		if !live[pid] {
			delete(live, pid)
		}
		mu.Unlock()
	}
	ranks := pids()
	for _, pid := range ranks {
		signalGroup(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && anyRunning(ranks) {
		time.Sleep(20 * time.Millisecond)
	}
	removed := shm.cleanup()
	if len(ranks) > 0 || len(removed) > 0 {
		what := fmt.Sprintf("killed its %d rank(s) still running (pids %s)", len(ranks), strings.Trim(fmt.Sprint(ranks), "[]"))
		if len(removed) > 0 {
			what += fmt.Sprintf(" and removed %d shared-memory file(s) they left: %s", len(removed), strings.Join(removed, " "))
		}
		fmt.Fprintf(errOut, "goaccel launch: the launcher (pid %d) died without stopping its job: its guardian %s\n", launcher, what)
	}
	return 0
}

// anyRunning says whether one of pids is a live process.
func anyRunning(pids []int) bool {
	for _, pid := range pids {
		if running(pid) {
			return true
		}
	}
	return false
}

// running says whether pid is a live process (a zombie, which no one reaped yet, is not).
func running(pid int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// forkRequests carries functions to the fork thread; see onForkThread.
var (
	forkOnce     sync.Once
	forkRequests = make(chan func())
)

// onForkThread runs f on one OS thread that lives as long as the process: the parent-death
// signal of a child fires when the thread that forked it ends, not the process, and Go ends a
// thread when a goroutine locked to it returns.
func onForkThread(f func()) {
	forkOnce.Do(func() {
		go func() {
			runtime.LockOSThread() // never unlocked: this goroutine and its thread never end
			for f := range forkRequests {
				f()
			}
		}()
	})
	done := make(chan struct{})
	forkRequests <- func() { defer close(done); f() }
	<-done
}
