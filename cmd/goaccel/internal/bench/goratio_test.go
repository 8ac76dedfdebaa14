package bench

import "testing"

// TestGoBackendRatioWithoutPyTorch: the pure-Go backend's ratio to goaccel on XLA does not
// depend on PyTorch; without torch (--python none) it was reported as n/a, the XLA row's
// missing PyTorch ratio copied to it.
func TestGoBackendRatioWithoutPyTorch(t *testing.T) {
	spec := Works["tiny"].CPU
	xla := &Measurement{Impl: "goaccel", Label: "x", RoundStepsPerS: []float64{4, 4}}
	gob := &Measurement{Impl: "goaccel-go", Label: "x", RoundStepsPerS: []float64{1, 0.5}}
	torch := &Measurement{Impl: "pytorch", Label: "x", Missing: "PyTorch comparison disabled (--python none)"}
	finish([]*Measurement{xla, gob, torch}, spec)
	if gob.Ratio != 0.167 || gob.RatioMin != 0.125 || gob.RatioMax != 0.25 || gob.Missing != "" {
		t.Errorf("goaccel-go: ratio %v (%v-%v), missing %q; want 0.167 (0.125-0.25)", gob.Ratio, gob.RatioMin, gob.RatioMax, gob.Missing)
	}
	if xla.Missing == "" {
		t.Error("goaccel on XLA lost its note on the missing PyTorch ratio")
	}
}
