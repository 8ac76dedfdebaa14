package accelerator

import (
	"fmt"
	"reflect"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/core/tensors/dtensor"
	"github.com/gomlx/gomlx/ml/model"
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
func (r ResidentBytes) Total() int64 { return r.Weights + r.Gradients + r.OptimizerState }

func (r *ResidentBytes) add(k varKind, n int64) {
	switch k {
	case kindWeights:
		r.Weights += n
	case kindGradients:
		r.Gradients += n
	default:
		r.OptimizerState += n
	}
}

// ResidentBytes returns, for each of this process's devices (index d for device d), the bytes
// of the on-device buffers that hold the Job's Store variables: with Config.Sharding a sharded
// variable counts its shard on each device, a replicated one its full size on each. A value
// held only on the host (loaded and not yet used by a step) counts nowhere. With
// Config.Sharding over several processes it also counts this rank's slices of the optimizer
// state, kept outside the Store, as OptimizerState on the device they live on. Reading it
// moves nothing between host and devices.
func (j *Job) ResidentBytes() ([]ResidentBytes, error) {
	out := make([]ResidentBytes, max(1, j.acc.NumDevices()))
	for v := range j.store.IterVariables() {
		held, err := heldTensors(v)
		if err != nil {
			return nil, wrapOp("Job.ResidentBytes", err)
		}
		k := variableKind(v)
		for _, t := range held {
			if err := addOnDevice(out, j.acc.backend, t, k); err != nil {
				return nil, wrapOp("Job.ResidentBytes", fmt.Errorf("accelerator: %s: %w", v.Path(), err))
			}
		}
	}
	if st := j.acc.shardedState[j.store]; st != nil {
		if err := st.addResident(out, j.acc.backend); err != nil {
			return nil, wrapOp("Job.ResidentBytes", err)
		}
	}
	return out, nil
}

// addOnDevice adds the size of t's on-device buffer, if it has one, to its device's count.
func addOnDevice(out []ResidentBytes, backend compute.Backend, t *tensors.Tensor, k varKind) error {
	if t == nil || !t.Ok() || !t.IsOnAnyDevice() {
		return nil
	}
	dev, err := t.Device()
	if err != nil {
		return err
	}
	buf, err := t.Buffer(backend, dev) // on that device already: no transfer
	if err != nil {
		return err
	}
	shape, err := buf.Shape()
	if err != nil {
		return err
	}
	if int(dev) < 0 || int(dev) >= len(out) {
		return fmt.Errorf("a buffer on device %d, outside the job's %d device(s)", dev, len(out))
	}
	out[dev].add(k, shape.ByteSize())
	return nil
}

// heldTensors returns the tensors a variable holds now: its full value and, when it is
// distributed, each device's shard. GoMLX v0.28.3 keeps them in the unexported fields value
// and distValue, and its accessors create what is missing (Value merges the shards on the
// host, DistributedValue splits the value), which would change what is measured; so they are
// read as they are. A GoMLX that renames them makes this an error, not a wrong count.
func heldTensors(v *model.Variable) ([]*tensors.Tensor, error) {
	rv := reflect.ValueOf(v).Elem()
	value, dist := rv.FieldByName("value"), rv.FieldByName("distValue")
	if !value.IsValid() || !dist.IsValid() || value.Type() != reflect.TypeFor[*tensors.Tensor]() || dist.Type() != reflect.TypeFor[*dtensor.Tensor]() {
		return nil, fmt.Errorf("accelerator: model.Variable no longer holds value *tensors.Tensor and distValue "+
			"*dtensor.Tensor (GoMLX changed): cannot count %s's device buffers", v.Path())
	}
	var out []*tensors.Tensor
	if p := value.UnsafePointer(); p != nil {
		out = append(out, (*tensors.Tensor)(p))
	}
	if p := dist.UnsafePointer(); p != nil {
		out = append(out, (*dtensor.Tensor)(p).Shards()...)
	}
	return out, nil
}
