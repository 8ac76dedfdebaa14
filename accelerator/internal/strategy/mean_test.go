package strategy

import (
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/go-xla/compute/xla"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// TestInputRewrittenInPlace pins what mean relies on in GoMLX v0.28.3's tensors: a tensor
// made once and passed to Exec again and again takes the values written, between the Execs,
// through the slice MutableFlatData handed out (mean.Begin keeps it past the callback, for
// Place and the Reducer); a write through a slice handed out before an Exec does not reach the
// next Exec (so Begin asks again every update); and InvalidateOnDevice after an Exec (mean.Apply)
// keeps the values. Both ways the XLA CPU plugin runs: its shared buffers (the flat data is the
// device buffer) and without them, as a GPU (a copy on the device, which MutableFlatData must
// drop).
func TestInputRewrittenInPlace(t *testing.T) {
	t.Setenv("GOMLX_NO_AUTO_INSTALL", "1")
	plugin := testutil.CPUPlugin(t)
	for _, shared := range []bool{true, false} {
		config := plugin + ",shared_buffers=false"
		if shared {
			config = plugin + ",shared_buffers=true"
		}
		backend, err := xla.New(config)
		if err != nil {
			t.Fatalf("opening %s: %v", config, err)
		}
		if backend.HasSharedBuffers() != shared {
			t.Fatalf("%s: HasSharedBuffers %v", config, backend.HasSharedBuffers())
		}
		exec := MustNewExec(backend, func(x *Node) *Node { return MulScalar(x, 2) })
		in := tensors.FromShape(shapes.Make(dtypes.Float32, 3))
		run := func() []float32 {
			t.Helper()
			out := exec.MustExec1(in)
			defer out.MustFinalizeAll()
			return tensors.MustCopyFlatData[float32](out)
		}
		var flat []float32
		for k := range 3 {
			if err := tensors.MutableFlatData(in, func(f []float32) { flat = f }); err != nil {
				t.Fatal(err)
			}
			stale := flat
			for i := range flat {
				flat[i] = float32(10*k + i)
			}
			if got := run(); got[0] != float32(20*k) || got[2] != float32(20*k+4) {
				t.Errorf("shared buffers %v, update %d: Exec read %v, want the values written (x 2)", shared, k, got)
			}
			if k == 0 { // a write through the slice from before Exec, without asking again, is lost
				stale[0] = 1000
				if got := run(); got[0] != 0 {
					t.Errorf("shared buffers %v: Exec read %v after a write through the slice handed out before the last Exec, want the old values", shared, got)
				}
			}
			if err := in.InvalidateOnDevice(); err != nil {
				t.Fatal(err)
			}
		}
		backend.Finalize()
	}
}
