package accelerator

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/ml/model"
)

// ComputeDTypeSetter is implemented by models that compute their activations in another
// dtype than their float32 variables themselves: with Config.MixedPrecision "bf16" or
// "fp16", Prepare calls SetComputeDType(dtypes.BFloat16 or dtypes.Float16) and leaves the
// casting to the model. Models without it are cast by goaccel (see Config.MixedPrecision).
type ComputeDTypeSetter interface {
	SetComputeDType(dtypes.DType) error
}

// ComputeDType is the dtype models compute activations in: Float32, BFloat16 with
// MixedPrecision "bf16", or Float16 with "fp16".
func (a *Accelerator) ComputeDType() dtypes.DType { return a.precision.ComputeDType() }

// applyPrecision hands the compute dtype to the model being prepared when it has its own
// casting (ComputeDTypeSetter); else it returns the dtype the job's graphs cast the model to
// (InvalidDType: no casting).
func (a *Accelerator) applyPrecision(m model.StoreProvider) (dtypes.DType, error) {
	dt := a.ComputeDType()
	if dt == dtypes.Float32 {
		return dtypes.InvalidDType, nil
	}
	setter, ok := m.(ComputeDTypeSetter)
	if !ok {
		return dt, nil
	}
	if err := setter.SetComputeDType(dt); err != nil {
		return dtypes.InvalidDType, fmt.Errorf("accelerator: Prepare: switching the model to %s: %w", dt, err)
	}
	return dtypes.InvalidDType, nil
}
