package accelerator

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Who is slow. In synchronous data parallelism every rank's wall time per step is the same
// (the fast ranks wait in the gradient all-reduce for the slow one), so the ranks compare
// their busy time instead: per optimizer update, the time in TrainStep.Run less the time
// blocked in the collectives between processes (StepStats.Sync, recorded where the timeline
// puts its collective spans) is its compute, and the time Job.Batches waited for the next
// global batch is its data wait; busy is their sum. Every rank records them always (two clock
// readings per batch and per step). Every StragglerEvery updates the ranks exchange their
// figures in one small all-gather; when one rank's busy time is more than StragglerFactor x
// the median of the other ranks', the main process prints one line naming it, its host and
// where its time goes. Job.RankBusy returns the latest figures; trainer.Fit logs them.

// StragglerFactor is how much busier than the median of the others a rank must be to be
// reported, and StragglerMinGap by how much at least: below a millisecond per update the
// difference is the machine's noise, not a slow rank.
const (
	StragglerFactor = 1.2
	StragglerMinGap = time.Millisecond
)

// RankBusy is one rank's busy time over the latest window of updates, per update.
type RankBusy struct {
	// Rank is the process's rank; Host its machine's name.
	Rank int    `json:"rank"`
	Host string `json:"host"`
	// Updates is the number of optimizer updates the figures are the mean of; Through the
	// updates done when they were gathered.
	Updates int `json:"updates"`
	Through int `json:"through"`
	// Compute is the time per update in TrainStep.Run not blocked in collectives between
	// processes; Data the time per update Job.Batches waited for data.
	Compute time.Duration `json:"compute_ns"`
	Data    time.Duration `json:"data_ns"`
	// Slow marks the rank reported as slow: busier than StragglerFactor x the median of the
	// others.
	Slow bool `json:"slow,omitempty"`
}

// Busy is the rank's busy time per update: compute and data wait.
func (r RankBusy) Busy() time.Duration { return r.Compute + r.Data }

// busyRecorder accumulates this rank's compute and data wait since the last exchange.
type busyRecorder struct {
	every            int
	host             string
	updates, through int
	compute, data    time.Duration
	last             []RankBusy
}

// afterStep adds one batch's step time, of which sync was blocked in collectives, and on the
// update that ends a window exchanges the figures. Every rank runs the same updates, so every
// rank reaches the exchange together.
func (b *busyRecorder) afterStep(a *Accelerator, step, sync time.Duration, update bool) error {
	b.compute += max(0, step-sync)
	if !update {
		return nil
	}
	b.updates++
	b.through++
	if b.updates < b.every {
		return nil
	}
	n := time.Duration(b.updates)
	mine := RankBusy{Rank: a.ProcessIndex(), Host: b.host, Updates: b.updates, Through: b.through,
		Compute: b.compute / n, Data: b.data / n}
	b.updates, b.compute, b.data = 0, 0, 0
	raw, _ := json.Marshal(mine)
	end := a.TimelineSpan("all-gather busy time", "collective")
	all, err := a.AllGather(raw)
	end()
	if err != nil {
		return fmt.Errorf("exchanging the ranks' busy time: %w", err)
	}
	ranks := make([]RankBusy, len(all))
	for i, r := range all {
		if err := json.Unmarshal(r, &ranks[i]); err != nil {
			return fmt.Errorf("rank %d's busy time: %w", i, err)
		}
	}
	if slow := straggler(ranks); slow >= 0 {
		ranks[slow].Slow = true
		r := ranks[slow]
		a.Printf("goaccel: rank %d (host %s) is slow: busy %s per update over updates %d-%d, %.1fx the median of "+
			"the other ranks (%s); its time goes to compute %s, waiting for data %s",
			r.Rank, r.Host, ms(r.Busy()), r.Through-r.Updates+1, r.Through, float64(r.Busy())/float64(othersMedian(ranks, slow)),
			ms(othersMedian(ranks, slow)), ms(r.Compute), ms(r.Data))
	}
	b.last = ranks
	return nil
}

// straggler returns the rank whose busy time is more than StragglerFactor x the median of
// the others' and StragglerMinGap more (the busiest such rank), or -1.
func straggler(ranks []RankBusy) int {
	slow := -1
	for i, r := range ranks {
		m := othersMedian(ranks, i)
		if float64(r.Busy()) > StragglerFactor*float64(m) && r.Busy()-m > StragglerMinGap && len(ranks) > 1 &&
			(slow < 0 || r.Busy() > ranks[slow].Busy()) {
			slow = i
		}
	}
	return slow
}

// othersMedian is the median busy time of every rank but skip.
func othersMedian(ranks []RankBusy, skip int) time.Duration {
	var b []time.Duration
	for i, r := range ranks {
		if i != skip {
			b = append(b, r.Busy())
		}
	}
	if len(b) == 0 {
		return 0
	}
	slices.Sort(b)
	if len(b)%2 == 1 {
		return b[len(b)/2]
	}
	return (b[len(b)/2-1] + b[len(b)/2]) / 2
}

// ms writes d in milliseconds, "12.3 ms".
func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
