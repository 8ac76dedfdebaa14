package accelerator

import (
	"iter"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// stragglerSlow names what the "straggler" worker slows on rank 1: "data" (a sleep in its
// loader before every batch) or "compute" (a sleep inside every Run, a stage wrapped around
// the step's own).
const stragglerSlow = "GOACCEL_TEST_STRAGGLER_SLOW"

// stragglerDelay is how much rank 1 is slowed per batch: large against the toy step (a few
// milliseconds), so that a loaded machine's jitter does not blur which part is slow.
const stragglerDelay = 200 * time.Millisecond

// stragglerUpdates is how many updates the worker runs (two windows of 10).
const stragglerUpdates = 20

// slowSource is a source whose every batch comes delay late: a slow loader.
type slowSource struct {
	*fixedSource
	delay time.Duration
}

func (s slowSource) Epoch() iter.Seq2[*data.GlobalBatch, error] {
	return func(yield func(*data.GlobalBatch, error) bool) {
		for gb, err := range s.fixedSource.Epoch() {
			time.Sleep(s.delay)
			if !yield(gb, err) {
				return
			}
		}
	}
}

// stragglerWorker trains the toy model for stragglerUpdates updates with rank 1 slowed as
// $GOACCEL_TEST_STRAGGLER_SLOW says, and writes Job.RankBusy.
func stragglerWorker(a *Accelerator) error {
	x, y := toyData(64)
	var src data.Source = &fixedSource{x: x, y: y, batch: 4}
	slowCompute := false
	if a.ProcessIndex() == 1 {
		switch os.Getenv(stragglerSlow) {
		case "data":
			src = slowSource{src.(*fixedSource), stragglerDelay}
		case "compute":
			slowCompute = true
		}
	}
	job, err := a.Prepare(model.NewStore(), optimizer.Adam().LearningRate(0.01).Done(), src)
	if err != nil {
		return err
	}
	train := toyTrainStep(a, job)
	if slowCompute { // a sleep inside every Run, counted as compute
		next := train.stage
		train.stage = func(gb *data.GlobalBatch, args []any, accumulate bool) (Loss, error) {
			time.Sleep(stragglerDelay)
			return next(gb, args, accumulate)
		}
	}
	for done := 0; done < stragglerUpdates; {
		for gb, err := range job.Batches() {
			if err != nil {
				return err
			}
			if _, err := train.Run(gb); err != nil {
				return err
			}
			if done++; done == stragglerUpdates {
				break
			}
		}
	}
	return writeRankResult(a, job.RankBusy())
}

// TestStragglerNamed: 2 processes, rank 1 slowed by 200 ms per batch, first in its loader, then
// around its step's execution; the ranks compare every 10 updates: the main process names
// rank 1 and its host for updates 11-20, with the time in data or in compute, and Job.RankBusy on every rank has
// rank 1 slow, its data wait (or compute) at least the delay and more than the other part, rank 0 not slow.
func TestStragglerNamed(t *testing.T) {
	testutil.NeedMPI(t)
	host, _ := os.Hostname()
	for _, slow := range []string{"data", "compute"} {
		t.Run(slow, func(t *testing.T) {
			dir := t.TempDir()
			err, out := launchWorkers(t, "straggler", 2, 2, workerOut+"="+dir, stragglerSlow+"="+slow,
				"GOACCEL_STRAGGLER_EVERY=10", "GOACCEL_TIMEOUT=3m")
			if err != nil {
				t.Fatalf("launch: %v\n%s", err, out)
			}
			var lines []string
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, " is slow: ") {
					lines = append(lines, l)
				}
			}
			// The first window holds each rank's compilation of the step (seconds here), which
			// may hide the delay; the second must name rank 1.
			if len(lines) == 0 || !strings.Contains(lines[len(lines)-1], "goaccel: rank 1 (host "+host+") is slow: ") ||
				!strings.Contains(lines[len(lines)-1], "over updates 11-20") {
				t.Errorf("want a line naming rank 1 and its host for updates 11-20:\n%s", out)
			}
			for r := range 2 {
				var ranks []RankBusy
				readRankResult(t, dir, r, out, &ranks)
				if len(ranks) != 2 || !ranks[1].Slow || ranks[0].Slow || ranks[1].Through != 20 || ranks[1].Updates != 10 {
					t.Fatalf("rank %d's Job.RankBusy: %+v, want rank 1 slow over updates 11-20", r, ranks)
				}
				slowPart, other := ranks[1].Data, ranks[1].Compute
				if slow == "compute" {
					slowPart, other = ranks[1].Compute, ranks[1].Data
				}
				if slowPart < stragglerDelay || other >= slowPart {
					t.Errorf("rank %d's figures for rank 1: %s %s, the other %s; want the %s delay in %s, and more than the other",
						r, slow, slowPart, other, stragglerDelay, slow)
				}
			}
			t.Logf("%s:\n%s", slow, strings.Join(lines, "\n"))
		})
	}
}

// TestStragglerArithmetic: the median of the others, the 1.2x rule and the 1 ms floor.
func TestStragglerArithmetic(t *testing.T) {
	busy := func(ms ...int) []RankBusy {
		var r []RankBusy
		for i, m := range ms {
			r = append(r, RankBusy{Rank: i, Compute: time.Duration(m) * time.Millisecond})
		}
		return r
	}
	for _, tc := range []struct {
		ms   []int
		slow int
	}{
		{[]int{50, 50}, -1}, {[]int{50, 59}, -1}, {[]int{50, 61}, 1}, {[]int{100, 50, 50, 50}, 0},
		{[]int{50, 70, 50, 90}, 3}, {[]int{0, 0}, -1}, {[]int{10}, -1}, {[]int{0, 2}, 1},
	} {
		if got := straggler(busy(tc.ms...)); got != tc.slow {
			t.Errorf("straggler(%v ms) = %d, want %d", tc.ms, got, tc.slow)
		}
	}
	noise := []RankBusy{{Compute: 900 * time.Microsecond}, {Rank: 1, Compute: 1300 * time.Microsecond}}
	if got := straggler(noise); got != -1 {
		t.Errorf("0.9 ms and 1.3 ms per update: rank %d named slow, want none (under the 1 ms floor)", got)
	}
}
