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

// mean holds the apply graph and its inputs: the mean gradients, one float32 tensor per
// variable per device, made once and rewritten in place every update.
type mean struct {
	h     *Host
	r     Reducer
	ins   []*tensors.Tensor // the apply graph's inputs, device-major (as Apply passes them)
	bufs  [][]float32       // the flat data of device 0's inputs, this update's (see Begin)
	pair  [2]float64        // this process's {w x loss, w} of the update's batch
	apply *model.Exec
}

// Begin makes the apply's input tensors on the first update and, on every update, points bufs
// at device 0's: Place writes the gradients there and the Reducer makes them the mean in
// place, so that no update allocates or copies the gradients again for the apply graph.
// MutableFlatData is what makes that safe: it drops the tensor's copy on the device, if the
// last Exec made one, so that the next Exec takes the new values there (with the CPU plugin's
// shared buffers the flat data is the device's buffer itself, and that copy is none).
func (m *mean) Begin(lossSum, weight float64) error {
	nv := len(m.h.vars)
	if m.ins == nil {
		n := 0
		m.bufs = make([][]float32, nv)
		m.ins = make([]*tensors.Tensor, 0, m.h.env.Devices()*nv)
		for range m.h.env.Devices() {
			for _, v := range m.h.vars {
				m.ins = append(m.ins, tensors.FromShape(shapes.Make(dtypes.Float32, v.Shape().Dimensions...)))
			}
		}
		for _, v := range m.h.vars {
			n += v.Shape().Size()
		}
		m.h.step.SetSyncBytes(m.r.Bytes(n, m.h.env.Group.Size()))
	}
	for i := range nv {
		if err := tensors.MutableFlatData(m.ins[i], func(flat []float32) { m.bufs[i] = flat }); err != nil {
			return fmt.Errorf("accelerator: the apply graph's input for %s: %w", m.h.vars[i].Path(), err)
		}
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
	// Every device gets its own copy (replicated inputs, device-major): device 0's tensors
	// hold the mean already (bufs), the others' are copied from them.
	nv := len(h.vars)
	args := make([]any, len(m.ins))
	for k, t := range m.ins {
		args[k] = t
		if k < nv {
			continue
		}
		if err := tensors.MutableFlatData(t, func(flat []float32) { copy(flat, m.bufs[k%nv]) }); err != nil {
			return errorAt("copying the mean gradients for another device", gb, err)
		}
	}
	span := h.env.TL.Start(name, "execute")
	applied, err := m.apply.Exec(args...)
	span.End()
	if err != nil {
		return errorAt("applying the all-reduced gradients", gb, err)
	}
	FinalizeAll(applied)
	for _, t := range m.ins {
		// A device's own copy of the inputs (a GPU's; with the CPU plugin's shared buffers
		// this does nothing) is not held through the next gradients graph: PJRT frees it once
		// the apply graph is done with it, as it did when these tensors were made afresh every
		// update and dropped right after Exec.
		if err := t.InvalidateOnDevice(); err != nil {
			return errorAt("releasing the apply graph's inputs on the device", gb, err)
		}
	}
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
