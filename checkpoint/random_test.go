package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/ml/model"
)

// The Accelerator gives every rank its own random state back.
var _ Ranks = (*accelerator.Accelerator)(nil)

// fakeJob is n processes of a run inside one test: its collectives meet in memory.
type fakeJob struct {
	n       int
	mu      sync.Mutex
	cond    *sync.Cond
	gen     int
	arrived int
	slots   [][]byte
	result  [][]byte
}

func newFakeJob(n int) *fakeJob {
	j := &fakeJob{n: n}
	j.cond = sync.NewCond(&j.mu)
	return j
}

// exchange returns every rank's b once all n ranks have called it.
func (j *fakeJob) exchange(rank int, b []byte) [][]byte {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.slots == nil {
		j.slots = make([][]byte, j.n)
	}
	j.slots[rank] = b
	j.arrived++
	if j.arrived == j.n {
		j.result, j.slots, j.arrived = j.slots, nil, 0
		j.gen++
		j.cond.Broadcast()
		return j.result
	}
	for gen := j.gen; gen == j.gen; {
		j.cond.Wait()
	}
	return j.result
}

// fakeRank is one process of a fakeJob; it implements Processes and Ranks.
type fakeRank struct {
	job  *fakeJob
	rank int
}

func (r fakeRank) IsMainProcess() bool                     { return r.rank == 0 }
func (r fakeRank) WaitForEveryone() error                  { r.job.exchange(r.rank, nil); return nil }
func (r fakeRank) ProcessIndex() int                       { return r.rank }
func (r fakeRank) AllGather(mine []byte) ([][]byte, error) { return r.job.exchange(r.rank, mine), nil }

var rngShape = shapes.Make(dtypes.Uint64, 3)

// rngOf reads a Store's random state; nil when it has none.
func rngOf(t *testing.T, store *model.Store) []uint64 {
	t.Helper()
	v := store.GetVariable(rngPath)
	if v == nil {
		return nil
	}
	val, err := v.Value()
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	val.MustConstFlatData(func(a any) { out = append(out, a.([]uint64)...) })
	return out
}

func rngFor(seed int64) []uint64 {
	var out []uint64
	valueFor(rngShape, seed).MustConstFlatData(func(a any) { out = append(out, a.([]uint64)...) })
	return out
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// saveOnRanks saves, as n processes at once, Stores whose random state is rngFor(10 + rank)
// (their other variables are rank 0's), with the processes given by procs.
func saveOnRanks(t *testing.T, dir string, n int, procs func(rank int) Processes) string {
	t.Helper()
	paths, errs := make([]string, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			store := newTestStore(t, 10)
			if err := store.GetVariable(rngPath).SetValue(valueFor(rngShape, int64(10+r))); err != nil {
				errs[r] = err
				return
			}
			m, err := NewManager(dir, Options{Processes: procs(r), Logf: func(string, ...any) {}})
			if err != nil {
				errs[r] = err
				return
			}
			paths[r], errs[r] = m.Save(&State{Store: store, Progress: Progress{Step: 5, Seed: 10}})
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: Save: %v", r, err)
		}
	}
	return paths[0]
}

// loadOnRank loads dir's latest checkpoint as rank r of a run (the collectives are not used
// by Load) into store.
func loadOnRank(t *testing.T, dir string, r int, store *model.Store) {
	t.Helper()
	m, err := NewManager(dir, Options{Processes: fakeRank{job: newFakeJob(1), rank: r}, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.LoadLatest(&State{Store: store}); err != nil {
		t.Fatalf("rank %d: LoadLatest: %v", r, err)
	}
}

// TestEachRankGetsItsOwnRandomState: with Ranks, Save keeps every process's random state and
// Load gives rank r its own; a rank the checkpoint has no state for keeps its Store's.
func TestEachRankGetsItsOwnRandomState(t *testing.T) {
	dir := t.TempDir()
	job := newFakeJob(2)
	path := saveOnRanks(t, dir, 2, func(r int) Processes { return fakeRank{job: job, rank: r} })
	if _, err := os.Stat(filepath.Join(path, RandomStateFile)); err != nil {
		t.Fatalf("a 2-process save wrote no %s: %v", RandomStateFile, err)
	}
	if err := VerifyManifest(path); err != nil {
		t.Fatalf("VerifyManifest: %v", err)
	}
	// Three ranks load it: ranks 0 and 1 get their own state, rank 2 (not in the saved run)
	// keeps the one its Store has.
	for r := range 3 {
		store := newTestStore(t, int64(90+r))
		loadOnRank(t, dir, r, store)
		want := rngFor(int64(10 + r))
		if r == 2 {
			want = rngFor(92)
		}
		if got := rngOf(t, store); !equalU64(got, want) {
			t.Errorf("rank %d loaded random state %v, want %v", r, got, want)
		}
		if err := store.GetVariable(rngPath).SetValue(valueFor(rngShape, 10)); err != nil {
			t.Fatal(err)
		}
		checkStore(t, store, 10) // Every other variable is the main process's.
	}
	// A Store without a random state (not prepared yet) gets its rank's; one whose rank the
	// checkpoint does not have is left without, and the load does not fail.
	for _, c := range []struct {
		rank int
		want []uint64
	}{{1, rngFor(11)}, {2, nil}} {
		t.Run(fmt.Sprintf("rank %d", c.rank), func(t *testing.T) {
			store := newTestStore(t, 10)
			if err := store.DeleteVariable(rngPath); err != nil {
				t.Fatal(err)
			}
			loadOnRank(t, dir, c.rank, store)
			if got := rngOf(t, store); !equalU64(got, c.want) {
				t.Errorf("rank %d, Store without a random state: loaded %v, want %v", c.rank, got, c.want)
			}
		})
	}
}

// TestRandomStateWithoutRanks: a checkpoint saved by one process, or without Ranks (as every
// checkpoint before RandomStateFile), holds the main process's random state only: rank 0
// loads it and every other rank keeps its own.
func TestRandomStateWithoutRanks(t *testing.T) {
	for name, procs := range map[string]func(r int) Processes{
		"one process": nil,
		"Processes without Ranks": func() func(int) Processes {
			job := newFakeJob(2)
			return func(r int) Processes { return &plainProcesses{fakeRank{job: job, rank: r}} }
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			n := 2
			if procs == nil {
				n = 1
				procs = func(int) Processes { return nil }
			}
			path := saveOnRanks(t, dir, n, procs)
			if _, err := os.Stat(filepath.Join(path, RandomStateFile)); !os.IsNotExist(err) {
				t.Errorf("%s: want no %s, got %v", name, RandomStateFile, err)
			}
			for r, want := range [][]uint64{rngFor(10), rngFor(91)} {
				store := newTestStore(t, int64(90+r))
				loadOnRank(t, dir, r, store)
				if got := rngOf(t, store); !equalU64(got, want) {
					t.Errorf("rank %d loaded random state %v, want %v", r, got, want)
				}
			}
		})
	}
}

// plainProcesses hides a fakeRank's Ranks methods.
type plainProcesses struct{ r fakeRank }

func (p *plainProcesses) IsMainProcess() bool    { return p.r.IsMainProcess() }
func (p *plainProcesses) WaitForEveryone() error { return p.r.WaitForEveryone() }
