package accelerator

import (
	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"math"
	"slices"
)

// Faulty process groups: decorators of a rank's group that break the gradients' reduction on
// purpose, for the tests that show Verify and fp16's loss scaling catch them. A gradient
// reduction is the group's AllreduceSum (the exact all-reduce of the update's weighted
// gradient sums, then {w x loss, w}) or its ReduceScatterSum (zero1); nothing else calls them.

// skipVariable leaves variable i's gradients out of the all-reduce: each process keeps its
// own sum.
type skipVariable struct {
	collective.Group
	i int
}

func (f skipVariable) AllreduceSum(bufs [][]float32) error {
	if f.i >= len(bufs) {
		return f.Group.AllreduceSum(bufs)
	}
	return f.Group.AllreduceSum(append(slices.Clone(bufs[:f.i]), bufs[f.i+1:]...))
}

// unweighted makes its rank send its mean gradient instead of its sum weighted by its real
// examples: it divides the update's gradient sums by this process's weight of the update's
// batches (those before it, with accumulation, all-reduce their {w x loss, w} alone).
type unweighted struct {
	collective.Group
	local float64 // this process's weight of the update's batches so far
}

func (f *unweighted) AllreduceFloat64(buf []float64, op collective.Op) error {
	if len(buf) == 2 && op == collective.Sum { // a batch before the update: its {w x loss, w}
		f.local += buf[1]
	}
	return f.Group.AllreduceFloat64(buf, op)
}

func (f *unweighted) AllreduceSum(bufs [][]float32) error {
	local := f.local + float64(bufs[len(bufs)-1][1])
	f.local = 0
	if local > 0 {
		for _, g := range bufs[:len(bufs)-1] {
			for k := range g {
				g[k] /= float32(local)
			}
		}
	}
	return f.Group.AllreduceSum(bufs)
}

// infAtUpdate makes this rank's gradients of its update number update (counted from 1) +Inf
// before they are reduced. Under zero1 the Inf goes into the part of the reduce-scatter that
// rank 0 reduces (the first element of its slice of the first variable): from another rank,
// only rank 0's slice is then not finite.
type infAtUpdate struct {
	collective.Group
	update, seen int
}

func (f *infAtUpdate) AllreduceSum(bufs [][]float32) error {
	if f.seen++; f.seen == f.update && len(bufs) > 1 && len(bufs[0]) > 0 {
		bufs[0][0] = float32(math.Inf(1))
	}
	return f.Group.AllreduceSum(bufs)
}

func (f *infAtUpdate) ReduceScatterSum(send, recv []float32) error {
	if f.seen++; f.seen == f.update && len(send) > 0 {
		send[0] = float32(math.Inf(1))
	}
	return f.Group.ReduceScatterSum(send, recv)
}

// lossScaleFault says which rank (rank = r+1; 0: none) gets infAtUpdate at which update: the
// runs of lossscale_test.go read it to keep the variables around that update.
var lossScaleFault struct{ rank, update int }

// withLossScaleFault wraps rank's group in infAtUpdate when lossScaleFault names it (a wrap
// for runProcessesConfig).
func withLossScaleFault(rank int, g collective.Group) collective.Group {
	if lossScaleFault.rank != rank+1 {
		return g
	}
	return &infAtUpdate{Group: g, update: lossScaleFault.update}
}
