package accelerator

import (
	"bytes"
	"encoding/gob"
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
)

// wireTensor is a host tensor as it travels between processes.
type wireTensor struct {
	DType int
	Dims  []int
	Data  []byte
}

// wireGathered is a Gathered as it travels between processes.
type wireGathered struct {
	Outputs            []wireTensor
	Labels             *wireTensor
	Real               []bool
	Indices, Positions []int
}

// gatherProcesses returns the rows of every process's local results, rank after rank (the
// identity with one process). Every process gets the same result.
func (a *Accelerator) gatherProcesses(local *Gathered) (*Gathered, error) {
	if a.grp.Size() == 1 {
		return local, nil
	}
	w := wireGathered{Real: local.Real, Indices: local.Indices, Positions: local.Positions}
	for _, t := range local.Outputs {
		wt, err := toWire(t)
		if err != nil {
			return nil, err
		}
		w.Outputs = append(w.Outputs, wt)
	}
	if local.Labels != nil {
		wt, err := toWire(local.Labels)
		if err != nil {
			return nil, err
		}
		w.Labels = &wt
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&w); err != nil {
		return nil, fmt.Errorf("accelerator: encoding evaluation results: %w", err)
	}
	all, err := a.grp.Allgather(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("accelerator: gathering evaluation results from the processes: %w", err)
	}
	parts := make([]*Gathered, len(all))
	for rank, b := range all {
		var w wireGathered
		if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&w); err != nil {
			return nil, fmt.Errorf("accelerator: decoding the evaluation results of rank %d: %w", rank, err)
		}
		g := &Gathered{Real: w.Real, Indices: w.Indices, Positions: w.Positions}
		for _, wt := range w.Outputs {
			g.Outputs = append(g.Outputs, fromWire(wt))
		}
		if w.Labels != nil {
			g.Labels = fromWire(*w.Labels)
		}
		if len(g.Outputs) != len(local.Outputs) || (g.Labels == nil) != (local.Labels == nil) {
			return nil, fmt.Errorf("accelerator: rank %d returned %d evaluation outputs (labels: %t), this process %d (labels: %t)",
				rank, len(g.Outputs), g.Labels != nil, len(local.Outputs), local.Labels != nil)
		}
		parts[rank] = g
	}
	return concatGathered(parts)
}

// concatGathered puts the rows of parts one after the other.
func concatGathered(parts []*Gathered) (*Gathered, error) {
	var refs []rowRef
	out := &Gathered{}
	for p, g := range parts {
		for r := range g.Len() {
			refs = append(refs, rowRef{part: p, row: r})
		}
		out.Real = append(out.Real, g.Real...)
		out.Indices = append(out.Indices, g.Indices...)
		out.Positions = append(out.Positions, g.Positions...)
	}
	if err := pickRows(parts, refs, out); err != nil {
		return nil, err
	}
	return out, nil
}

func toWire(t *tensors.Tensor) (wireTensor, error) {
	w := wireTensor{DType: int(t.DType()), Dims: t.Shape().Dimensions}
	err := t.ConstBytes(func(b []byte) { w.Data = append([]byte(nil), b...) })
	return w, err
}

func fromWire(w wireTensor) *tensors.Tensor {
	t := tensors.FromShape(shapes.Make(dtypes.DType(w.DType), w.Dims...))
	_ = t.MutableBytes(func(b []byte) { copy(b, w.Data) })
	return t
}
