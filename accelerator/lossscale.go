package accelerator

import (
	"fmt"
	"math"

	"github.com/goaccel/goaccel/accelerator/internal/precision"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// Dynamic loss scaling, for MixedPrecision "fp16": precision.Scaler holds both its halves, the
// rule built into the update graphs and the one applied on the host (zero1_lossscale.go), with
// PyTorch GradScaler's defaults; its variables are in internalScope, in the Store, so that
// checkpoints carry them. What follows hands it the job.

// scaler is the job's loss scaler, its scale growing after the Accelerator's growthInterval
// finite updates in a row (which tests shorten); nil when the precision scales no loss, which
// the scaler's step methods take as no scaling.
func (j *Job) scaler() *precision.Scaler {
	return j.acc.precision.Scaler(internalScope, j.acc.growthInterval)
}

// scaleLoss returns the loss to differentiate: under fp16, loss (converted to float32) times
// the loss scale; else loss itself. op names the caller for the error on a loss that is not a
// float scalar.
func (j *Job) scaleLoss(op string, root *model.Scope, loss *Node) *Node {
	return j.scaler().ScaleLoss(op, root, loss)
}

// unscaleGradients divides the (scaled) gradients of an update by the loss scale and tells
// whether they are all finite; the update's Finish then makes the update conditional on it.
// It returns grads unchanged and nil when the job does not scale its loss.
func (j *Job) unscaleGradients(root *model.Scope, g *Graph, grads []*Node) ([]*Node, *precision.Update) {
	return j.scaler().Unscale(root, g, grads)
}

// LossScale returns, under MixedPrecision "fp16", the loss scale the next update uses and
// the number of optimizer updates skipped so far because a gradient was not finite (the
// variables goaccel/loss_scale and goaccel/skipped_updates, which checkpoints carry). Without
// fp16 it returns 1 and 0. Reading them waits for the queued steps to finish.
func (j *Job) LossScale() (scale float64, skipped int64, err error) {
	sc := j.scaler()
	if sc == nil {
		return 1, 0, nil
	}
	s, err := sc.Read(j.store)
	if err != nil {
		return math.NaN(), 0, fmt.Errorf("accelerator: Job.LossScale: %w", err)
	}
	return float64(s.Scale), s.Skipped, nil
}
