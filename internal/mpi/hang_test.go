package mpi

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestCallerIsFirstFrameOutside: a collective's site is the frame just outside goaccel's own
// (a _test.go file counts as a caller; here no goaccel frame is kept, begin's own being
// skipped, so the site is this line and names no function).
func TestCallerIsFirstFrameOutside(t *testing.T) {
	_, file, line, _ := runtime.Caller(0)
	e := begin("barrier", 0, false) // the line below runtime.Caller
	s := resolve(e.pcs[:e.npc])
	want := shortFile(file, line+1)
	if s.where != want || s.public != "" {
		t.Fatalf("site %+v, want %s", s, want)
	}
	const m = "github.com/goaccel/goaccel/"
	if module != m {
		t.Fatalf("module %q, want %q", module, m)
	}
	frame := func(fn, file string) runtime.Frame { return runtime.Frame{Function: fn, File: file} }
	for _, c := range []struct {
		name  string
		stack []runtime.Frame // innermost first
		want  []bool
	}{
		{"a barrier through a facade and its internal packages", []runtime.Frame{
			frame(m+"internal/mpi.(*Comm).Barrier", "/x/internal/mpi/collectives.go"),
			frame(m+"accelerator/internal/collective.(*mpiGroup).Barrier", "/x/accelerator/internal/collective/mpi.go"),
			frame(m+"accelerator.(*Accelerator).WaitForEveryone", "/x/accelerator/collectives.go"),
			frame(m+"trainer.(*Loop).Run", "/x/trainer/loop.go"),
			frame("main.main", "/x/main.go"),
		}, []bool{true, true, true, false, false}},
		{"a facade's test calls it (a _test.go file is a caller)", []runtime.Frame{
			frame(m+"internal/mpi.(*Comm).Barrier", "/x/internal/mpi/collectives.go"),
			frame(m+"accelerator.(*Accelerator).WaitForEveryone", "/x/accelerator/collectives.go"),
			frame(m+"accelerator.skipEvalWorker", "/x/accelerator/hang_test.go"),
		}, []bool{true, true, false}},
		{"an Evaluate whose data source calls back into it", []runtime.Frame{
			frame(m+"internal/mpi.(*Comm).AllGather", "/x/internal/mpi/collectives.go"),
			frame(m+"accelerator.(*Job).gather", "/x/accelerator/gather.go"),
			frame(m+"accelerator.(*Job).Evaluate-range1", "/x/accelerator/evaluate.go"),
			frame(m+"data.(*Loader[...]).All.func1", "/x/data/loader.go"),
			frame(m+"accelerator.(*Job).Evaluate", "/x/accelerator/evaluate.go"),
			frame(m+"trainer.(*Loop).evaluate", "/x/trainer/loop.go"),
		}, []bool{true, true, true, false, true, false}},
		{"a program of another module calling the internal package's user directly", []runtime.Frame{
			frame(m+"internal/mpi.(*Comm).Barrier", "/x/internal/mpi/collectives.go"),
			frame(m+"internal/launch.selfTest", "/x/internal/launch/selftest.go"),
			frame("main.main", "/x/cmd/goaccel/main.go"),
		}, []bool{true, true, false}},
	} {
		got := machinery(c.stack)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: machinery %v, want %v", c.name, got, c.want)
		}
	}
}

// TestHangLine: the first line of a report names the collective in progress, or says there
// is none.
func TestHangLine(t *testing.T) {
	e := begin("allreduce-fused", 1024, false)
	c := &Comm{rank: 1}
	c.push(e, 453)
	now := e.start.Add(5 * time.Second)
	if l := hangLine(1, c.snapshot(), now); !strings.HasPrefix(l, "rank 1 waits in allreduce-fused #453 (at mpi/hang_test.go:") ||
		!strings.HasSuffix(l, "), 1024 bytes, for 5s") {
		t.Errorf("waiting: %q", l)
	}
	c.finish(e, nil)
	if l := hangLine(1, c.snapshot(), now); !strings.HasPrefix(l, "rank 1 is not in a collective; its last was allreduce-fused #453") {
		t.Errorf("done: %q", l)
	}
	if l := hangLine(1, nil, now); l != "rank 1 is not in a collective (none so far)" {
		t.Errorf("none: %q", l)
	}
	for i := range 2 * ringSize {
		c.push(begin("barrier", 0, false), uint32(454+i))
	}
	if r := c.snapshot(); len(r) != ringSize || r[0].seq != 454+ringSize || r[ringSize-1].seq != 453+2*ringSize {
		t.Errorf("the ring holds %d collectives, #%d to #%d", len(r), r[0].seq, r[len(r)-1].seq)
	}
}

// BenchmarkBegin is what recording a collective costs on the step path: one runtime.Callers
// and the ring entry (the caller is resolved only for a report or GOACCEL_DEBUG), called from
// 1 frame deep and from 16 (about a gradient all-reduce's depth under a training loop: the
// walk keeps at most callerDepth frames).
func BenchmarkBegin(b *testing.B) {
	for _, depth := range []int{1, 16} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			c := &Comm{}
			var deep func(n int, i uint32)
			deep = func(n int, i uint32) {
				if n > 1 {
					deep(n-1, i)
					return
				}
				c.push(begin("allreduce-fused", 1<<20, false), i)
			}
			for i := 0; b.Loop(); i++ {
				deep(depth, uint32(i))
			}
		})
	}
}
