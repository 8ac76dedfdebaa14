package accelerator

import (
	"fmt"

	"github.com/goaccel/goaccel/accelerator/internal/memplan"
)

// ResidentBytes is what one device holds for a Job's Store variables: the sizes of the backend
// (PJRT) buffers on that device, by kind. It is measured, not planned: it counts the buffers
// that exist when it is called (after a step: the variables' values as the step left them).
type ResidentBytes struct {
	// Weights is the bytes of the trainable variables.
	Weights int64
	// Gradients is the bytes of goaccel's gradient accumulators (goaccel/grad_accum/* and
	// goaccel/grad_weight), present with gradient accumulation. Gradients that live only
	// inside a step are temporaries of the compiled graph, not counted here.
	Gradients int64
	// OptimizerState is the bytes of every other variable: the optimizer's moments and
	// counters, the learning rate, goaccel's gradient norm, the random state.
	OptimizerState int64
}

// Total is the sum of the three kinds.
func (r ResidentBytes) Total() int64 { return memplan.Resident(r).Total() }

// residentKind is the part of ResidentBytes that a variable of kind k counts in (kindFixed:
// the optimizer state's).
func residentKind(k varKind) memplan.Kind {
	switch k {
	case kindWeights:
		return memplan.KindWeights
	case kindGradients:
		return memplan.KindGradients
	}
	return memplan.KindOptimizer
}

// ResidentBytes returns, for each of this process's devices (index d for device d), the bytes
// of the on-device buffers that hold the Job's Store variables: with Config.Sharding a sharded
// variable counts its shard on each device, a replicated one its full size on each. A value
// held only on the host (loaded and not yet used by a step) counts nowhere. With
// Config.Sharding over several processes it also counts this rank's slices of the optimizer
// state, kept outside the Store, as OptimizerState on the device they live on. Reading it
// moves nothing between host and devices.
func (j *Job) ResidentBytes() ([]ResidentBytes, error) {
	out := make([]memplan.Resident, max(1, j.acc.NumDevices()))
	for v := range j.store.IterVariables() {
		held, err := memplan.HeldTensors(v)
		if err != nil {
			return nil, wrapOp("Job.ResidentBytes", err)
		}
		k := residentKind(variableKind(v))
		for _, t := range held {
			if err := memplan.AddOnDevice(out, j.acc.backend, t, k); err != nil {
				return nil, wrapOp("Job.ResidentBytes", fmt.Errorf("accelerator: %s: %w", v.Path(), err))
			}
		}
	}
	if st := j.acc.shardedState[j.store]; st != nil {
		if err := st.AddResident(out, j.acc.backend); err != nil {
			return nil, wrapOp("Job.ResidentBytes", err)
		}
	}
	res := make([]ResidentBytes, len(out))
	for d, r := range out {
		res[d] = ResidentBytes(r)
	}
	return res, nil
}
