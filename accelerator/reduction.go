package accelerator

import (
	"fmt"
	"github.com/goaccel/goaccel/accelerator/internal/collective"

	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/gomlx/core/tensors"
)

// reduction is how the update's weighted gradient sums cross processes and become the update,
// under the strategies that reduce on the host (hostReduced, zero1). The strategy computes the
// gradients, keeps the loss bookkeeping and hands each update to its reduction:
//
//   - exactReduction: one bucketed float32 all-reduce of the gradients and {w x loss, w}, and
//     the apply graph on every device (hostReduced);
//   - compressedReduction: {w x loss, w} exact, the mean gradients as 16-bit floats, and the
//     apply graph (hostReduced under Config.GradientCompression, compress.go);
//   - zero1Sync: a reduce-scatter, the update of this rank's slices of the optimizer state and
//     an all-gather of the weights (zero1, strategy_zero1.go).
type reduction interface {
	// begin starts an update: this process's {w x loss, w} of the update's batch; the
	// gradients follow through place.
	begin(lossSum, weight float64) error
	// place puts variable i's weighted gradient sum (flat, float32).
	place(i int, flat []float32)
	// reduce returns the global batch's w x loss and weight, summed over all processes;
	// window is the total weight of the update's batches before this one.
	reduce(gb *data.GlobalBatch, window float64) (lossSum, weight float64, err error)
	// apply makes the update from the reduced sums; total is the update's total weight over
	// all processes (> 0).
	apply(gb *data.GlobalBatch, total float64) error
}

// timed is the account of the step's collectives (collective.Timed): their time in the
// step's stats (Sync), their bytes in SyncedBytes, and, for a named one, a span of the
// timeline. Every collective of the strategies goes through it.
func (t *TrainStep) timed() collective.Timed {
	return collective.Timed{Sync: &t.stats.Sync, Bytes: &t.stats.SyncedBytes, TL: t.job.acc.tl}
}

// hostGradients are the host buffers of an update's gradients, one per variable, then {w x
// loss, w} (in the exact all-reduce's buckets), and the apply graph that applies their mean on
// every device: what exactReduction and compressedReduction share.
type hostGradients struct {
	p    *hostReducedStep
	bufs [][]float32
	// gradBytes is the bytes of the gradients each process sends per update.
	gradBytes int64
}

// begin makes the buffers on the first update and puts {w x loss, w} after the gradients.
func (h *hostGradients) begin(lossSum, weight float64) error {
	if h.bufs == nil {
		h.bufs = make([][]float32, len(h.p.vars)+1)
		for i, v := range h.p.vars {
			h.bufs[i] = make([]float32, v.Shape().Size())
			h.gradBytes += int64(4 * v.Shape().Size())
		}
		h.bufs[len(h.p.vars)] = make([]float32, 2)
		h.p.t.stats.SyncBytes = h.gradBytes
	}
	h.bufs[len(h.p.vars)][0], h.bufs[len(h.p.vars)][1] = float32(lossSum), float32(weight)
	return nil
}

func (h *hostGradients) place(i int, flat []float32) { copy(h.bufs[i], flat) }

// applyMean runs the apply graph on the gradients, each multiplied by scale first (1 for
// gradients that are the mean already).
func (h *hostGradients) applyMean(gb *data.GlobalBatch, scale float32) error {
	p := h.p
	j := p.t.job
	grads := h.bufs[:len(p.vars)]
	if scale != 1 {
		for _, g := range grads {
			for k := range g {
				g[k] *= scale
			}
		}
	}
	name := "apply"
	if p.apply == nil {
		name = "compile+apply"
	}
	if err := p.newApply(); err != nil {
		return err
	}
	nd := j.numDevices()
	applyArgs := make([]any, 0, nd*len(p.vars))
	for range nd { // every device gets its own copy (replicated inputs, device-major)
		for i, v := range p.vars {
			applyArgs = append(applyArgs, tensors.FromFlatDataAndDimensions(grads[i], v.Shape().Dimensions...))
		}
	}
	span := j.acc.tl.Start(name, "execute")
	applied, err := p.apply.Exec(applyArgs...)
	span.End()
	if err != nil {
		return fmt.Errorf("accelerator: applying the all-reduced gradients (%s): %w", batchPlace(gb), err)
	}
	finalizeAll(applied)
	return nil
}

// newApply creates the apply graph's executor, if not yet made (by applyMean or compileApply).
func (p *hostReducedStep) newApply() error {
	if p.apply != nil {
		return nil
	}
	var err error
	p.apply, err = p.t.job.newExec(p.applyGraphFn, layoutApply)
	return err
}

// exactReduction is the update's exact all-reduce: the weighted gradient sums and, in the
// same buckets, {w x loss, w} (8 bytes), summed in float32; the mean is the sums divided by
// the update's total weight.
type exactReduction struct{ hostGradients }

func (r *exactReduction) reduce(gb *data.GlobalBatch, _ float64) (float64, float64, error) {
	p := r.p
	err := p.t.timed().Do("all-reduce gradients", r.gradBytes+8, len(p.vars), func() error { return p.grp.AllreduceSum(r.bufs) })
	if err != nil {
		return 0, 0, fmt.Errorf("accelerator: all-reducing the gradients (%s): %w", batchPlace(gb), err)
	}
	pair := r.bufs[len(p.vars)]
	return float64(pair[0]), float64(pair[1]), nil
}

func (r *exactReduction) apply(gb *data.GlobalBatch, total float64) error {
	return r.applyMean(gb, float32(1/total))
}
