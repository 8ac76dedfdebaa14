package accelerator

import (
	"github.com/goaccel/goaccel/accelerator/internal/strategy"
)

// inGraph is the strategy of a run whose replicas are all devices of this process: the step
// function, Backward's gradients, their mean over the devices (XLA's sharding inserts the
// all-reduce), accumulation, clipping and the optimizer update are one compiled graph
// (strategy.InGraph). The variables are replicated on the devices by XLA (with
// Config.Sharding some are sharded over them instead: sharding.go), so they are equal by
// construction, and the devices' evaluation rows are already together.
type inGraph struct{}

func (inGraph) newStep(t *TrainStep) strategy.Runner {
	return strategy.NewInGraph(t.job.env(), runnerStep{t})
}
func (inGraph) syncVariables(*Job) (bool, error)          { return false, nil }
func (inGraph) gather(local *Gathered) (*Gathered, error) { return local, nil }

// planSharding: Config.Sharding over the devices, when the job shards variables over them.
func (inGraph) planSharding(j *Job) (string, int) {
	if j.shardsVariables() {
		return j.acc.shard.String(), j.numDevices()
	}
	return "no", 1
}
