package memplan

import (
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	_ "github.com/gomlx/compute/gobackend"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/go-xla/compute/xla"
	. "github.com/gomlx/gomlx/core/graph"
)

// compiledSquare compiles x·x + x·x for a [64, 64] float32 x on backend.
func compiledSquare(t *testing.T, backend compute.Backend) *Graph {
	t.Helper()
	g := NewGraph(backend, "square")
	x := Parameter(g, "x", shapes.Make(dtypes.Float32, 64, 64))
	y := MatMul(x, x)
	if err := g.Compile(Add(y, y)); err != nil {
		t.Fatalf("compiling on %s: %v", backend.Name(), err)
	}
	return g
}

// TestXLAStatsReachable pins go-xla's private field that XLAStats reads: on the XLA CPU
// plugin a compiled program's statistics are found, with its 16 KiB argument and 16 KiB
// output; the pure-Go backend and a nil graph have none.
func TestXLAStatsReachable(t *testing.T) {
	t.Setenv("GOMLX_NO_AUTO_INSTALL", "1")
	backend, err := xla.New(testutil.CPUPlugin(t))
	if err != nil {
		t.Fatalf("opening the XLA CPU plugin: %v", err)
	}
	defer backend.Finalize()
	s := XLAStats(compiledSquare(t, backend))
	if s == nil {
		t.Fatal("no statistics from a program compiled on XLA: go-xla v0.4.1's xla.Executable.exec " +
			"(*pjrt.LoadedExecutable) is no longer reachable; see XLAStats")
	}
	t.Logf("statistics: %+v", *s)
	const bytes = 64 * 64 * 4
	if s.Inputs != bytes || s.Outputs != bytes || s.Temporary < 0 || s.Aliases != 0 {
		t.Errorf("statistics %+v: want inputs = outputs = %d bytes, no alias", *s, bytes)
	}

	goBackend, err := compute.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatalf("opening the pure-Go backend: %v", err)
	}
	defer goBackend.Finalize()
	if s := XLAStats(compiledSquare(t, goBackend)); s != nil {
		t.Errorf("statistics on the pure-Go backend: %+v, want none", *s)
	}
	if s := XLAStats(nil); s != nil {
		t.Errorf("statistics of a nil graph: %+v, want none", *s)
	}
}
