package accelerator

import (
	"fmt"

	"github.com/goaccel/goaccel/accelerator/internal/precision"
)

// fp16's dynamic loss scaling under zero1 across processes. The gradients graph scales the
// loss as in any run (scaleLoss); the update, made on the host and on each rank's slices, does
// what unscaleGradients and Finish do in an update graph: zero1Sync.apply divides the reduced
// slices by the scale (folded into the 1/weight factor) and all-reduces the sum of their
// squares, which is Inf or NaN on every rank as soon as any rank's slice holds an Inf or a NaN,
// so that every rank takes the same decision; a non-finite update is skipped on every rank (no
// apply graph, no all-gather: weights, optimizer state and step counters keep their values),
// and the scaler's variables, in the job's Store as in any run, follow precision.State.Next.

// lossScaler reads, under fp16, the job's loss scaler for the update; nil without fp16.
func (st *zero1State) lossScaler() (*precision.State, error) {
	sc := st.job.scaler()
	if sc == nil {
		return nil, nil
	}
	s, err := sc.Read(st.job.store)
	if err != nil {
		return nil, fmt.Errorf("accelerator: reading the loss scale for the sharded update: %w", err)
	}
	if s.Scale <= 0 {
		return nil, fmt.Errorf("accelerator: the loss scale %s is %g; it must be > 0", sc.ScalePath(), s.Scale)
	}
	return &s, nil
}

// putLossScaler sets the loss scaler's variables in the job's Store to s.
func (st *zero1State) putLossScaler(s precision.State) error {
	return st.job.scaler().Put(s, st.putMain)
}
