package memplan

import (
	"fmt"
	"reflect"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/core/tensors/dtensor"
	"github.com/gomlx/gomlx/ml/model"
)

// Resident is what one device holds for a store's variables, by kind, in bytes: the sizes of
// the backend buffers that exist on that device. Its fields are those of
// accelerator.ResidentBytes, in the same order, and mean the same (their godoc is there).
type Resident struct {
	Weights        int64
	Frozen         int64
	Gradients      int64
	OptimizerState int64
}

// Total is the sum of the kinds.
func (r Resident) Total() int64 { return r.Weights + r.Frozen + r.Gradients + r.OptimizerState }

// Kind is the part of Resident that a variable's buffers count in.
type Kind int

const (
	KindWeights   Kind = iota // trainable variables
	KindGradients             // gradient accumulators
	KindOptimizer             // everything else
	KindFrozen                // frozen weights: read by the step, not trainable (a LoRA base model's)
)

// Add adds n bytes to the part of kind k.
func (r *Resident) Add(k Kind, n int64) {
	switch k {
	case KindWeights:
		r.Weights += n
	case KindFrozen:
		r.Frozen += n
	case KindGradients:
		r.Gradients += n
	default:
		r.OptimizerState += n
	}
}

// AddOnDevice adds the size of t's on-device buffer, if it has one, to its device's count in
// out (index d for device d), as kind k. Reading it moves nothing between host and devices.
func AddOnDevice(out []Resident, backend compute.Backend, t *tensors.Tensor, k Kind) error {
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
	out[dev].Add(k, shape.ByteSize())
	return nil
}

// HeldTensors returns the tensors a variable holds now: its full value and, when it is
// distributed, each device's shard. GoMLX v0.28.3 keeps them in the unexported fields value
// and distValue, and its accessors create what is missing (Value merges the shards on the
// host, DistributedValue splits the value), which would change what is measured; so they are
// read as they are. A GoMLX that renames them makes this an error, not a wrong count.
func HeldTensors(v *model.Variable) ([]*tensors.Tensor, error) {
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
