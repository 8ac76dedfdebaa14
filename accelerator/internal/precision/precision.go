// Package precision is what a training step of goaccel's accelerator computes in, and the
// hooks that precision gives the steps: the compute dtype, autocast (casting, in a graph, a
// model that knows nothing about mixed precision to that dtype) and fp16's dynamic loss
// scaling (Scaler, with its graph half and its host half in one place). The strategies call
// these hooks and never ask which precision is in use by its name.
package precision

import (
	"errors"
	"strings"

	"github.com/goaccel/goaccel/internal/plugins"
	"github.com/gomlx/compute/dtypes"
	"golang.org/x/sys/cpu"
)

// Precision is what a model computes its activations in (Config.MixedPrecision). The zero
// value is FP32.
type Precision int

const (
	// FP32 computes in float32 (Config.MixedPrecision "no", "fp32" or empty).
	FP32 Precision = iota
	// BF16 computes the model in bfloat16 over float32 master weights.
	BF16
	// FP16 computes the model in float16 over float32 master weights, with dynamic loss
	// scaling (Scaler).
	FP16
)

// valid lists Config.MixedPrecision's valid values, as errors list them.
const valid = `"no" (or "fp32"), "bf16" and "fp16"`

// Parse reads a value of Config.MixedPrecision, in any case: "" (the default), "no" and
// "fp32" are FP32, "bf16" BF16 and "fp16" FP16. Its error says what is valid; the caller
// names where the value came from.
func Parse(s string) (Precision, error) {
	switch strings.ToLower(s) {
	case "", "no", "fp32":
		return FP32, nil
	case "bf16":
		return BF16, nil
	case "fp16":
		return FP16, nil
	}
	return FP32, errors.New("unknown precision: valid values are " + valid)
}

// String is the precision's name as Info.Precision and the plan line give it: "fp32", "bf16"
// or "fp16".
func (p Precision) String() string {
	switch p {
	case BF16:
		return "bf16"
	case FP16:
		return "fp16"
	}
	return "fp32"
}

// ComputeDType is the dtype the model computes its activations in: Float32, BFloat16 or
// Float16.
func (p Precision) ComputeDType() dtypes.DType {
	switch p {
	case BF16:
		return dtypes.BFloat16
	case FP16:
		return dtypes.Float16
	}
	return dtypes.Float32
}

// ScalesLoss reports whether the precision scales the loss before the backward pass (FP16:
// float16 has 5 exponent bits, and small gradients underflow to 0 unless the loss is scaled
// up first).
func (p Precision) ScalesLoss() bool { return p == FP16 }

// Scaler is the precision's loss scaler, its variables in the scope named scope of the
// Store's root, its scale growing after growthInterval finite updates in a row (GrowthInterval
// by default); nil when the precision does not scale the loss, which every Scaler method
// that a step calls takes as "no scaling".
func (p Precision) Scaler(scope string, growthInterval int64) *Scaler {
	if !p.ScalesLoss() {
		return nil
	}
	return &Scaler{scope: scope, interval: growthInterval}
}

// Caveat is what the plan line adds to the precision's name when the precision costs more
// than it saves on the chosen backend (backend "go" or "xla", plugin the kind of XLA plugin,
// bf16Dots whether the CPU has bfloat16 dot-product instructions, CPUHasBF16Dots): bf16 on
// XLA's CPU plugin on a CPU without them; fp16 on XLA's CPU plugin on any CPU (it has no
// float16 matrix products); bf16 and fp16 on the pure-Go backend. Each was measured slower
// than fp32 there (the figures in docs/performance.md). It is "" otherwise.
func (p Precision) Caveat(backend string, plugin plugins.Kind, bf16Dots bool) string {
	if p != BF16 && p != FP16 {
		return ""
	}
	switch {
	case backend == "go":
		return " (slower than fp32 on the pure-Go backend, whose 16-bit work is slower than its " +
			"float32 work; `goaccel bench --backend go --precision fp32,bf16,fp16` measures it; " +
			"figures in docs/performance.md)"
	case backend != "xla" || plugin != plugins.CPU:
		return ""
	case p == BF16 && !bf16Dots:
		return " (slower than fp32 here, about 0.6x its speed: this CPU lacks bfloat16 dot instructions " +
			"(avx512_bf16, amx_bf16), so XLA's CPU plugin adds conversions to every matrix product and " +
			"saves no arithmetic; --mixed_precision no trains faster; `goaccel bench --precision fp32,bf16` " +
			"measures it; figures in docs/performance.md)"
	case p == FP16:
		return " (slower than fp32 on a CPU: XLA's CPU plugin converts float16 operands to float32 " +
			"for every matrix product, so fp16 adds conversions and loss scaling and saves no " +
			"arithmetic; bf16 is the 16-bit precision for CPUs; figures in docs/performance.md)"
	}
	return ""
}

// CPUHasBF16Dots reports whether this machine's CPU has bfloat16 dot-product instructions
// (x86's AVX512_BF16 or AMX_BF16), which XLA's CPU plugin runs bf16 matrix products on.
func CPUHasBF16Dots() bool { return cpu.X86.HasAVX512BF16 || cpu.X86.HasAMXBF16 }
