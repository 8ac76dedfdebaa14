package bench

import (
	"fmt"
	"strings"
)

// PrecisionNotes compares, for every framework and work measured at several precisions in
// one run (`--precision fp32,bf16`), each precision's steps/s with fp32's (tf32's when there
// is no fp32) on the same shape and devices, one line each, e.g.
//
//	precision: mlp h1024 B256 1dev goaccel: bf16 0.42x fp32's steps/s (4.983 / 11.895), 1.31x its CPU s/step (0.04 / 0.03)
//
// The precisions of a work run one after the other, not in alternating rounds, so a change of
// the machine's load between them shows in the steps/s ratio; the CPU time per step (all
// threads) counts the work done rather than the waiting for a core, and moves less.
func PrecisionNotes(ms []*Measurement) string {
	type key struct {
		impl string
		spec Spec
	}
	ref := map[key]*Measurement{}
	for _, m := range ms {
		k := key{m.Impl, m.Spec}
		k.spec.Precision = ""
		if m.StepsPerS > 0 && (m.Spec.Precision == "fp32" || m.Spec.Precision == "tf32" && ref[k] == nil) {
			ref[k] = m
		}
	}
	var b strings.Builder
	for _, m := range ms {
		k := key{m.Impl, m.Spec}
		k.spec.Precision = ""
		r := ref[k]
		if r == nil || r == m || m.StepsPerS == 0 {
			continue
		}
		name := strings.Replace(m.Label, " "+m.Spec.Precision+" ", " ", 1)
		fmt.Fprintf(&b, "precision: %s %s: %s %.2fx %s's steps/s (%.3f / %.3f)", name, m.Impl, m.Spec.Precision,
			m.StepsPerS/r.StepsPerS, r.Spec.Precision, m.StepsPerS, r.StepsPerS)
		if m.StepCPUS > 0 && r.StepCPUS > 0 {
			fmt.Fprintf(&b, ", %.2fx its CPU s/step (%.3f / %.3f)", m.StepCPUS/r.StepCPUS, m.StepCPUS, r.StepCPUS)
		}
		b.WriteString("\n")
	}
	return b.String()
}
