package trainer

import (
	"fmt"
	"iter"
	"time"

	"github.com/goaccel/goaccel/data"
)

// dataWaits adds up how long this session's training steps waited for their batches (the
// loader's Next: reading, augmenting and collating that was not done ahead of the step) and
// how long the steps took, wait included (the loss read back; evaluation and checkpoints
// are not steps).
type dataWaits struct {
	wait, step  time.Duration // this session's totals
	batches     int
	longest     time.Duration
	sinceRecord time.Duration // the wait since the last training record (Record.DataWait)
}

// add counts one batch that waited wait for its data and then ran for run.
func (w *dataWaits) add(wait, run time.Duration) {
	w.wait += wait
	w.step += wait + run
	w.sinceRecord += wait
	w.batches++
	w.longest = max(w.longest, wait)
}

// summary is the run log's line about the waits: "waited for data: 1.2% of step time
// (0.051 s of 4.210 s over 40 batches; longest wait 0.012 s)", or "" when no step ran.
func (w *dataWaits) summary() string {
	if w.batches == 0 || w.step <= 0 {
		return ""
	}
	return fmt.Sprintf("waited for data: %.1f%% of step time (%.3f s of %.3f s over %d batch(es); longest wait %.3f s)",
		100*w.wait.Seconds()/w.step.Seconds(), w.wait.Seconds(), w.step.Seconds(), w.batches, w.longest.Seconds())
}

// timedBatches is seq with the time spent inside it before each batch (the wait for the
// loader's next global batch) stored in *wait as the batch is yielded.
func timedBatches(seq iter.Seq2[*data.GlobalBatch, error], wait *time.Duration) iter.Seq2[*data.GlobalBatch, error] {
	return func(yield func(*data.GlobalBatch, error) bool) {
		start := time.Now()
		for gb, err := range seq {
			*wait = time.Since(start)
			if !yield(gb, err) {
				return
			}
			start = time.Now()
		}
	}
}
