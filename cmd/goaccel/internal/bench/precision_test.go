package bench

import (
	"strings"
	"testing"
)

// TestPrecisionNotes: each precision of a work gets its ratio to fp32 of the same framework,
// shape and devices; a work measured at one precision, or whose fp32 failed, gets none.
func TestPrecisionNotes(t *testing.T) {
	mlp, tiny := Works["mlp"].CPU, Works["tiny"].CPU
	at := func(s Spec, p string, impl string, sps float64) *Measurement {
		s.Precision, s.Devices = p, 1
		return &Measurement{Impl: impl, Label: s.Label(), Spec: s, StepsPerS: sps, StepCPUS: 1 / sps}
	}
	got := PrecisionNotes([]*Measurement{
		at(mlp, "fp32", "goaccel", 10), at(mlp, "fp32", "pytorch", 8),
		at(mlp, "bf16", "goaccel", 4), at(mlp, "bf16", "pytorch", 0),
		at(tiny, "bf16", "goaccel", 3), // no fp32 of tiny
	})
	want := "precision: mlp h1024 B256 1dev goaccel: bf16 0.40x fp32's steps/s (4.000 / 10.000), 2.50x its CPU s/step (0.250 / 0.100)\n"
	if got != want {
		t.Errorf("PrecisionNotes =\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(got, "tiny") || strings.Contains(got, "pytorch") {
		t.Errorf("notes for a work without fp32 or a failed measurement:\n%s", got)
	}
}
