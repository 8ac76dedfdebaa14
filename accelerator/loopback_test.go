package accelerator

import (
	"fmt"
	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"os"
	"slices"
	"sync"
	"testing"
	"time"
)

// loopback is a process group whose "processes" are goroutines of one test process: the
// collectives' semantics without MPI, to test the multi-process logic of the step, the
// variable broadcast and the gathers quickly. (The MPI group has its own tests with real
// processes.)
type loopback struct {
	mu     sync.Mutex
	cond   *sync.Cond
	n      int
	seq    []int
	rounds map[int]*round
}

type round struct {
	vals    []any
	arrived int
	taken   int
}

func newLoopback(n int) *loopback {
	l := &loopback{n: n, seq: make([]int, n), rounds: map[int]*round{}}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// member returns the group seen by rank.
func (l *loopback) member(rank int) collective.Group { return &loopMember{l: l, rank: rank} }

// exchange hands v in for this rank's next collective and returns every rank's value.
func (l *loopback) exchange(rank int, v any, timeout time.Duration) ([]any, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.seq[rank]
	l.seq[rank]++
	r := l.rounds[s]
	if r == nil {
		r = &round{vals: make([]any, l.n)}
		l.rounds[s] = r
	}
	r.vals[rank] = v
	r.arrived++
	l.cond.Broadcast()
	deadline := time.Now().Add(timeout)
	for r.arrived < l.n {
		if timeout > 0 && time.Now().After(deadline) {
			var missing []int
			for i, x := range r.vals {
				if x == nil {
					missing = append(missing, i)
				}
			}
			return nil, fmt.Errorf("loopback: ranks %v did not arrive within %s: %w", missing, timeout, ErrTimeout)
		}
		go func() { time.Sleep(10 * time.Millisecond); l.cond.Broadcast() }()
		l.cond.Wait()
	}
	out := r.vals
	if r.taken++; r.taken == l.n {
		delete(l.rounds, s)
	}
	return out, nil
}

type loopMember struct {
	l    *loopback
	rank int
}

func (m *loopMember) Rank() int { return m.rank }
func (m *loopMember) Size() int { return m.l.n }

func (m *loopMember) AllreduceSum(bufs [][]float32) error {
	cp := make([][]float32, len(bufs))
	for i, b := range bufs {
		cp[i] = slices.Clone(b)
	}
	all, err := m.l.exchange(m.rank, cp, 0)
	if err != nil {
		return err
	}
	for i, b := range bufs {
		for k := range b {
			var s float32
			for _, other := range all {
				s += other.([][]float32)[i][k]
			}
			b[k] = s
		}
	}
	return nil
}

func (m *loopMember) AllreduceFloat64(buf []float64, op collective.Op) error {
	all, err := m.l.exchange(m.rank, slices.Clone(buf), 0)
	if err != nil {
		return err
	}
	for k := range buf {
		r := all[0].([]float64)[k]
		for _, other := range all[1:] {
			x := other.([]float64)[k]
			if op == collective.Max {
				r = max(r, x)
			} else {
				r += x
			}
		}
		buf[k] = r
	}
	return nil
}

func (m *loopMember) ReduceScatterSum(send, recv []float32) error {
	all, err := m.exchangeBlocks("ReduceScatterSum", len(recv), send, len(send))
	for k := range recv {
		var s float32
		for _, other := range all {
			s += other.([]float32)[m.rank*len(recv)+k]
		}
		recv[k] = s
	}
	return err
}

func (m *loopMember) AllgatherFloat32(mine, recv []float32) error {
	all, err := m.exchangeBlocks("AllgatherFloat32", len(mine), mine, len(recv))
	for r, other := range all {
		copy(recv[r*len(mine):], other.([]float32))
	}
	return err
}

// AlltoallAllgatherBlocks is one round, as over MPI: every process hands in both its all-to-all
// blocks and its all-gather block.
func (m *loopMember) AlltoallAllgatherBlocks(send, recv, mine, gathered []byte) error {
	n := m.l.n
	if err := collective.CheckAlltoall(len(send), len(recv), n); err != nil {
		return err
	}
	if err := collective.CheckBlocks("AlltoallAllgatherBlocks", len(mine), len(gathered), n); err != nil {
		return err
	}
	all, err := m.l.exchange(m.rank, [2][]byte{slices.Clone(send), slices.Clone(mine)}, 0)
	if err != nil {
		return err
	}
	b := len(send) / n
	for r, other := range all {
		pair := other.([2][]byte)
		copy(recv[r*b:(r+1)*b], pair[0][m.rank*b:])
		copy(gathered[r*len(mine):], pair[1])
	}
	return nil
}

// exchangeBlocks checks the lengths of a block collective (one block of n, and total) and
// hands in mine; on an error it returns no values.
func (m *loopMember) exchangeBlocks(op string, n int, mine []float32, total int) ([]any, error) {
	if err := collective.CheckBlocks(op, n, total, m.l.n); err != nil {
		return nil, err
	}
	return m.l.exchange(m.rank, slices.Clone(mine), 0)
}

// Exit ends the test process: a loopback "process" is a goroutine and cannot end alone.
func (m *loopMember) Exit(code int) { os.Exit(code) }

func (m *loopMember) Broadcast(buf []byte, root int) error {
	all, err := m.l.exchange(m.rank, slices.Clone(buf), 0)
	if err != nil {
		return err
	}
	copy(buf, all[root].([]byte))
	return nil
}

func (m *loopMember) Allgather(mine []byte) ([][]byte, error) {
	all, err := m.l.exchange(m.rank, slices.Clone(mine), 0)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(all))
	for i, x := range all {
		out[i] = x.([]byte)
	}
	return out, nil
}

