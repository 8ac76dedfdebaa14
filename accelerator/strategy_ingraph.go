package accelerator

import (
	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/gomlx/ml/model"
)

// inGraph is the strategy of a run whose replicas are all devices of this process: the step
// function, Backward's gradients, their mean over the devices (XLA's sharding inserts the
// all-reduce), accumulation, clipping and the optimizer update are one compiled graph. The
// variables are replicated on the devices by XLA (with Config.Sharding some are sharded over
// them instead: sharding.go), so they are equal by construction, and the devices' evaluation
// rows are already together.
type inGraph struct{}

func (inGraph) newStep(t *TrainStep) stepRunner           { return &inGraphStep{t: t} }
func (inGraph) syncVariables(*Job) (bool, error)          { return false, nil }
func (inGraph) gather(local *Gathered) (*Gathered, error) { return local, nil }

// planSharding: Config.Sharding over the devices, when the job shards variables over them.
func (inGraph) planSharding(j *Job) (string, int) {
	if j.shardsVariables() {
		return j.acc.shard.String(), j.numDevices()
	}
	return "no", 1
}

// inGraphStep holds a TrainStep's graphs under inGraph.
type inGraphStep struct {
	t     *TrainStep
	apply *model.Exec // forward, backward, gradient mean and optimizer update
	accum *model.Exec // with gradient accumulation: adds the gradients, no update
	// applyPin, accumPin: with Config.Sharding, the variables each graph changes, checked
	// after its first execution (sharding.go).
	applyPin, accumPin *pinnedOutputs
}

func (s *inGraphStep) run(gb *data.GlobalBatch, args []any, accumulate bool) (Loss, error) {
	slot, pin := &s.apply, &s.applyPin
	if accumulate {
		slot, pin = &s.accum, &s.accumPin
	}
	name := "execute"
	if *slot == nil {
		name = "compile+execute"
		var err error
		if *slot, *pin, err = s.t.newStepExec(s.t.graphFn(accumulate), gb, args); err != nil {
			return Loss{}, err
		}
	}
	span := s.t.job.acc.tl.Start(name, "execute")
	outs, err := s.t.execTracing(*slot, gb, args)
	span.End()
	if err != nil {
		return Loss{}, err
	}
	if err := (*pin).check(); err != nil {
		finalizeAll(outs)
		return Loss{}, err
	}
	finalizeAll(outs[1:])
	return Loss{t: outs[0]}, nil
}
