package timeline

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOffCostsNothing: a nil Recorder records nothing and allocates nothing.
func TestOffCostsNothing(t *testing.T) {
	var r *Recorder
	allocs := testing.AllocsPerRun(100, func() {
		s := r.Start("step", "step")
		s.End()
		r.Add("step", "step", time.Time{}, time.Time{})
	})
	if allocs != 0 {
		t.Errorf("the off recorder allocates %v times per span", allocs)
	}
	if err := r.Close(); err != nil || r.Path() != "" {
		t.Errorf("nil Close = %v, Path = %q", err, r.Path())
	}
	if r, err := Open("", 0); r != nil || err != nil {
		t.Errorf(`Open("") = %v, %v; want nil (off)`, r, err)
	}
}

// TestWriteAndMerge: spans are written as complete events with microsecond times and their
// args; Merge joins the ranks (pid = rank) and names a rank that wrote nothing.
func TestWriteAndMerge(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tl")
	for rank := range 2 {
		r, err := Open(dir, rank)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r.Add("all-reduce", "collective", start, start.Add(1500*time.Microsecond), "bytes", 64)
		r.Start("step", "step").End()
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	f, err := Read(filepath.Join(dir, RankFile(1)))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.TraceEvents) != 3 {
		t.Fatalf("rank 1 wrote %d events, want the process name and 2 spans: %+v", len(f.TraceEvents), f.TraceEvents)
	}
	e := f.TraceEvents[1]
	if e.Name != "all-reduce" || e.Ph != "X" || e.PID != 1 || e.Dur != 1500 || e.Args["bytes"] != float64(64) {
		t.Errorf("got %+v; want a complete all-reduce event of 1500 µs, pid 1, 64 bytes", e)
	}
	out, err := Merge(dir, 0, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Read(out)
	if err != nil {
		t.Fatal(err)
	}
	pids := map[int]int{}
	for _, e := range m.TraceEvents {
		pids[e.PID]++
	}
	if pids[0] != 3 || pids[1] != 3 {
		t.Errorf("merged events per pid %v, want 3 each", pids)
	}
	if _, err := Merge(dir, 0, 0, 3); err == nil || !strings.Contains(err.Error(), "rank 2") {
		t.Errorf("Merge with rank 2 missing: %v; want an error naming rank 2", err)
	}
	if err := os.WriteFile(filepath.Join(dir, RankFile(5)), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(filepath.Join(dir, RankFile(5))); err == nil || !strings.Contains(err.Error(), RankFile(5)) {
		t.Errorf("Read of a broken file: %v; want an error naming it", err)
	}
}

// TestStampsFromTheOpening: an event's time stamp is the recorder's opening wall-clock time
// plus the monotonic time since (the stamping arithmetic: a test cannot step the wall clock).
// Stamping each event by its own wall-clock reading, as before, let a wall-clock step during
// a run (NTP on a freshly booted VM) move a span relative to the one that holds it, whose
// duration is monotonic: the likely cause of accelerator's TestTimelineOverMPI failing once
// on 2026-12-06 with an "apply" span outside its step.
func TestStampsFromTheOpening(t *testing.T) {
	r, err := Open(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	at := r.base.Add(5 * time.Millisecond) // keeps the monotonic reading
	// float64 µs of today's Unix time resolve 0.25 µs: the bound is half a µs.
	if got, want := r.stamp(at)-float64(r.base.UnixNano())/1e3, 5000.0; math.Abs(got-want) > 0.5 {
		t.Errorf("stamped %.3f µs after opening, want %.0f", got, want)
	}
	r.Add("step", "step", at, at.Add(time.Millisecond))
	if e := r.events[0]; math.Abs(e.TS-float64(r.base.UnixNano())/1e3-5000) > 0.5 || e.Dur != 1000 {
		t.Errorf("event at %.3f for %.3f µs, want 5000 µs after opening for 1000", e.TS-float64(r.base.UnixNano())/1e3, e.Dur)
	}
}
