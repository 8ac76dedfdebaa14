package bench

import (
	"fmt"
	"slices"
	"strings"
)

// axisNotes compares, for every framework and work measured at several values of one
// setting of the Spec (field: the precision, the sharding), each value's steps/s and CPU
// s/step with those of the reference value of the same framework, shape and other settings,
// one line each, e.g.
//
//	sharding: mlp h1024 B256 fp32 4dev goaccel: zero1 0.93x no's steps/s (4.6 / 4.9), 1.05x its CPU s/step (0.40 / 0.38)
//
// The reference is the first of refs measured (refs in order of preference). The value is
// taken out of the label to name the work.
func axisNotes(ms []*Measurement, axis string, field func(*Spec) *string, refs ...string) string {
	type key struct {
		impl string
		spec Spec
	}
	keyOf := func(m *Measurement) key {
		k := key{m.Impl, m.Spec}
		*field(&k.spec) = ""
		return k
	}
	rank := func(m *Measurement) int {
		if i := slices.Index(refs, *field(&m.Spec)); i >= 0 {
			return i
		}
		return len(refs)
	}
	ref := map[key]*Measurement{}
	for _, m := range ms {
		k := keyOf(m)
		if m.StepsPerS > 0 && rank(m) < len(refs) && (ref[k] == nil || rank(m) < rank(ref[k])) {
			ref[k] = m
		}
	}
	var b strings.Builder
	for _, m := range ms {
		r := ref[keyOf(m)]
		if r == nil || r == m || m.StepsPerS == 0 {
			continue
		}
		v, rv := *field(&m.Spec), *field(&r.Spec)
		name := strings.Join(slices.DeleteFunc(strings.Fields(m.Label), func(f string) bool { return f == v }), " ")
		fmt.Fprintf(&b, "%s: %s %s: %s %.2fx %s's steps/s (%.3f / %.3f)", axis, name, m.Impl, v,
			m.StepsPerS/r.StepsPerS, rv, m.StepsPerS, r.StepsPerS)
		if m.StepCPUS > 0 && r.StepCPUS > 0 {
			fmt.Fprintf(&b, ", %.2fx its CPU s/step (%.3f / %.3f)", m.StepCPUS/r.StepCPUS, m.StepCPUS, r.StepCPUS)
		}
		b.WriteString("\n")
	}
	return b.String()
}
