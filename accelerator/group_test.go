package accelerator

import (
	"errors"
	"fmt"
	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goaccel/goaccel/internal/testutil"
)

// blockContract checks, on one process of g, that the block collectives do what group's
// comments say; every process of g must call it. It returns the first thing that differs.
func blockContract(g collective.Group) error {
	n, rank := g.Size(), g.Rank()
	send := make([]float32, 3*n)
	for i := range send {
		send[i] = float32(i + 100*rank)
	}
	recv := make([]float32, 3)
	if err := g.ReduceScatterSum(send, recv); err != nil {
		return err
	}
	for k, v := range recv {
		if want := float32(n*(3*rank+k) + 100*n*(n-1)/2); v != want {
			return fmt.Errorf("ReduceScatterSum: element %d of rank %d's block is %g, want %g", k, rank, v, want)
		}
	}
	mine := []float32{float32(rank), -float32(rank), 0.5}
	all := make([]float32, 3*n)
	if err := g.AllgatherFloat32(mine, all); err != nil {
		return err
	}
	for r := range n {
		if got := all[3*r : 3*r+3]; !slices.Equal(got, []float32{float32(r), -float32(r), 0.5}) {
			return fmt.Errorf("AllgatherFloat32: block %d is %v", r, got)
		}
	}
	if err := g.ReduceScatterSum(send[1:], recv); err == nil || !strings.HasPrefix(err.Error(), "accelerator: ReduceScatterSum: ") {
		return fmt.Errorf("ReduceScatterSum with a send buffer one short: %v, want an error naming it", err)
	}
	if err := g.AllgatherFloat32(mine, all[1:]); err == nil || !strings.HasPrefix(err.Error(), "accelerator: AllgatherFloat32: ") {
		return fmt.Errorf("AllgatherFloat32 into a buffer one short: %v, want an error naming it", err)
	}
	if err := g.ReduceScatterSum(nil, nil); err != nil {
		return fmt.Errorf("ReduceScatterSum of nothing: %w", err)
	}
	if err := g.AllgatherFloat32(nil, nil); err != nil {
		return fmt.Errorf("AllgatherFloat32 of nothing: %w", err)
	}
	return byteBlockContract(g)
}

// TestBlockCollectives: reduce-scatter and all-gather of float32 blocks on one process (the
// identity) and on 3 loopback processes. TestBlockCollectivesOverMPI checks MPI's.
func TestBlockCollectives(t *testing.T) {
	t.Parallel()
	if err := blockContract(collective.Solo{}); err != nil {
		t.Errorf("one process: %v", err)
	}
	lb := newLoopback(3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for r := range 3 {
		wg.Go(func() { errs[r] = blockContract(lb.member(r)) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("loopback rank %d of 3: %v", r, err)
		}
	}
}

// TestBlockCollectivesOverMPI is TestBlockCollectives on 2 and 3 real processes joined by MPI.
func TestBlockCollectivesOverMPI(t *testing.T) {
	t.Parallel()
	testutil.NeedMPI(t)
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d processes", n), func(t *testing.T) {
			if err, out := launchWorkers(t, "blocks", n, n, "GOACCEL_TIMEOUT=1m"); err != nil {
				t.Fatalf("launch: %v\n%s", err, out)
			}
		})
	}
}

// blocksWorker is a rank of TestBlockCollectivesOverMPI.
func blocksWorker(a *Accelerator) error {
	if _, ok := a.grp.(*collective.MPI); !ok {
		return fmt.Errorf("rank %d is not in an MPI group but in a %T", a.ProcessIndex(), a.grp)
	}
	return blockContract(a.grp)
}

// TestWaitForEveryoneTimeoutIsErrTimeout: a process that never arrives at a barrier makes the
// others' error wrap ErrTimeout (what callers test with errors.Is) and name the barrier and the
// process. TestBarrierTimeoutNamesTheMissingRank checks the same over MPI.
func TestWaitForEveryoneTimeoutIsErrTimeout(t *testing.T) {
	lb := newLoopback(2) // rank 1 never comes
	a, err := newAccelerator(Config{Backend: "go", Quiet: true, Timeout: 100 * time.Millisecond},
		processInfo{rank: 0, worldSize: 2, localWorldSize: 2, source: "test"}, lb.member(0))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	err = a.WaitForEveryone()
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("WaitForEveryone: %v, want an error wrapping ErrTimeout", err)
	}
	if !strings.HasPrefix(err.Error(), "accelerator: WaitForEveryone: ") || !strings.Contains(err.Error(), "[1]") {
		t.Errorf("error %q does not name the barrier and rank 1", err)
	}
}

// barrierWorker is a rank of TestBarrierTimeoutNamesTheMissingRank: rank 1 stays away for
// $GOACCEL_TEST_BARRIER_DELAY; rank 0's error must wrap ErrTimeout.
func barrierWorker(a *Accelerator) error {
	if a.ProcessIndex() == 1 {
		d, _ := time.ParseDuration(os.Getenv(workerDelay))
		time.Sleep(d)
	}
	err := a.WaitForEveryone()
	if err != nil && !errors.Is(err, ErrTimeout) {
		return fmt.Errorf("%w (does not wrap accelerator.ErrTimeout)", err)
	}
	if err != nil {
		fmt.Printf("rank %d: the error wraps accelerator.ErrTimeout\n", a.ProcessIndex())
	}
	return err
}
