package accelerator

import (
	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"github.com/goaccel/goaccel/accelerator/internal/strategy"
)

// hostReduced is the strategy of a run over several processes: each step's runner is a
// strategy.Host (a gradients graph, the gradients summed on the host through the process
// group, the update) given the reduction of the mean gradient: the exact float32 all-reduce,
// or, under Config.GradientCompression, 16-bit floats (collective.Compressed). Every process
// thus applies the same update to the same variables (made rank 0's by syncVariables at
// Prepare and after the first execution) and the variables stay equal on all processes.
// Evaluation rows are all-gathered (gatherRanks).
type hostReduced struct {
	grp   collective.Group
	codec *collective.Codec // Config.GradientCompression (nil: the exact float32 all-reduce)
}

// newStep hands the step the reducer the settings chose: 16-bit compressed or exact (a new
// one per step: the compressed one keeps its buffers).
func (h hostReduced) newStep(t *TrainStep) strategy.Runner {
	var r strategy.Reducer = collective.Exact{}
	if h.codec != nil {
		r = collective.Compressed(h.codec)
	}
	return strategy.NewHost(t.job.env(), runnerStep{t}, strategy.Mean(r))
}

func (h hostReduced) syncVariables(j *Job) (bool, error) {
	return collective.SyncVariables(h.grp, j.store, isAccumulator)
}
func (h hostReduced) gather(local *Gathered) (*Gathered, error) { return gatherRanks(h.grp, local) }
func (hostReduced) planSharding(*Job) (string, int)             { return "no", 1 }
