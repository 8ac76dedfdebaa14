package precision

import (
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/plugins"
	"github.com/gomlx/compute/dtypes"
)

// TestParse: Config.MixedPrecision's values, in any case, and the error for another one.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		in         string
		want       Precision
		name       string
		dt         dtypes.DType
		scalesLoss bool
	}{
		{"", FP32, "fp32", dtypes.Float32, false},
		{"no", FP32, "fp32", dtypes.Float32, false},
		{"FP32", FP32, "fp32", dtypes.Float32, false},
		{"bf16", BF16, "bf16", dtypes.BFloat16, false},
		{"BF16", BF16, "bf16", dtypes.BFloat16, false},
		{"fp16", FP16, "fp16", dtypes.Float16, true},
	} {
		p, err := Parse(c.in)
		if err != nil || p != c.want || p.String() != c.name || p.ComputeDType() != c.dt || p.ScalesLoss() != c.scalesLoss {
			t.Errorf("Parse(%q) = %v (%s, scales loss %v), %v; want %s (%s, %v)",
				c.in, p, p.ComputeDType(), p.ScalesLoss(), err, c.name, c.dt, c.scalesLoss)
		}
	}
	for _, bad := range []string{"fp8", " bf16", "yes"} {
		_, err := Parse(bad)
		if err == nil || err.Error() != `unknown precision: valid values are "no" (or "fp32"), "bf16" and "fp16"` {
			t.Errorf("Parse(%q): error %v", bad, err)
		}
	}
}

// TestCaveat: bf16 on XLA's CPU plugin on a CPU without bfloat16 dot instructions, fp16 on
// XLA's CPU plugin, and both on the pure-Go backend have a caveat on the plan line; nothing
// else has.
func TestCaveat(t *testing.T) {
	for _, c := range []struct {
		p        Precision
		backend  string
		plugin   plugins.Kind
		bf16Dots bool
		want     bool
	}{
		{BF16, "xla", plugins.CPU, false, true},
		{BF16, "xla", plugins.CPU, true, false},
		{BF16, "xla", plugins.CUDA, false, false},
		{BF16, "go", "", false, true},
		{BF16, "go", "", true, true},
		{FP32, "go", "", false, false},
		{FP32, "xla", plugins.CPU, false, false},
		{FP16, "xla", plugins.CPU, false, true},
		{FP16, "xla", plugins.CPU, true, true},
		{FP16, "xla", plugins.CUDA, false, false},
		{FP16, "go", "", false, true},
	} {
		got := c.p.Caveat(c.backend, c.plugin, c.bf16Dots)
		if (got != "") != c.want || (c.want && !strings.Contains(got, "docs/performance.md")) {
			t.Errorf("%s on %s:%s, bf16 dots %v: caveat %q", c.p, c.backend, c.plugin, c.bf16Dots, got)
		}
		// A CPU without bf16 dots: the line names what the CPU lacks and the cost to expect
		// (0.6x fp32 on a 2-core AVX2-only Zen 3, issue 43).
		if c.p == BF16 && c.backend == "xla" && c.want && !(strings.Contains(got, "avx512_bf16") && strings.Contains(got, "0.6x")) {
			t.Errorf("bf16 on a CPU without bf16 dots: caveat %q does not name the lacking instructions and the expected cost", got)
		}
	}
}