func (m *loopMember) Barrier(timeout time.Duration) error {
	_, err := m.l.exchange(m.rank, true, timeout)
	return err
}

func (m *loopMember) Close() error { return nil }

// runProcesses runs fn as nproc "processes" of devices XLA CPU devices each (goroutines with
// their own Accelerator) joined by a loopback group, and returns their results by rank.
func runProcesses[T any](t *testing.T, nproc, devices int, fn func(a *Accelerator) (T, error)) []T {
	t.Helper()
	return runProcessesWrapped(t, nproc, devices, nil, fn)
}

// runProcessesWrapped is runProcesses with each rank's group wrapped by wrap (when not nil),
// e.g. to count what the collectives carry.
func runProcessesWrapped[T any](t *testing.T, nproc, devices int, wrap func(rank int, g collective.Group) collective.Group, fn func(a *Accelerator) (T, error)) []T {
	t.Helper()
	return runProcessesConfig(t, nproc, devices, nil, wrap, fn)
}

// runProcessesConfig is runProcessesWrapped with each rank's Config changed by cfg (when not
// nil), e.g. to set Sharding.
func runProcessesConfig[T any](t testing.TB, nproc, devices int, cfg func(*Config), wrap func(rank int, g collective.Group) collective.Group, fn func(a *Accelerator) (T, error)) []T {
	t.Helper()
	plugin := cpuPlugin(t)
	lb := newLoopback(nproc)
	out := make([]T, nproc)
	errs := make([]error, nproc)
	var wg sync.WaitGroup
	for r := range nproc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := lb.member(r)
			if wrap != nil {
				g = wrap(r, g)
			}
			c := Config{Backend: plugin, Devices: devices, Quiet: true, Seed: 7}
			if cfg != nil {
				cfg(&c)
			}
			a, err := newAccelerator(c, processInfo{rank: r, worldSize: nproc, localRank: r, localWorldSize: nproc, source: "test"}, g)
			if err != nil {
				errs[r] = err
				return
			}
			defer a.Close()
			out[r], errs[r] = fn(a)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return out
}
