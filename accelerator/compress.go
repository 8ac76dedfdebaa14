package accelerator

import (
	"fmt"

	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"github.com/goaccel/goaccel/data"
)

// compressedReduction is the update's reduction under Config.GradientCompression: the loss
// and the weight first, exact (float64, 16 bytes), then the gradients divided by the total
// weight of the update (so they are the mean gradient, the range fp16 needs) through the
// compressor; the apply graph then applies them as they are.
type compressedReduction struct {
	hostGradients
	codec *collective.Codec
	comp  *collective.Compressor // made on the first update, when the gradients' size is known
	pair  []float64              // this process's {w x loss, w}, then the global batch's
}

func (r *compressedReduction) begin(lossSum, weight float64) error {
	if err := r.hostGradients.begin(lossSum, weight); err != nil {
		return err
	}
	if r.comp == nil {
		r.comp = collective.NewCompressor(r.codec, int(r.gradBytes/4), r.p.grp.Size())
		r.gradBytes = r.comp.Bytes()
		r.p.t.stats.SyncBytes = r.gradBytes
		r.pair = make([]float64, 2)
	}
	r.pair[0], r.pair[1] = lossSum, weight
	return nil
}

func (r *compressedReduction) reduce(gb *data.GlobalBatch, window float64) (float64, float64, error) {
	p := r.p
	err := p.t.timed().Do("all-reduce gradients", r.gradBytes+16, len(p.vars), func() error {
		if err := p.grp.AllreduceFloat64(r.pair, collective.Sum); err != nil {
			return err
		}
		total := window + r.pair[1]
		if total <= 0 {
			return nil // no real example anywhere: the step fails the batch, on every process alike
		}
		return r.comp.Reduce(p.grp, r.bufs[:len(p.vars)], float32(1/total))
	})
	if err != nil {
		return 0, 0, fmt.Errorf("accelerator: all-reducing the gradients (%s): %w", batchPlace(gb), err)
	}
	return r.pair[0], r.pair[1], nil
}

// apply: the gradients are the mean already (divided by the total weight before the
// encoding).
func (r *compressedReduction) apply(gb *data.GlobalBatch, _ float64) error { return r.applyMean(gb, 1) }
