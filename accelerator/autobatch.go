package accelerator

import (
	"fmt"

	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
)

// microBatched wraps next (the strategy's runner): with WithAutoBatch, once the first Run
// chose t.micro > 1, a global batch runs as t.micro micro-batches whose gradients accumulate
// into one update. The loss is the global batch's, the mean of the micro-batches' losses
// weighted by their real examples.
func (t *TrainStep) microBatched(next batchStage) batchStage {
	return func(gb *data.GlobalBatch, args []any, accumulate bool) (Loss, error) {
		if t.micro <= 1 {
			return next(gb, args, accumulate)
		}
		return t.runMicroBatches(next, gb, args, accumulate)
	}
}

// runMicroBatches runs gb as t.micro micro-batches through next.
func (t *TrainStep) runMicroBatches(next batchStage, gb *data.GlobalBatch, args []any, accumulate bool) (Loss, error) {
	j := t.job
	b := gb.Shards[0].Size() / t.micro
	micros := make([]*data.GlobalBatch, t.micro)
	counts := make([]float64, t.micro)
	for i := range micros {
		var err error
		if micros[i], err = microBatch(gb, i, b); err != nil {
			return Loss{}, err
		}
		counts[i] = float64(micros[i].NumReal())
	}
	if err := j.acc.grp.AllreduceFloat64(counts, collective.Sum); err != nil {
		return Loss{}, fmt.Errorf("accelerator: counting the real examples of the micro-batches (%s): %w", batchPlace(gb), err)
	}
	last := -1 // the update runs on the last micro-batch with a real example
	for i, c := range counts {
		if c > 0 {
			last = i
		}
	}
	if last < 0 {
		return next(gb, args, accumulate) // no real example at all: as without micro-batches
	}
	var sum, total float64
	for i := 0; i <= last; i++ {
		if counts[i] == 0 {
			continue
		}
		margs, err := j.args(micros[i])
		if err != nil {
			return Loss{}, err
		}
		l, err := next(micros[i], margs, accumulate || i < last)
		if err != nil {
			return Loss{}, err
		}
		v, err := l.Value()
		_ = l.t.FinalizeAll()
		if err != nil {
			return Loss{}, fmt.Errorf("accelerator: reading micro-batch %d's loss (%s): %w", i+1, batchPlace(gb), err)
		}
		sum, total = sum+v*counts[i], total+counts[i]
	}
	return Loss{t: tensors.FromScalar(sum / total)}, nil
}

// microBatch is micro-batch i of gb: slots [i*b, (i+1)*b) of every device's batch.
func microBatch(gb *data.GlobalBatch, i, b int) (*data.GlobalBatch, error) {
	m := &data.GlobalBatch{Epoch: gb.Epoch, Index: gb.Index, Shards: make([]*data.Batch, len(gb.Shards))}
	lo, hi := i*b, (i+1)*b
	var err error
	for d, sh := range gb.Shards {
		ms := &data.Batch{Real: rows(sh.Real, lo, hi), Indices: rows(sh.Indices, lo, hi), Positions: rows(sh.Positions, lo, hi)}
		for _, in := range sh.Inputs {
			var t *tensors.Tensor
			if t, err = sliceRows(in, lo, hi); err != nil {
				return nil, err
			}
			ms.Inputs = append(ms.Inputs, t)
		}
		if sh.Labels != nil {
			if ms.Labels, err = sliceRows(sh.Labels, lo, hi); err != nil {
				return nil, err
			}
		}
		if ms.Mask, err = sliceRows(sh.Mask, lo, hi); err != nil {
			return nil, err
		}
		m.Shards[d] = ms
	}
	return m, nil
}

// rows is s[lo:hi], or nil when s does not have those rows (a source that fills no Positions).
func rows[T any](s []T, lo, hi int) []T {
	if len(s) < hi {
		return nil
	}
	return s[lo:hi]
}

// sliceRows copies rows [lo, hi) of axis 0 of a host tensor.
func sliceRows(t *tensors.Tensor, lo, hi int) (*tensors.Tensor, error) {
	sh := t.Shape()
	if sh.Rank() == 0 || sh.Dimensions[0] < hi {
		return nil, fmt.Errorf("accelerator: micro-batch rows [%d, %d) of a tensor of shape %s", lo, hi, sh)
	}
	dims := append([]int(nil), sh.Dimensions...)
	rowBytes := int(sh.ByteSize()) / dims[0]
	dims[0] = hi - lo
	out := tensors.FromShape(shapes.Make(sh.DType, dims...))
	var inner error
	err := t.ConstBytes(func(src []byte) {
		inner = out.MutableBytes(func(dst []byte) { copy(dst, src[lo*rowBytes:hi*rowBytes]) })
	})
	if err == nil {
		err = inner
	}
	if err != nil {
		return nil, fmt.Errorf("accelerator: copying a micro-batch of a %s tensor: %w", sh, err)
	}
	return out, nil
}
