package launch

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// shmDir is where MPICH keeps its shared-memory segments; a rank killed before it unlinks
// them leaves files there (mpich_shm_*) that nothing else removes.
const shmDir = "/dev/shm"

// shmTracker finds the /dev/shm files created by one attempt's ranks, so that they can be
// removed when the ranks are gone. Two sources, because a killed rank tells nothing:
//   - every 100 ms, the files under /dev/shm that the live ranks map (/proc/PID/maps);
//   - at the end, the mpich_shm_* files that appeared since the attempt started and that no
//     live process maps or holds open (another job's live segment is always mapped by it).
type shmTracker struct {
	start  time.Time
	before map[string]bool
	mu     sync.Mutex
	seen   map[string]bool
	pids   func() []int
	stop   chan struct{}
	done   chan struct{}
}

func newShmTracker(pids func() []int) *shmTracker {
	t := &shmTracker{start: time.Now(), before: map[string]bool{}, seen: map[string]bool{}, pids: pids,
		stop: make(chan struct{}), done: make(chan struct{})}
	names, _ := filepath.Glob(filepath.Join(shmDir, "*"))
	for _, n := range names {
		t.before[n] = true
	}
	go t.watch()
	return t
}

func (t *shmTracker) watch() {
	defer close(t.done)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, pid := range t.pids() {
			for path := range mappedShm(pid) {
				t.mu.Lock()
				t.seen[path] = true
				t.mu.Unlock()
			}
		}
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
	}
}

// stopWatching ends the watch; cleanup calls it.
func (t *shmTracker) stopWatching() {
	select {
	case <-t.stop:
	default:
		close(t.stop)
	}
	<-t.done
}

// cleanup stops watching and removes the attempt's leftover files; it returns their names.
func (t *shmTracker) cleanup() []string {
	t.stopWatching()
	inUse := shmInUse()
	candidates := map[string]bool{}
	for path := range t.seen {
		candidates[path] = true
	}
	names, _ := filepath.Glob(filepath.Join(shmDir, "mpich_shm_*"))
	for _, n := range names {
		if st, err := os.Stat(n); err == nil && !t.before[n] && !st.ModTime().Before(t.start.Add(-time.Second)) {
			candidates[n] = true
		}
	}
	var removed []string
	for path := range candidates {
		if inUse[path] {
			continue
		}
		if err := os.Remove(path); err == nil {
			removed = append(removed, path)
		}
	}
	return removed
}

// RemoveStaleShm removes the mpich_shm_* files of /dev/shm made since that no live process maps
// or holds open: what MPICH's processes killed outside goaccel launch (by Slurm, by a signal)
// leave, which goaccel launch removes after its own ranks. It returns their names.
func RemoveStaleShm(since time.Time) []string {
	inUse := shmInUse()
	names, _ := filepath.Glob(filepath.Join(shmDir, "mpich_shm_*"))
	var removed []string
	for _, n := range names {
		if st, err := os.Stat(n); err == nil && !inUse[n] && !st.ModTime().Before(since) && os.Remove(n) == nil {
			removed = append(removed, n)
		}
	}
	return removed
}

// shmInUse lists the files under /dev/shm that a live process maps or holds open.
func shmInUse() map[string]bool {
	inUse := map[string]bool{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil {
			continue
		}
		for path := range mappedShm(pid) {
			inUse[path] = true
		}
		fds, _ := filepath.Glob(filepath.Join(p, "fd", "*"))
		for _, fd := range fds {
			if target, err := os.Readlink(fd); err == nil && strings.HasPrefix(target, shmDir+"/") {
				inUse[target] = true
			}
		}
	}
	return inUse
}

// mappedShm lists the files under /dev/shm that process pid maps (not yet unlinked).
func mappedShm(pid int) map[string]bool {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, shmDir+"/")
		if i < 0 || strings.HasSuffix(line, "(deleted)") {
			continue
		}
		out[line[i:]] = true
	}
	return out
}
