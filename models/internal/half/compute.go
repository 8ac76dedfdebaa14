package half

import (
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/ml/nn"
)

// Compute is the compute dtype of a family's classifier, the one its SetComputeDType sets:
// Float32 (the zero value), BFloat16 or Float16.
type Compute struct{ dtype dtypes.DType }

// Set selects dt, or says why not: family names the package in the error.
func (c *Compute) Set(family string, dt dtypes.DType) error {
	switch dt {
	case dtypes.Float32, dtypes.BFloat16, dtypes.Float16:
		c.dtype = dt
		return nil
	}
	return fmt.Errorf("%s: compute dtype %s is not supported: use Float32, BFloat16 or Float16", family, dt)
}

// DType is the compute dtype, Float32 when none was set.
func (c Compute) DType() dtypes.DType {
	if c.dtype == dtypes.InvalidDType {
		return dtypes.Float32
	}
	return c.dtype
}

// Mixed reports whether the products run in half precision (BFloat16 or Float16).
func (c Compute) Mixed() bool { return c.DType().IsHalfPrecision() }

// Dense is torch.nn.Linear in the compute dtype: x [..., in] by w [out, in] plus b [out] (nil:
// none), float32 [..., out]; under mixed precision the product runs on half-precision
// operands (Linear), else GoMLX's fused dense on float32 operands.
func (c Compute) Dense(x, w, b *Node) *Node {
	if c.Mixed() {
		return Linear(x, w, b, c.DType())
	}
	return nn.Dense(ConvertDType(x, dtypes.Float32), w, b, compute.DenseLayoutOutputsInput)
}
