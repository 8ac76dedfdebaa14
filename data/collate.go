package data

import (
	"fmt"

	"github.com/gomlx/gomlx/core/tensors"
)

// collateGlobalBatch collates the examples of a global batch at once, so that every batch of it
// gets the same shapes, and splits each tensor along axis 0 into the batches (whose Real,
// Indices and Positions are set; examples holds their slots one batch after the other).
func collateGlobalBatch[T any](examples []T, batches []*Batch, collate CollateFunc[T]) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("collate panicked: %v", p)
		}
	}()
	inputs, labels, err := collate(examples)
	if err != nil {
		return fmt.Errorf("collate: %w", err)
	}
	n := len(examples)
	splitInputs := make([][]*tensors.Tensor, len(inputs))
	for i, t := range inputs {
		if splitInputs[i], err = splitBatchAxis(t, n, len(batches)); err != nil {
			return fmt.Errorf("collate: input %d: %w", i, err)
		}
	}
	var splitLabels []*tensors.Tensor
	if labels != nil {
		if splitLabels, err = splitBatchAxis(labels, n, len(batches)); err != nil {
			return fmt.Errorf("collate: labels: %w", err)
		}
	}
	for j, b := range batches {
		b.Inputs = make([]*tensors.Tensor, len(inputs))
		for i := range inputs {
			b.Inputs[i] = splitInputs[i][j]
		}
		if labels != nil {
			b.Labels = splitLabels[j]
		}
		b.Mask = tensors.FromValue(b.Real)
	}
	return nil
}

// splitBatchAxis checks that t has the n examples on axis 0 and cuts it into parts tensors of
// n/parts examples each (t itself when parts is 1).
func splitBatchAxis(t *tensors.Tensor, n, parts int) ([]*tensors.Tensor, error) {
	if t == nil {
		return nil, fmt.Errorf("nil tensor")
	}
	s := t.Shape()
	if s.Rank() < 1 || s.Dim(0) != n {
		return nil, fmt.Errorf("shape %s, want the %d examples given to Collate on axis 0", s, n)
	}
	if parts == 1 {
		return []*tensors.Tensor{t}, nil
	}
	partShape := s.Clone()
	partShape.Dimensions[0] = n / parts
	out := make([]*tensors.Tensor, parts)
	var err error
	cerr := t.ConstBytes(func(all []byte) {
		if len(all)%parts != 0 {
			err = fmt.Errorf("shape %s: %d bytes do not split into %d batches", s, len(all), parts)
			return
		}
		size := len(all) / parts // axis 0 is the outermost: each batch is a contiguous run
		for j := range out {
			out[j] = tensors.FromShape(partShape)
			if err = out[j].MutableBytes(func(dst []byte) { copy(dst, all[j*size:(j+1)*size]) }); err != nil {
				return
			}
		}
	})
	if cerr != nil {
		return nil, cerr
	}
	return out, err
}

func newBatch(size int) *Batch {
	return &Batch{Real: make([]bool, size), Indices: make([]int, size), Positions: make([]int, size)}
}
