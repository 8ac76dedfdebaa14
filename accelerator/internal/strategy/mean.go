package strategy

import (
	"fmt"

	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Reducer sums the processes' weighted gradient sums of an update and makes them the mean
// gradient: the exact float32 all-reduce, or one that sends fewer bytes (collective's).
type Reducer interface {
	// Bytes is what each process sends per update for n gradient elements over size processes
	// (StepStats.SyncBytes).
	Bytes(n, size int) int64
	// Mean replaces grads (this process's weighted gradient sums, one buffer per variable) on
	// every process by the sums over all processes divided by the update's total weight
	// (window, the weight of the update's batches before this one, plus the sum of weight),
	// and returns the sums of lossSum (w x loss) and weight over all processes. Its
	// collectives go through t. With a total weight of 0 the gradients are left unscaled.
	Mean(t collective.Timed, g collective.Group, grads [][]float32, lossSum, weight, window float64) (float64, float64, error)
}

// Mean is the Reduction that applies the mean gradient on every device: the Reducer r makes
// the mean on the host, and the apply graph (the clipping, the learning-rate schedule and the
// optimizer update, exactly as in a single process) runs on every device.
func Mean(r Reducer) func(h *Host) Reduction {
	return func(h *Host) Reduction { return &mean{h: h, r: r} }
}

// mean holds the host buffers of an update's gradients, one per variable, and the apply graph.
type mean struct {
	h     *Host
	r     Reducer
	bufs  [][]float32
	pair  [2]float64 // this process's {w x loss, w} of the update's batch
	apply *model.Exec
}

func (m *mean) Begin(lossSum, weight float64) error {
	if m.bufs == nil {
		n := 0
		m.bufs = make([][]float32, len(m.h.vars))
		for i, v := range m.h.vars {
			m.bufs[i] = make([]float32, v.Shape().Size())
			n += v.Shape().Size()
		}
		m.h.step.SetSyncBytes(m.r.Bytes(n, m.h.env.Group.Size()))
	}
	m.pair = [2]float64{lossSum, weight}
	return nil
}

func (m *mean) Place(i int, flat []float32) { copy(m.bufs[i], flat) }

func (m *mean) Reduce(gb *data.GlobalBatch, window float64) (float64, float64, error) {
	lossSum, weight, err := m.r.Mean(m.h.step.Timed(), m.h.env.Group, m.bufs, m.pair[0], m.pair[1], window)
	if err != nil {
		return 0, 0, errorAt("all-reducing the gradients", gb, err)
	}
	return lossSum, weight, nil
}

// Apply runs the apply graph on the mean gradients, a copy per device.
func (m *mean) Apply(gb *data.GlobalBatch, _ float64) error {
	h := m.h
	name := "apply"
	if m.apply == nil {
		name = "compile+apply"
	}
	if err := m.newApply(); err != nil {
		return err
	}
	nd := h.env.Devices()
	args := make([]any, 0, nd*len(h.vars))
	for range nd { // every device gets its own copy (replicated inputs, device-major)
		for i, v := range h.vars {
			args = append(args, tensors.FromFlatDataAndDimensions(m.bufs[i], v.Shape().Dimensions...))
		}
	}
	span := h.env.TL.Start(name, "execute")
	applied, err := m.apply.Exec(args...)
	span.End()
	if err != nil {
		return errorAt("applying the all-reduced gradients", gb, err)
	}
	FinalizeAll(applied)
	return nil
}

// newApply creates the apply graph's executor, if not yet made (by Apply or CompileApply).
func (m *mean) newApply() error {
	if m.apply != nil {
		return nil
	}
	var err error
	m.apply, err = m.h.env.NewExec(func(s *model.Scope, inputs []*Node) []*Node {
		return m.h.step.ApplyGraph(m.h.vars, m.h.lossDType)(s, inputs)
	}, Apply)
	return err
}

// CompileApply compiles the apply graph ahead, for the shapes Apply gives it (the float32
// mean gradients, a copy per device): the memory plan then counts the optimizer's state,
// which that graph creates, and its temporaries. The first update reuses it. The gradients
// graph must have been traced first (it finds the variables).
func (m *mean) CompileApply() (*Graph, error) {
	h := m.h
	if err := m.newApply(); err != nil {
		return nil, err
	}
	in := make([]shapes.Shape, 0, h.env.Devices()*len(h.vars))
	for range h.env.Devices() {
		for _, v := range h.vars {
			in = append(in, shapes.Make(dtypes.Float32, v.Shape().Dimensions...))
		}
	}
	span := h.env.TL.Start("compile", "execute")
	g, err := m.apply.Compile(in...)
	span.End()
	if err != nil {
		return nil, fmt.Errorf("accelerator: compiling the apply graph for the memory plan: %w", err)
	}
	return g, nil
}
