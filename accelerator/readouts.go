package accelerator

import (
	"errors"
	"fmt"
	"github.com/goaccel/goaccel/accelerator/internal/strategy"
	"math"

	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// GradNorm returns the global L2 norm of the gradients of the last optimizer update, before
// clipping (what torch.nn.utils.clip_grad_norm_ returns). It is computed only when the job
// clips (WithClipGradNorm); otherwise, or before the first update, it is an error.
func (j *Job) GradNorm() (float64, error) {
	if j.opts.clipNorm <= 0 {
		return math.NaN(), errors.New("accelerator: GradNorm: the gradient norm is computed only with WithClipGradNorm")
	}
	return j.readScalar(strategy.NormPath, "GradNorm")
}

// LearningRate returns the learning rate of the last optimizer update (the schedule's value
// when there is one); before the first update, the optimizer's configured rate if it has
// created its variable yet, else an error.
func (j *Job) LearningRate() (float64, error) {
	return j.readScalar("/"+optimizer.Scope+"/"+optimizer.ParamLearningRate, "LearningRate")
}

// readScalar reads a scalar variable of the job's Store on the host.
func (j *Job) readScalar(path, what string) (float64, error) {
	v := j.store.GetVariable(path)
	if v == nil || !v.HasValue() {
		return math.NaN(), fmt.Errorf("accelerator: %s: no value yet (variable %s is set by the first optimizer update)", what, path)
	}
	t, err := v.Value()
	if err != nil {
		return math.NaN(), fmt.Errorf("accelerator: %s: reading %s: %w", what, path, err)
	}
	x, err := scalarFloat(t)
	if err != nil {
		return math.NaN(), fmt.Errorf("accelerator: %s: reading %s: %w", what, path, err)
	}
	return x, nil
}

// GlobalStep returns the number of optimizer updates applied so far (GoMLX's global_step
// variable): 0 before the first update.
func (j *Job) GlobalStep() (int64, error) {
	v := j.store.GetVariable("/" + optimizer.GlobalStepVariableName)
	if v == nil || !v.HasValue() {
		return 0, nil
	}
	t, err := v.Value()
	if err != nil {
		return 0, fmt.Errorf("accelerator: GlobalStep: %w", err)
	}
	f, err := scalarFloat(t)
	if err != nil {
		return 0, fmt.Errorf("accelerator: GlobalStep: %w", err)
	}
	return int64(f), nil
}
