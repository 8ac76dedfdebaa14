package trainer

import (
	"fmt"
	"time"
)

// KindRanks is the kind of the records that say where each rank's time goes (the straggler
// report, accelerator's Job.RankBusy): in every run (one process: its one rank), every
// $GOACCEL_STRAGGLER_EVERY updates (default 100), Fit gives Config.Loggers one record whose
// Eval holds, per rank R, "rankR_compute_ms" and "rankR_data_ms" (per update, over the
// window) and "slow_rank", the rank named as slow (-1: none). They are not written to
// metrics.jsonl, whose records stay the same from one run to the next.
const KindRanks = "ranks"

// ranksRecord gives Config.Loggers the ranks' busy time, once per window (main process).
func (f *fit) ranksRecord(epoch float64) error {
	if f.log == nil || len(f.cfg.Loggers) == 0 {
		return nil
	}
	ranks := f.job.RankBusy()
	if len(ranks) == 0 || ranks[0].Through == f.ranksThrough {
		return nil
	}
	f.ranksThrough = ranks[0].Through
	r := Record{Kind: KindRanks, Step: f.step, Epoch: epoch, Loss: nan, LR: nan, GradNorm: nan, ExamplesPerSec: nan,
		Time: f.now(), Elapsed: f.elapsed(), Eval: map[string]float64{"slow_rank": -1}}
	msOf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for _, rb := range ranks {
		r.Eval[fmt.Sprintf("rank%d_compute_ms", rb.Rank)] = msOf(rb.Compute)
		r.Eval[fmt.Sprintf("rank%d_data_ms", rb.Rank)] = msOf(rb.Data)
		if rb.Slow {
			r.Eval["slow_rank"] = float64(rb.Rank)
		}
	}
	for i, l := range f.cfg.Loggers {
		if err := l.Log(r); err != nil {
			return wrapf(err, "Config.Loggers[%d] at step %d", i, f.step)
		}
	}
	return nil
}
