package safetensors

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
)

// dtypeNames maps the GoMLX dtypes this package supports to their safetensors names.
var dtypeNames = map[dtypes.DType]string{
	dtypes.Bool:     "BOOL",
	dtypes.Uint8:    "U8",
	dtypes.Int8:     "I8",
	dtypes.Int16:    "I16",
	dtypes.Uint16:   "U16",
	dtypes.Int32:    "I32",
	dtypes.Uint32:   "U32",
	dtypes.Int64:    "I64",
	dtypes.Uint64:   "U64",
	dtypes.Float16:  "F16",
	dtypes.BFloat16: "BF16",
	dtypes.Float32:  "F32",
	dtypes.Float64:  "F64",
}

// namesToDTypes is the inverse of dtypeNames.
var namesToDTypes = func() map[string]dtypes.DType {
	m := make(map[string]dtypes.DType, len(dtypeNames))
	for dt, name := range dtypeNames {
		m[name] = dt
	}
	return m
}()

// DTypeName returns the safetensors name of a GoMLX dtype ("F32" for Float32, ...), or an error
// if the format has no name for it or this package does not support it.
func DTypeName(dtype dtypes.DType) (string, error) {
	name, ok := dtypeNames[dtype]
	if !ok {
		return "", fmt.Errorf("safetensors: dtype %s is not supported", dtype)
	}
	return name, nil
}

// ParseDType returns the GoMLX dtype for a safetensors dtype name ("F32" -> Float32, ...).
func ParseDType(name string) (dtypes.DType, error) {
	dtype, ok := namesToDTypes[name]
	if !ok {
		return dtypes.InvalidDType, fmt.Errorf("safetensors: dtype %q is not supported", name)
	}
	return dtype, nil
}
