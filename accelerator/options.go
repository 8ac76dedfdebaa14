package accelerator

import . "github.com/gomlx/gomlx/core/graph"

// PrepareOption configures Prepare.
type PrepareOption func(*prepareOptions)

type prepareOptions struct {
	accumulate int
	clipNorm   float64
	schedule   func(updatesDone *Node) *Node
	autoBatch  bool // WithAutoBatch
}

// WithGradientAccumulation accumulates gradients over k consecutive global batches and applies
// one optimizer update (one step) with their mean on every k-th batch (k >= 1).
// trainer.Config.GradientAccumulation is this option in a Fit run.
func WithGradientAccumulation(k int) PrepareOption {
	return func(o *prepareOptions) { o.accumulate = k }
}

// WithClipGradNorm clips the (global-batch) gradients by their global L2 norm before the
// update, as torch.nn.utils.clip_grad_norm_. 0 disables clipping. trainer.Config.ClipGradNorm
// is this option in a Fit run.
func WithClipGradNorm(maxNorm float64) PrepareOption {
	return func(o *prepareOptions) { o.clipNorm = maxNorm }
}

// WithLearningRateSchedule sets the learning rate of each update in the graph:
// schedule(updatesDone) gets the number of optimizer updates already applied (a float
// scalar, 0 for the first update) and returns the learning rate to use. In a Fit run,
// trainer.Config.Schedule, LearningRate and WarmupSteps name the schedule this option gets.
func WithLearningRateSchedule(schedule func(updatesDone *Node) *Node) PrepareOption {
	return func(o *prepareOptions) { o.schedule = schedule }
}

// WithAutoBatch keeps the global batch and fits the per-device batch to the device memory
// budget (Config.DeviceMemory): before the first execution, the first TrainStep.Run picks
// the largest per-device batch b that divides the global batch's per-device slots S and
// whose memory plan fits, and from then on runs every global batch as S/b micro-batches of
// b per device whose gradients accumulate, weighted by their real examples, into the one
// update of the global batch (the same update as the whole batch, up to rounding). Batches,
// steps and the learning-rate schedule are unchanged; only the memory and the time of a
// step are. Every process makes the same choice from the same shapes, and they check it.
// Without a budget, or when the whole batch fits, nothing changes. It combines with
// WithGradientAccumulation (micro-batches inside each of its batches). With Config.Verify, a
// step that needs micro-batches is an error at its first Run: Verify does not recompute
// their update. trainer.Config.AutoBatch is this option in a Fit run.
func WithAutoBatch() PrepareOption {
	return func(o *prepareOptions) { o.autoBatch = true }
}
