package accelerator

import (
	"fmt"

	"github.com/goaccel/goaccel/internal/plugins"
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
func (a *Accelerator) ComputeDType() dtypes.DType {
	switch a.cfg.MixedPrecision {
	case "bf16":
		return dtypes.BFloat16
	case "fp16":
		return dtypes.Float16
	}
	return dtypes.Float32
}

// mixedPrecisions are Config.MixedPrecision's valid values, as errors list them.
const mixedPrecisions = `"no" (or "fp32"), "bf16" and "fp16"`

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

// precisionCaveat is what the plan line adds to the precision when it costs more than it
// saves on the chosen backend: bf16 on XLA's CPU plugin, measured slower than fp32 (the
// figures in docs/performance.md).
func (a *Accelerator) precisionCaveat() string {
	if a.cfg.MixedPrecision != "bf16" || a.info.Backend != "xla" || a.info.Plugin.Kind != plugins.CPU {
		return ""
	}
	return " (slower than fp32 on XLA's CPU plugin: its matrix products still run in float32; " +
		"measured in docs/performance.md)"
}
