package accelerator

import "github.com/goaccel/goaccel/accelerator/internal/memplan"

// planState gives the memory plan, before the first update, the optimizer state that zero1
// keeps outside the job's Store: it makes this job's zero1State and compiles its apply graph
// ahead (which creates the optimizer's variables of the slices; the first update then reuses
// both) and returns that state as the plan counts it: whole, split over the processes.
func (z *zero1Sync) PlanState() ([]memplan.Var, error) {
	st, err := z.t.job.zero1For(z.h.Vars(), z.h.LossDType(), z.grp)
	if err != nil {
		return nil, err
	}
	if st.apply == nil {
		if err := st.compile(z.t.job.opts.clipNorm > 0); err != nil {
			return nil, err
		}
	}
	out := make([]memplan.Var, 0, len(st.state))
	for _, v := range st.state {
		n := v.Shape().Size() * st.size
		out = append(out, memplan.Var{Bytes: int64(n) * int64(v.DType().Size()), Dims: []int{n}})
	}
	return out, nil
}
