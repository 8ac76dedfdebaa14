package bench

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
	return axisNotes(ms, "precision", func(s *Spec) *string { return &s.Precision }, "fp32", "tf32")
}
