package accelerator

import (
	"fmt"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/ml/model"
)

// ComputeDTypeSetter is implemented by models that can compute their activations in another
// dtype than their float32 variables, which is what mixed precision needs: with
// Config.MixedPrecision "bf16", Prepare calls SetComputeDType(dtypes.BFloat16).
type ComputeDTypeSetter interface {
	SetComputeDType(dtypes.DType) error
}

// ComputeDType is the dtype models should compute activations in: Float32, or BFloat16
// with MixedPrecision "bf16".
func (a *Accelerator) ComputeDType() dtypes.DType {
	if a.cfg.MixedPrecision == "bf16" {
		return dtypes.BFloat16
	}
	return dtypes.Float32
}

// applyPrecision hands the compute dtype to the model being prepared.
func (a *Accelerator) applyPrecision(m model.StoreProvider) error {
	if a.cfg.MixedPrecision != "bf16" {
		return nil
	}
	setter, ok := m.(ComputeDTypeSetter)
	if !ok {
		return fmt.Errorf("accelerator: Prepare: MixedPrecision \"bf16\" needs a model that can compute in "+
			"bfloat16 (a SetComputeDType(dtypes.DType) error method, as bert.Classifier has); %T has none: "+
			"cast inside the model yourself and use MixedPrecision \"no\"", m)
	}
	if err := setter.SetComputeDType(dtypes.BFloat16); err != nil {
		return fmt.Errorf("accelerator: Prepare: switching the model to bfloat16: %w", err)
	}
	return nil
}
