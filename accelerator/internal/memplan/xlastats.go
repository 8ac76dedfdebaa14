package memplan

import (
	"reflect"
	"unsafe"

	"github.com/gomlx/go-xla/compute/xla"
	"github.com/gomlx/go-xla/pjrt"
	. "github.com/gomlx/gomlx/core/graph"
)

// XLAStats returns the compiled memory statistics of g's program on one device, as PJRT's
// GetCompiledMemoryStats reports them, or nil when the backend reports none (g nil, not
// compiled, or not on XLA).
//
// go-xla v0.4.1 asks PJRT for them at every compilation and keeps them in the public fields
// of its pjrt.LoadedExecutable, but its compute/xla Executable holds that LoadedExecutable in
// an unexported field and only logs the statistics (klog V(1)). So the field is read here by
// reflection, without a fork and without calling C: read-only, checked by name and type, and
// pinned by TestXLAStatsReachable, which fails the day go-xla moves it. If the field is gone
// the plan says "variables only" instead of failing.
func XLAStats(g *Graph) *Stats {
	if g == nil {
		return nil
	}
	e, ok := g.Executable().(*xla.Executable)
	if !ok || e == nil {
		return nil
	}
	f := reflect.ValueOf(e).Elem().FieldByName("exec")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*pjrt.LoadedExecutable]() || f.IsNil() {
		return nil
	}
	le := (*pjrt.LoadedExecutable)(unsafe.Pointer(f.Pointer()))
	s := le.OnDeviceMemoryUsageStats
	return &Stats{Inputs: s.Inputs, Outputs: s.Outputs, Aliases: s.Aliases, Temporary: s.Temporary}
}
